//! Byte ranges: a file is split into ranges aligned to line ends so one big file is
//! parsed in parallel. A row belongs to the range its first byte falls in.

use crate::error::Result;

use super::source::CsvSource;

impl CsvSource {
    /// The bytes read for range `r`, the index in them of its first record, and the file
    /// offset of byte 0 (the records run from that index to the end).
    pub(super) fn range_bytes(&self, r: usize) -> Result<(Vec<u8>, usize, u64)> {
        let (fi, s, e) = self.ranges[r];
        let file = &self.files[fi];
        // Read one byte before the start to see whether a record begins at `s`.
        let from = if s > file.data_start { s - 1 } else { s };
        let mut buf = file.file.read_range(from..e)?;
        // Extend to the end of the last record that starts before `e` (one more request
        // per 64 KiB on an object store).
        let mut pos = from + buf.len() as u64;
        while buf.last() != Some(&b'\n') {
            let chunk = file.file.read_range(pos..pos + (64 << 10))?;
            if chunk.is_empty() {
                break;
            }
            pos += chunk.len() as u64;
            match memchr::memchr(b'\n', &chunk) {
                Some(p) => buf.extend_from_slice(&chunk[..=p]),
                None => buf.extend_from_slice(&chunk),
            }
        }
        let start = if from < s {
            // Not at the data start: skip the partial record (it belongs to the range before).
            match memchr::memchr(b'\n', &buf) {
                Some(p) => p + 1,
                None => buf.len(),
            }
        } else {
            0
        };
        // No record starts in [s, e): the range is empty.
        if start >= (e - from) as usize {
            return Ok((Vec::new(), 0, e));
        }
        Ok((buf, start, from))
    }
}

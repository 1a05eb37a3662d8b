//! Byte ranges: a file is split into ranges aligned to line ends so one big file is
//! parsed in parallel. A row belongs to the range its first byte falls in.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{Error, Result};

use super::source::CsvSource;

/// Reads up to `max` bytes from the start of a file.
pub(crate) fn read_prefix(path: &Path, max: u64) -> Result<Vec<u8>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = Vec::new();
    f.take(max)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

impl CsvSource {
    /// The bytes read for range `r`, the index in them of its first record, and the file
    /// offset of byte 0 (the records run from that index to the end).
    pub(super) fn range_bytes(&self, r: usize) -> Result<(Vec<u8>, usize, u64)> {
        let (fi, s, e) = self.ranges[r];
        let file = &self.files[fi];
        let mut f = File::open(&file.path).map_err(|err| Error::io(&file.path, err))?;
        file.identity.check(&file.path, &f)?;
        // Read one byte before the start to see whether a record begins at `s`.
        let from = if s > file.data_start { s - 1 } else { s };
        f.seek(SeekFrom::Start(from))
            .map_err(|err| Error::io(&file.path, err))?;
        let mut buf = Vec::with_capacity((e - from) as usize + 4096);
        (&mut f)
            .take(e - from)
            .read_to_end(&mut buf)
            .map_err(|err| Error::io(&file.path, err))?;
        // Extend to the end of the last record that starts before `e`.
        if buf.last() != Some(&b'\n') {
            let mut chunk = [0u8; 64 << 10];
            loop {
                let n = f
                    .read(&mut chunk)
                    .map_err(|err| Error::io(&file.path, err))?;
                if n == 0 {
                    break;
                }
                if let Some(p) = memchr::memchr(b'\n', &chunk[..n]) {
                    buf.extend_from_slice(&chunk[..=p]);
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
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

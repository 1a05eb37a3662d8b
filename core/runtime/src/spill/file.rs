//! One spilled value on disk: an LZ4 frame in a segment file (the `segment` module),
//! released when its handle drops.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use super::dir::{process_dir, ProcessDir};
use super::segment::Segment;
use tessera_core::error::{Error, Result};

/// Write and read buffers: large enough that the codec, not the syscalls, sets the pace,
/// small enough that a small value does not pay for a large allocation.
const BUFFER: usize = 256 << 10;

/// A value spilled to disk. Dropping it releases its bytes; the segment file holding them
/// is removed with its last value (and the process's spill directory with its last
/// segment), whether the plan finished, failed or panicked.
#[derive(Debug)]
pub struct SpillFile {
    segment: Arc<Segment>,
    offset: u64,
    raw_bytes: u64,
    disk_bytes: u64,
}

impl std::fmt::Debug for ProcessDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ProcessDir").field(&self.path()).finish()
    }
}

/// Counts the bytes passing through.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The LZ4 block size for a value of about `bytes`: 1 MiB blocks for large values (fewer
/// block headers, and read back at memory speed), smaller for small values, whose encoder
/// and decoder would otherwise allocate and fault in buffers larger than the value.
fn block_size(bytes: u64) -> lz4_flex::frame::BlockSize {
    use lz4_flex::frame::BlockSize;
    match bytes {
        b if b >= 1 << 20 => BlockSize::Max1MB,
        b if b >= 256 << 10 => BlockSize::Max256KB,
        _ => BlockSize::Max64KB,
    }
}

/// Writes one LZ4 frame of what `write` writes to `file`; returns (raw, on-disk) bytes.
fn append(
    file: &mut File,
    path: &Path,
    size_hint: u64,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<(u64, u64)> {
    let on_disk = Counting {
        inner: BufWriter::with_capacity(BUFFER, file),
        bytes: 0,
    };
    let mut raw = Counting {
        // A content checksum, so that a corrupted file is an error on read, never wrong
        // data.
        inner: lz4_flex::frame::FrameEncoder::with_frame_info(
            lz4_flex::frame::FrameInfo::new()
                .block_size(block_size(size_hint))
                .content_checksum(true),
            on_disk,
        ),
        bytes: 0,
    };
    write(&mut raw)?;
    let mut on_disk = raw
        .inner
        .finish()
        .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    on_disk.flush().map_err(|e| Error::io(path, e))?;
    Ok((raw.bytes, on_disk.bytes))
}

impl SpillFile {
    /// Spills what `write` writes under `base` (the `spill-dir` setting): one LZ4 frame
    /// appended to a segment file of this process's spill directory. `size_hint` is about
    /// how many bytes `write` writes (it sizes the codec's buffers). A failed write leaves
    /// nothing behind.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when the directory or file cannot be made or the disk
    /// refuses the bytes (full, read-only); the error `write` returns.
    pub fn write(
        base: &Path,
        size_hint: u64,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<SpillFile> {
        let dir = process_dir(base)?;
        let segment = dir.take_segment()?;
        let offset = segment.len();
        let written = {
            let mut file = segment.writer();
            let r = append(&mut file, segment.path(), size_hint, write);
            match &r {
                Ok((_, disk)) => segment.appended(*disk),
                Err(_) => segment.truncate(&mut file),
            }
            r
        };
        dir.give_back(&segment);
        let (raw_bytes, disk_bytes) = written?;
        super::count_write(raw_bytes, disk_bytes);
        Ok(SpillFile {
            segment,
            offset,
            raw_bytes,
            disk_bytes,
        })
    }

    /// Reads the value back: `read` gets the decompressed stream.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it is gone or corrupt (the LZ4 frame carries a
    /// checksum); the error `read` returns.
    pub fn read<T>(&self, read: impl FnOnce(&mut dyn Read) -> Result<T>) -> Result<T> {
        let file = self.segment.open_at(self.offset)?;
        let frame = file.take(self.disk_bytes);
        let cap = BUFFER.min(usize::try_from(self.disk_bytes).unwrap_or(BUFFER).max(64));
        let mut dec = lz4_flex::frame::FrameDecoder::new(BufReader::with_capacity(cap, frame));
        let out = read(&mut dec)?;
        super::count_read(self.raw_bytes);
        Ok(out)
    }

    /// Reads the whole value back into memory.
    ///
    /// # Errors
    /// As [`SpillFile::read`]; also when the file holds fewer or more bytes than were
    /// written.
    pub fn read_to_vec(&self) -> Result<Vec<u8>> {
        let want = usize::try_from(self.raw_bytes).map_err(|_| {
            Error::io(
                self.path(),
                std::io::Error::other("spilled value larger than the address space"),
            )
        })?;
        self.read(|r| {
            let mut out = Vec::with_capacity(want);
            r.read_to_end(&mut out)
                .map_err(|e| Error::io(self.path(), e))?;
            if out.len() != want {
                return Err(Error::io(
                    self.path(),
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("spill file holds {} bytes, {want} were written", out.len()),
                    ),
                ));
            }
            Ok(out)
        })
    }

    /// The path of the segment file holding the value.
    pub fn path(&self) -> &Path {
        self.segment.path()
    }

    /// Where in [`SpillFile::path`] the value starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes of the value (before compression).
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Bytes on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "tessera-spill-file-test-{name}-{}",
            std::process::id()
        ))
    }

    #[test]
    fn round_trips_and_removes_on_drop() {
        let base = base("round");
        let data: Vec<u8> = (0..3_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let f = SpillFile::write(&base, 0, |w| {
            w.write_all(&data).map_err(|e| Error::io("test", e))
        })
        .unwrap();
        assert_eq!(f.raw_bytes(), data.len() as u64);
        assert!(f.disk_bytes() < f.raw_bytes(), "repetitive bytes compress");
        assert_eq!(f.read_to_vec().unwrap(), data);
        let (path, dir) = (
            f.path().to_path_buf(),
            f.path().parent().unwrap().to_path_buf(),
        );
        assert!(path.exists());
        drop(f);
        assert!(!path.exists(), "the file is removed on drop");
        assert!(!dir.exists(), "and the directory with its last file");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let base = base("failed");
        let err = SpillFile::write(&base, 0, |w| {
            w.write_all(&[7; 1000]).map_err(|e| Error::io("test", e))?;
            Err(Error::Internal("the serializer failed".into()))
        })
        .unwrap_err();
        assert!(err.to_string().contains("the serializer failed"), "{err}");
        let left: Vec<_> = std::fs::read_dir(&base).unwrap().collect();
        assert!(left.is_empty(), "no spill directory or file left: {left:?}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_wrong_data() {
        let base = base("corrupt");
        let data = vec![42u8; 100_000];
        let f = SpillFile::write(&base, 0, |w| {
            w.write_all(&data).map_err(|e| Error::io("test", e))
        })
        .unwrap();
        let mut bytes = std::fs::read(f.path()).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(f.path(), &bytes).unwrap();
        let err = f.read_to_vec().unwrap_err().to_string();
        assert!(err.contains(&f.path().display().to_string()), "{err}");
        drop(f);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn values_share_a_segment_that_goes_with_the_last_of_them() {
        let base = base("segment");
        let put = |bytes: &'static [u8]| {
            SpillFile::write(&base, 16, move |w| {
                w.write_all(bytes).map_err(|e| Error::io("test", e))
            })
        };
        let a = put(b"the first value").unwrap();
        let failed = SpillFile::write(&base, 0, |w| {
            w.write_all(&[1; 5000]).map_err(|e| Error::io("test", e))?;
            Err(Error::Internal("fails halfway".into()))
        });
        assert!(failed.is_err());
        let b = put(b"the second value").unwrap();
        assert_eq!(a.path(), b.path(), "one writer at a time: one segment");
        assert_eq!(
            b.offset(),
            a.disk_bytes(),
            "the failed append was cut off again"
        );
        assert_eq!(a.read_to_vec().unwrap(), b"the first value");
        let path = b.path().to_path_buf();
        drop(a);
        assert!(path.exists(), "b still lives in the segment");
        assert_eq!(b.read_to_vec().unwrap(), b"the second value");
        drop(b);
        assert!(!path.exists(), "the segment went with its last value");
        std::fs::remove_dir_all(&base).unwrap();
    }
}

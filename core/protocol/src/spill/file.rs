//! One spilled value on disk: an LZ4 frame stream, removed when its handle drops.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::dir::{process_dir, ProcessDir};
use crate::error::{Error, Result};

/// Write and read buffers: large enough that the codec, not the syscalls, sets the pace.
const BUFFER: usize = 1 << 20;

/// A value spilled to disk. Dropping it removes the file (and the process's spill
/// directory with its last file), whether the plan finished, failed or panicked.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    raw_bytes: u64,
    disk_bytes: u64,
    _dir: Arc<ProcessDir>,
}

impl std::fmt::Debug for ProcessDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ProcessDir").field(&self.path()).finish()
    }
}

/// Counts the bytes passing to the compressor.
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

impl SpillFile {
    /// Spills what `write` writes into a new file under `base` (the `spill-dir` setting),
    /// named after `kind` (`chunk`, `bucket`, ...). A failed write removes the file.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when the directory or file cannot be made or the disk
    /// refuses the bytes (full, read-only); the error `write` returns.
    pub fn write(
        base: &Path,
        kind: &str,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<SpillFile> {
        let dir = process_dir(base)?;
        let path = dir.new_file_path(kind);
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        // From here on the guard removes the file if anything fails.
        let mut spilled = SpillFile {
            path,
            raw_bytes: 0,
            disk_bytes: 0,
            _dir: dir,
        };
        let mut enc = Counting {
            inner: lz4_flex::frame::FrameEncoder::with_frame_info(
                // 1 MiB blocks (fewer block headers than the 64 KiB default); a content
                // checksum, so a corrupted file is an error on read, never wrong data.
                lz4_flex::frame::FrameInfo::new()
                    .block_size(lz4_flex::frame::BlockSize::Max1MB)
                    .content_checksum(true),
                BufWriter::with_capacity(BUFFER, file),
            ),
            bytes: 0,
        };
        write(&mut enc)?;
        let raw = enc.bytes;
        let buffered = enc
            .inner
            .finish()
            .map_err(|e| Error::io(&spilled.path, std::io::Error::other(e)))?;
        let file = buffered
            .into_inner()
            .map_err(|e| Error::io(&spilled.path, e.into_error()))?;
        let disk = file
            .metadata()
            .map_err(|e| Error::io(&spilled.path, e))?
            .len();
        spilled.raw_bytes = raw;
        spilled.disk_bytes = disk;
        super::count_write(raw, disk);
        Ok(spilled)
    }

    /// Reads the value back: `read` gets the decompressed stream.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it is gone or corrupt (the LZ4 frames carry
    /// checksums); the error `read` returns.
    pub fn read<T>(&self, read: impl FnOnce(&mut dyn Read) -> Result<T>) -> Result<T> {
        let file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let mut dec = lz4_flex::frame::FrameDecoder::new(BufReader::with_capacity(BUFFER, file));
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
                &self.path,
                std::io::Error::other("spilled value larger than the address space"),
            )
        })?;
        self.read(|r| {
            let mut out = Vec::with_capacity(want);
            r.read_to_end(&mut out)
                .map_err(|e| Error::io(&self.path, e))?;
            if out.len() != want {
                return Err(Error::io(
                    &self.path,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("spill file holds {} bytes, {want} were written", out.len()),
                    ),
                ));
            }
            Ok(out)
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
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

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> PathBuf {
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
        let f = SpillFile::write(&base, "chunk", |w| {
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
        let err = SpillFile::write(&base, "bucket", |w| {
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
        let f = SpillFile::write(&base, "chunk", |w| {
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
}

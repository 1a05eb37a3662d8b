//! Segment files: spilled values appended one after another, the file removed with its
//! last value.
//!
//! One file per value made every spill a file creation and every drop an unlink, and with
//! thousands of small values (a shuffle's bucket pieces) the directory's inode lock, not
//! the disk, set the pace. A writer instead takes a segment no other writer holds, appends
//! its value as one LZ4 frame, and gives the segment back for the next value until it
//! reaches [`SEGMENT_BYTES`]; values are `(segment, offset, length)`, and a segment's file
//! goes when the last value in it is dropped. Disk space is therefore freed a segment at a
//! time: values spilled together (one stage's buckets) are also dropped together.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tessera_core::error::{Error, Result};

/// A segment takes no more values once it holds this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 256 << 20;

/// An append-only file of spilled values.
pub(crate) struct Segment {
    path: PathBuf,
    /// The write handle, positioned at the end.
    file: Mutex<File>,
    len: AtomicU64,
    /// What keeps the segment's directory alive (the process directory, `super::dir`),
    /// held without knowing its type: a directory outlives its last segment.
    _dir: Arc<dyn Send + Sync>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Segment").field(&self.path).finish()
    }
}

impl Segment {
    /// A new, empty segment at `path`, keeping `dir` (the directory that holds it) alive.
    pub(crate) fn create(path: PathBuf, dir: Arc<dyn Send + Sync>) -> Result<Arc<Segment>> {
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(Arc::new(Segment {
            path,
            file: Mutex::new(file),
            len: AtomicU64::new(0),
            _dir: dir,
        }))
    }

    /// The segment's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// The write handle (the writer holding the segment is its only user).
    pub(crate) fn writer(&self) -> MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a value of `bytes` appended at the end.
    pub(crate) fn appended(&self, bytes: u64) {
        self.len.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Cuts a failed append off again, so the next value starts at [`Segment::len`].
    pub(crate) fn truncate(&self, file: &mut File) {
        let len = self.len();
        let _ = file.set_len(len);
        let _ = file.seek(SeekFrom::Start(len));
    }

    /// A read handle positioned at `offset`.
    pub(crate) fn open_at(&self, offset: u64) -> Result<File> {
        let mut f = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(f)
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

//! The identity of a file a plan reads, recorded when the plan is made and checked on the
//! open handle before every read.
//!
//! `read_csv` splits a file into byte ranges and `read_parquet` into row groups when the
//! frame is built; each task reopens the file later. A file replaced or rewritten in
//! between — an atomic rename by another writer, an append — would otherwise yield rows of
//! two versions (a row count no writer ever wrote) or decode a new file with the old
//! footer. tessera's choice: a compute that finds a file other than the one it planned
//! fails with [`Error::FileChanged`], and building the frame again reads the new version.
//! The check is on the handle that is then read, so a file swapped between the check and
//! the read cannot slip through.

use std::fs::{File, Metadata};
use std::path::Path;
use std::time::SystemTime;

use crate::error::{Error, Result};

/// Size, modification time and (on Unix) device and inode of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileIdentity {
    len: u64,
    modified: Option<SystemTime>,
    node: Option<(u64, u64)>,
}

impl FileIdentity {
    /// The identity of the file behind `meta`.
    pub fn of(meta: &Metadata) -> FileIdentity {
        #[cfg(unix)]
        let node = {
            use std::os::unix::fs::MetadataExt;
            Some((meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let node = None;
        FileIdentity {
            len: meta.len(),
            modified: meta.modified().ok(),
            node,
        }
    }

    /// The identity of the file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be stat'ed.
    pub fn read(path: &Path) -> Result<FileIdentity> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(FileIdentity::of(&meta))
    }

    /// The file's modification time when the identity was taken (where the platform
    /// gives one).
    pub fn modified(&self) -> Option<SystemTime> {
        self.modified
    }

    /// The file's size in bytes when the identity was taken.
    pub fn size(&self) -> u64 {
        self.len
    }

    /// Checks that the open `file` (at `path`) is the file this identity was taken of.
    ///
    /// # Errors
    /// [`Error::FileChanged`] saying what differs (another file, another size, a newer
    /// modification time), or [`Error::Io`].
    pub fn check(&self, path: &Path, file: &File) -> Result<()> {
        let now = FileIdentity::of(&file.metadata().map_err(|e| Error::io(path, e))?);
        if now == *self {
            return Ok(());
        }
        let what = if now.node != self.node {
            "it was replaced by another file".to_string()
        } else if now.len != self.len {
            format!("its size went from {} to {} bytes", self.len, now.len)
        } else {
            "it was modified".to_string()
        };
        Err(Error::FileChanged {
            path: path.display().to_string(),
            detail: what,
        })
    }
}

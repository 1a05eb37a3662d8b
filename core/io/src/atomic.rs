//! Writing files atomically: into a temporary file beside the target, renamed over it
//! only when everything was written and synced. A failure leaves no file under the final
//! name (and removes the temporary one), so readers never see half a file; what a killed
//! writer leaves, the next write into the directory removes ([`crate::leftovers`]).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `path` through `write`, atomically. Errors name `path`, not the temporary file.
///
/// # Errors
/// Those of `write`, or of creating, syncing and renaming the file.
pub fn write_atomic<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> Result<()>,
{
    create_atomic(path, |tmp| write_synced(tmp, path, write))
}

/// Creates the file at `path` through `build`, atomically: `build` gets a temporary path
/// beside `path` and must leave a complete file there (it may write it in any order,
/// from several threads); the file is then synced and renamed over `path`. On an error
/// of `build` the temporary file is removed and `path` is untouched.
///
/// # Errors
/// Those of `build`, or of syncing and renaming (naming `path`).
pub fn create_atomic<F>(path: &Path, build: F) -> Result<()>
where
    F: FnOnce(&Path) -> Result<()>,
{
    // What killed writers left in this directory goes first (see [`crate::leftovers`]).
    if let Some(dir) = path.parent() {
        crate::leftovers::sweep(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        });
    }
    let tmp = temp_path(path);
    let result = build(&tmp)
        .and_then(|()| {
            File::open(&tmp)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io(path, e))
        })
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Creates `file`, writes it through `write` and syncs it to disk; I/O errors name
/// `named` (the path the user asked for). A full disk is an [`Error::Io`] whose source
/// is the operating system's error (`No space left on device`).
///
/// # Errors
/// Those of `write`, or of creating and syncing the file.
pub fn write_synced<F>(file: &Path, named: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> Result<()>,
{
    let f = File::create(file).map_err(|e| Error::io(named, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    write(&mut w)?;
    let f = w
        .into_inner()
        .map_err(|e| Error::io(named, e.into_error()))?;
    f.sync_all().map_err(|e| Error::io(named, e))
}

/// `dir/.name.tmp-<host>-<pid>-<n>`: hidden, in the same directory (so the rename is
/// atomic), and tagged so that a later writer can remove it if this one is killed
/// ([`crate::leftovers`]).
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    path.with_file_name(crate::leftovers::name(&name, crate::leftovers::Kind::Tmp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn failure_leaves_nothing_and_success_replaces() {
        let dir = std::env::temp_dir().join(format!("tessera-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.txt");
        std::fs::write(&target, b"old").unwrap();
        let err = write_atomic(&target, |w| {
            w.write_all(b"half").unwrap();
            Err(Error::invalid("test", "boom"))
        });
        assert!(err.is_err());
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"old",
            "old file untouched"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "temporary removed"
        );
        write_atomic(&target, |w| {
            w.write_all(b"new").map_err(|e| Error::io("out.txt", e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

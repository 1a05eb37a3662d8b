//! The per-process spill directory and the clean-up of directories left by killed
//! processes.
//!
//! A process's directory lives while any of its segments does: the segments hold it
//! through an `Arc`, and the last one dropped removes it. Liveness of another process's
//! directory is its `lock` file: the owner holds an exclusive lock on it until the
//! directory goes, and the operating system releases that lock when the owner dies, however
//! it dies. A directory whose lock can be taken is therefore orphaned and is removed. Lock
//! files survive pid reuse, which a pid check would not.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use super::segment::{Segment, SEGMENT_BYTES};
use tessera_core::error::{Error, Result};

/// Name prefix of spill directories (`tessera-spill-<pid>-<n>`).
pub const SPILL_PREFIX: &str = "tessera-spill-";

/// A directory of this name without a lock file is being created by its owner, or was
/// left half-made by a killed one: only the latter, once it is this old, is removed.
const HALF_MADE_AGE: Duration = Duration::from_secs(60);

/// A process's spill directory; removed, with anything left in it, on drop.
pub(crate) struct ProcessDir {
    path: PathBuf,
    /// The locked `lock` file (closed before the directory is removed).
    lock: Mutex<Option<File>>,
    next: AtomicU64,
    /// Segments open for appending, not being written now (weak: a segment goes when its
    /// last value does).
    free: Mutex<Vec<Weak<Segment>>>,
}

impl ProcessDir {
    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A segment to append one value to, for this writer alone until
    /// [`ProcessDir::give_back`]: a live one with room, else a new file.
    pub(crate) fn take_segment(self: &Arc<Self>) -> Result<Arc<Segment>> {
        let reused = {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            std::iter::from_fn(|| free.pop()).find_map(|w| w.upgrade())
        };
        if let Some(segment) = reused {
            return Ok(segment);
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Segment::create(self.path.join(format!("segment-{n}.lz4")), self.clone())
    }

    /// Ends a writer's turn on `segment`; it takes more values while it is under
    /// [`SEGMENT_BYTES`].
    pub(crate) fn give_back(&self, segment: &Arc<Segment>) {
        if segment.len() < SEGMENT_BYTES {
            self.free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::downgrade(segment));
        }
    }
}

impl Drop for ProcessDir {
    fn drop(&mut self) {
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()).take());
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Live process directories by spill base directory.
static LIVE: Mutex<Option<HashMap<PathBuf, Weak<ProcessDir>>>> = Mutex::new(None);

/// The process directory under `base`, created (after cleaning up orphans) if no spill
/// file holds one now.
pub(crate) fn process_dir(base: &Path) -> Result<Arc<ProcessDir>> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let map = live.get_or_insert_with(HashMap::new);
    if let Some(dir) = map.get(base).and_then(Weak::upgrade) {
        return Ok(dir);
    }
    fs::create_dir_all(base).map_err(|e| Error::io(base, e))?;
    clean_stale(base)?;
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let path = loop {
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let p = base.join(format!("{SPILL_PREFIX}{}-{n}", std::process::id()));
        match fs::create_dir(&p) {
            Ok(()) => break p,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&p, e)),
        }
    };
    let lock_path = path.join("lock");
    let lock = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    lock.try_lock().map_err(|e| {
        Error::io(
            &lock_path,
            std::io::Error::other(format!("cannot lock a new spill directory: {e}")),
        )
    })?;
    let dir = Arc::new(ProcessDir {
        path,
        lock: Mutex::new(Some(lock)),
        next: AtomicU64::new(0),
        free: Mutex::new(Vec::new()),
    });
    map.retain(|_, w| w.strong_count() > 0);
    map.insert(base.to_path_buf(), Arc::downgrade(&dir));
    Ok(dir)
}

/// Removes the spill directories under `base` that no living process owns (their `lock`
/// can be taken, or they have none and are older than a minute); returns how many.
/// Called before a process makes its own directory; safe to call any time.
///
/// # Errors
/// [`Error::Io`] when `base` cannot be listed. Directories that cannot be removed are
/// skipped (another user's, say).
pub fn clean_stale(base: &Path) -> Result<usize> {
    let entries = match fs::read_dir(base) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(base, e)),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(SPILL_PREFIX) {
            continue;
        }
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let orphan = match File::options().write(true).open(path.join("lock")) {
            Ok(f) => f.try_lock().is_ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > HALF_MADE_AGE),
            Err(_) => false,
        };
        if orphan && fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "tessera-spill-dir-test-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn a_dir_lives_while_held_and_goes_with_its_last_holder() {
        let base = scratch("lifetime");
        let a = process_dir(&base).unwrap();
        let b = process_dir(&base).unwrap();
        assert_eq!(a.path(), b.path(), "one directory per process and base");
        assert!(a.path().join("lock").exists());
        let path = a.path().to_path_buf();
        drop(a);
        assert!(path.exists(), "still held by b");
        drop(b);
        assert!(!path.exists(), "removed with its last holder");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn orphans_are_removed_and_live_dirs_are_not() {
        let base = scratch("orphans");
        fs::create_dir_all(&base).unwrap();
        // An orphan: a spill directory whose lock file nobody holds.
        let orphan = base.join(format!("{SPILL_PREFIX}999999-0"));
        fs::create_dir(&orphan).unwrap();
        File::create(orphan.join("lock")).unwrap();
        fs::write(orphan.join("chunk-0.lz4"), b"left by a killed process").unwrap();
        // A fresh directory without a lock yet: its owner may be creating it.
        let young = base.join(format!("{SPILL_PREFIX}999999-1"));
        fs::create_dir(&young).unwrap();
        // Not ours at all.
        let other = base.join("someone-else");
        fs::create_dir(&other).unwrap();
        let live = process_dir(&base).unwrap();
        assert!(!orphan.exists(), "the orphan was cleaned up");
        assert!(young.exists(), "a young lockless directory is left alone");
        assert!(other.exists(), "only tessera's directories are touched");
        assert_eq!(clean_stale(&base).unwrap(), 0, "a live directory is locked");
        assert!(live.path().exists());
        drop(live);
        fs::remove_dir_all(&base).unwrap();
    }
}

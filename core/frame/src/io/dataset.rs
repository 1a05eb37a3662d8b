//! Writing a multi-file dataset (`out/part-*.csv`) so that it commits as a whole.
//!
//! Each part is first written into a staging directory beside the target directory, on
//! the same filesystem, and synced. Then:
//!
//! * **A directory of its own** (the target directory does not exist, or holds nothing but
//!   files matching the pattern): the staging directory *is* the new dataset. The old
//!   directory is renamed aside, the staging directory renamed into its place, and the old
//!   one removed. A reader sees the whole old set or the whole new set; a writer killed
//!   at the one instant between the two renames leaves no directory under the target name
//!   (a reader gets "no such file", never a mix), with both sets intact in hidden
//!   siblings, and the next write into the parent directory puts the old set back. Stale parts of an earlier, larger write cannot survive: the old directory
//!   goes as a whole.
//! * **A directory shared with other files**: the parts of an earlier write are moved into
//!   a hidden set-aside folder inside the directory, the new parts renamed into place one
//!   by one, and only then the old ones removed, so stale parts are never read as part of
//!   the new set. A failed rename takes the new parts out and puts the old ones back; a
//!   writer killed midway leaves the folder, and the next write into the directory puts
//!   the old set back ([`tessera_io::leftovers`]). Readers during the renames can see a
//!   partial set: give a dataset a directory of its own for an atomic commit.
//!
//! * **A directory that is a mount point** (a volume mounted at `out/`): a rename cannot
//!   cross into or replace it, so the staging directory is a hidden entry inside it and the
//!   parts are renamed into place as for a shared directory.
//!
//! Why a directory swap rather than a manifest that readers honour: every reader — pandas,
//! pyarrow, DuckDB, a shell glob — understands a directory of parts; a manifest only
//! helps readers that know it. Staging and set-aside directories are hidden (`.name…`)
//! siblings, never matched by a pattern inside the target directory; what a killed writer
//! left is cleaned up by the next write into the same directory, which puts a set-aside
//! old copy back when it is the only one (a kill between the two renames).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use tessera_io::glob::wildcard_match;
use tessera_io::leftovers::{self, Kind};

/// Writes the parts of `pattern` (a file name with one `*`, replaced by the part number)
/// through `write_part(path, i)`, which writes part `i` to `path` (a staging path) and
/// syncs it; returns the final paths.
pub(crate) fn write_dataset(
    pattern: &str,
    parts: usize,
    write_part: impl Fn(&Path, usize) -> Result<()> + Send + Sync,
) -> Result<Vec<PathBuf>> {
    let staging = Staging::create(pattern, parts)?;
    let written =
        tessera_runtime::pool::parallel_map(parts, |i| write_part(&staging.part_path(i), i));
    match written {
        Ok(_) => staging.commit(),
        Err(e) => {
            staging.abandon();
            Err(e)
        }
    }
}

/// A dataset being written: its staging directory and where its parts go. Made by one
/// writer ([`Staging::create`]); under `scheduler = "mpi"` the other ranks open the same
/// directory by name ([`Staging::join`]), each writes its own parts into it, and the
/// writer that created it commits once every part is there.
pub(crate) struct Staging {
    /// The target directory.
    dir: PathBuf,
    /// Its parent and its name, for siblings of it.
    parent: PathBuf,
    base: String,
    /// The file name pattern (one `*`).
    name: String,
    /// The staging directory (a hidden sibling of `dir`).
    staging: PathBuf,
    /// The parts' final paths.
    finals: Vec<PathBuf>,
}

impl Staging {
    /// Plans the dataset `pattern` of `parts` parts.
    fn plan(pattern: &str, parts: usize, staging: Option<PathBuf>) -> Result<Staging> {
        let target = Path::new(pattern);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::invalid("write", format!("{pattern}: no file name")))?;
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let finals = (0..parts)
            .map(|i| dir.join(name.replace('*', &i.to_string())))
            .collect();
        let (parent, base) = split_dir(&dir)?;
        // Staged where a rename reaches the target: beside it, or inside it when it is a
        // mount point (another filesystem than its parent's, which no rename crosses).
        let home = if is_mount_point(&dir, &parent) {
            dir.clone()
        } else {
            parent.clone()
        };
        let staging = staging.unwrap_or_else(|| home.join(leftovers::name(&base, Kind::Staging)));
        Ok(Staging {
            dir,
            parent,
            base,
            name,
            staging,
            finals,
        })
    }

    /// Creates the staging directory of the dataset `pattern` of `parts` parts (removing
    /// what killed writers left beside the target).
    ///
    /// # Errors
    /// A pattern without a file name; the directory cannot be created.
    pub(crate) fn create(pattern: &str, parts: usize) -> Result<Staging> {
        let s = Staging::plan(pattern, parts, None)?;
        leftovers::sweep(&s.parent);
        leftovers::sweep(&s.dir);
        std::fs::create_dir_all(&s.staging).map_err(|e| Error::io(&s.dir, e))?;
        Ok(s)
    }

    /// The staging directory another writer created (its [`Staging::staging_dir`]),
    /// seen from here.
    ///
    /// # Errors
    /// A pattern without a file name; the directory is not there — this writer does not
    /// share a filesystem with the one that created it (the message says so, naming
    /// `who`, e.g. "rank 2").
    pub(crate) fn join(
        pattern: &str,
        parts: usize,
        staging: PathBuf,
        who: &str,
    ) -> Result<Staging> {
        let s = Staging::plan(pattern, parts, Some(staging))?;
        if !s.staging.is_dir() {
            return Err(Error::invalid(
                "write",
                format!(
                    "{who} does not see the staging directory {} that rank 0 created for '{pattern}': under scheduler = \"mpi\" a dataset must be written to a filesystem every rank shares (NFS, Lustre, GPFS, a node's disk when all ranks are on that node), not a node-local path such as /tmp on a multi-node job",
                    s.staging.display()
                ),
            ));
        }
        Ok(s)
    }

    /// The staging directory.
    pub(crate) fn staging_dir(&self) -> &Path {
        &self.staging
    }

    /// Where part `i` is written before the commit.
    pub(crate) fn part_path(&self, i: usize) -> PathBuf {
        self.staging.join(self.name.replace('*', &i.to_string()))
    }

    /// The parts' final paths.
    pub(crate) fn finals(&self) -> &[PathBuf] {
        &self.finals
    }

    /// Makes the written parts the dataset (see the module docs) and returns their
    /// paths. On an error the staging directory is removed and the old dataset stays.
    ///
    /// # Errors
    /// A part is missing from the staging directory; syncing or renaming fails.
    pub(crate) fn commit(self) -> Result<Vec<PathBuf>> {
        // Every part must be there: a set with a hole is never committed (a writer that
        // reported success without writing, or a file removed under the staging).
        let missing = (0..self.finals.len()).find(|&i| !self.part_path(i).is_file());
        if let Some(i) = missing {
            let e = Error::Internal(format!(
                "part {i} of {} was not in the staging directory {} at the commit; nothing was committed",
                self.finals.len(),
                self.staging.display()
            ));
            self.abandon();
            return Err(e);
        }
        let result = sync_dir(&self.staging, &self.dir).and_then(|()| {
            if owns_directory(&self.dir, &self.name) && !self.staging.starts_with(&self.dir) {
                swap_in(&self.staging, &self.dir, &self.parent, &self.base)
            } else {
                merge_in(
                    &self.staging,
                    &self.dir,
                    &self.base,
                    &self.name,
                    &self.finals,
                )
            }
        });
        match result {
            Ok(()) => Ok(self.finals),
            Err(e) => {
                self.abandon();
                Err(e)
            }
        }
    }

    /// Removes the staging directory and what was written into it.
    pub(crate) fn abandon(self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// `dir` as (its parent, its name), for siblings of it.
fn split_dir(dir: &Path) -> Result<(PathBuf, String)> {
    let abs = if dir.exists() {
        std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(dir, e))?
            .join(dir)
    };
    let base = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_string());
    let parent = abs.parent().map_or_else(|| abs.clone(), Path::to_path_buf);
    Ok((parent, base))
}

/// True when `dir` is an existing directory on another filesystem than `parent`.
fn is_mount_point(dir: &Path, parent: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(dir), std::fs::metadata(parent)) {
            (Ok(d), Ok(p)) => d.is_dir() && d.dev() != p.dev(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, parent);
        false
    }
}

/// True when `dir` is absent or holds only files matching `pattern`.
fn owns_directory(dir: &Path, pattern: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return !dir.exists();
    };
    entries.flatten().all(|e| {
        e.file_type().is_ok_and(|t| t.is_file())
            && wildcard_match(
                pattern.as_bytes(),
                e.file_name().to_string_lossy().as_bytes(),
            )
    })
}

/// The staging directory becomes `dir`; the old `dir` is set aside, then removed.
fn swap_in(staging: &Path, dir: &Path, parent: &Path, base: &str) -> Result<()> {
    if dir.exists() {
        let old = parent.join(leftovers::name(base, Kind::Old));
        std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
        if let Err(e) = std::fs::rename(staging, dir) {
            // Put the old set back: nothing changed for readers.
            let _ = std::fs::rename(&old, dir);
            return Err(Error::io(dir, e));
        }
        let _ = std::fs::remove_dir_all(&old);
    } else {
        if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(p).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::rename(staging, dir).map_err(|e| Error::io(dir, e))?;
    }
    sync_dir(parent, dir)
}

/// The staged parts are renamed into a shared directory. The parts already there that
/// match the pattern (replaced or stale) are first moved into a hidden set-aside folder
/// inside it ([`leftovers::set_aside_parts`]); if a rename fails, the new parts are taken
/// out and the old ones put back, and a writer killed midway leaves the folder for the
/// next write's sweep to put back. Only when every new part is in are the old ones removed.
fn merge_in(
    staging: &Path,
    dir: &Path,
    base: &str,
    pattern: &str,
    finals: &[PathBuf],
) -> Result<()> {
    let mut old = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if wildcard_match(pattern.as_bytes(), name.as_bytes())
                && e.file_type().is_ok_and(|t| t.is_file())
            {
                old.push(name);
            }
        }
    }
    let incoming: Vec<String> = finals
        .iter()
        .map(|f| {
            f.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let aside =
        leftovers::set_aside_parts(dir, base, &old, &incoming).map_err(|e| Error::io(dir, e))?;
    for (f, name) in finals.iter().zip(&incoming) {
        if let Err(e) = std::fs::rename(staging.join(name), f) {
            // Put the old set back: readers see the parts they saw before the commit.
            let _ = leftovers::restore_parts(&aside, dir);
            return Err(Error::io(f, e));
        }
    }
    sync_dir(dir, dir)?;
    leftovers::discard_parts(&aside);
    let _ = std::fs::remove_dir(staging);
    Ok(())
}

/// Makes the directory's entries durable (a no-op where directories cannot be opened).
fn sync_dir(dir: &Path, named: &Path) -> Result<()> {
    match std::fs::File::open(dir) {
        Ok(f) => match f.sync_all() {
            Ok(()) => Ok(()),
            // Some filesystems refuse fsync on a directory; the data files were synced.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
            Err(e) => Err(Error::io(named, e)),
        },
        Err(_) => Ok(()),
    }
}

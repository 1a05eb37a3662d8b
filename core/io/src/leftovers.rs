//! What a killed writer leaves, and who may remove it — or put it back.
//!
//! Every temporary name tessera writes beside a target — a file's `.name.tmp-…`, a
//! dataset's or a Zarr array's `.name.tessera-staging-…` and the `.name.tessera-old-…` a
//! swap sets aside, all made by [`name`] — ends in a tag: `<host>-<pid>-<n>`, the host and
//! process that made it. A writer killed mid-write (SIGKILL, the out-of-memory killer, a lost node) cannot
//! clean up after itself; the next tessera writer into the same directory, of any target,
//! does ([`sweep`]), but only for what it can prove abandoned: made on this host by a
//! process that no longer runs. Names from another host (a filesystem shared by the ranks
//! of a job) are never judged, and neither is anything where processes cannot be looked
//! up (no `/proc`): leaving garbage is recoverable, removing a live writer's staging is not.
//!
//! The sweep never removes the last complete copy of anything. A set-aside entry
//! (`.name.tessera-old-…`) is the complete old version of `name`: a writer killed between
//! a swap's two renames leaves it with no `name` beside it, and the sweep renames it back
//! into place (the write that was killed never committed, so the old version is the
//! current one). Only when `name` exists again is a set-aside copy garbage. A set-aside
//! folder of parts ([`MERGE_MANIFEST`] inside it: the old parts of a dataset that shares
//! its directory, moved aside while the new parts were renamed in) is merged back: the new
//! parts its manifest lists are removed and the old ones moved back.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// What a temporary entry is, as its name says before its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file being written (`.name.tmp-…`), renamed over `name` when complete.
    Tmp,
    /// A folder a dataset or an array is staged in (`.name.tessera-staging-…`).
    Staging,
    /// What a swap set aside (`.name.tessera-old-…`), removed once the new one is in.
    Old,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Tmp, Kind::Staging, Kind::Old];

    /// The marker between the target's name and the tag.
    fn marker(self) -> &'static str {
        match self {
            Kind::Tmp => ".tmp-",
            Kind::Staging => ".tessera-staging-",
            Kind::Old => ".tessera-old-",
        }
    }
}

/// The hidden temporary name of `kind` beside an entry called `name`:
/// `.<name><marker><host>-<pid>-<n>`, which [`sweep`] can judge.
pub fn name(name: &str, kind: Kind) -> String {
    format!(".{name}{}{}", kind.marker(), tag())
}

/// This host's name, as the kernel reports it (`None` where it cannot be read).
fn host() -> Option<&'static str> {
    static HOST: OnceLock<Option<String>> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().replace(['/', '\0'], "_"))
            .filter(|h| !h.is_empty())
    })
    .as_deref()
}

/// `<host>-<pid>-<n>`: unique among this process's temporary names, and naming the host
/// and process that made it (`localhost` where the host name cannot be read).
fn tag() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        host().unwrap_or("localhost"),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A temporary name split at its marker: the target's name, the kind, and the tag.
/// The last marker counts (the target's own name may contain one; a tag never does).
fn parse(name: &str) -> Option<(&str, Kind, &str)> {
    let hidden = name.strip_prefix('.')?;
    let (at, kind) = Kind::ALL
        .iter()
        .filter_map(|&k| hidden.rfind(k.marker()).map(|i| (i, k)))
        .max_by_key(|&(i, _)| i)?;
    Some((&hidden[..at], kind, &hidden[at + kind.marker().len()..]))
}

/// Whether `name` is one of tessera's temporary names ([`name`]), of any writer.
pub fn is_temporary(name: &str) -> bool {
    parse(name).is_some()
}

/// Whether the temporary entry `name` was left by a writer that is gone: it carries a
/// marker and a tag of this host whose process no longer runs. A tag without a host
/// (`<pid>-<n>`, as earlier versions wrote) is taken as this host's.
pub fn abandoned(name: &str) -> bool {
    let Some((_, _, tail)) = parse(name) else {
        return false;
    };
    let mut parts = tail.rsplitn(3, '-');
    let (Some(n), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(_), Ok(pid)) = (n.parse::<u64>(), pid.parse::<u32>()) else {
        return false;
    };
    let this_host = match (parts.next(), host()) {
        (None, _) => true,
        (Some(h), Some(ours)) => h == ours,
        (Some(_), None) => false,
    };
    this_host && pid != std::process::id() && gone(pid)
}

/// Whether process `pid` of this host has ended; false where that cannot be known.
fn gone(pid: u32) -> bool {
    let proc = Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

/// The file inside a set-aside folder of parts that lists, one name a line, the new parts
/// a dataset commit was renaming into the folder's directory (see [`set_aside_parts`]).
pub const MERGE_MANIFEST: &str = ".tessera-merge";

/// What [`sweep`] did in a directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Abandoned temporary entries removed (garbage: never a last copy).
    pub removed: usize,
    /// Set-aside copies put back where a killed writer had taken them from.
    pub recovered: usize,
}

/// Cleans up after gone writers in `dir` ([`abandoned`] entries; see the module docs):
/// set-aside copies whose target is missing are put back, set-aside folders of parts are
/// merged back, and the rest (staging folders, temporary files, set-aside copies whose
/// target exists again) are removed. Best effort: what cannot be listed, renamed or
/// removed stays, and a set-aside copy that cannot be put back is never removed.
pub fn sweep(dir: &Path) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return swept;
    };
    let mut found: Vec<(PathBuf, String, Kind)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (target, kind, _) = parse(&name)?;
            let target = target.to_string();
            abandoned(&name).then(|| (e.path(), target, kind))
        })
        .collect();
    // Set-aside copies first: putting one back decides what the stagings beside it are.
    found.sort_by_key(|(_, _, kind)| *kind != Kind::Old);
    for (path, target, kind) in found {
        if kind == Kind::Old {
            if path.join(MERGE_MANIFEST).is_file() {
                if restore_parts(&path, dir).is_ok() {
                    swept.recovered += 1;
                }
                continue;
            }
            let home = dir.join(&target);
            if std::fs::symlink_metadata(&home).is_err() {
                // The only complete copy: a swap was killed between its renames.
                if std::fs::rename(&path, &home).is_ok() {
                    swept.recovered += 1;
                }
                continue;
            }
        }
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        swept.removed += usize::from(gone.is_ok());
    }
    swept
}

/// Moves the files `names` of `dir` into a new set-aside folder of parts inside `dir`
/// (named after `base`), then lists `incoming`, the parts about to be renamed in, in its
/// manifest: until [`discard_parts`] removes it, [`restore_parts`] (or a later [`sweep`],
/// if this writer is killed) puts the old parts back and takes the incoming ones out.
/// The manifest is empty while old parts are being moved (none of `incoming` is in `dir`
/// yet, so none may be removed) and replaced whole by a rename once they all are.
///
/// # Errors
/// Creating the folder or its manifest, or a rename; the parts already moved are moved
/// back first.
pub fn set_aside_parts(
    dir: &Path,
    base: &str,
    names: &[String],
    incoming: &[String],
) -> std::io::Result<PathBuf> {
    // Made under a temporary name and renamed: a set-aside folder is never seen without
    // its manifest (a sweep would take a bare one for a swapped-out directory).
    let making = dir.join(name(base, Kind::Tmp));
    let aside = dir.join(name(base, Kind::Old));
    let manifest = aside.join(MERGE_MANIFEST);
    let made = std::fs::create_dir(&making)
        .and_then(|()| std::fs::File::create(making.join(MERGE_MANIFEST))?.sync_all())
        .and_then(|()| std::fs::rename(&making, &aside));
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&making);
        return Err(e);
    }
    let moved = names
        .iter()
        .try_for_each(|n| std::fs::rename(dir.join(n), aside.join(n)))
        .and_then(|()| {
            let next = aside.join(format!("{MERGE_MANIFEST}.next"));
            std::fs::write(&next, incoming.join("\n"))?;
            std::fs::File::open(&next)?.sync_all()?;
            std::fs::rename(&next, &manifest)
        });
    if let Err(e) = moved {
        let _ = restore_parts(&aside, dir);
        return Err(e);
    }
    Ok(aside)
}

/// Undoes a commit of parts into `dir` whose old parts are in the set-aside folder
/// `aside`: the incoming parts its manifest lists are removed from `dir`, the old parts
/// moved back, and the folder removed.
///
/// # Errors
/// Reading the manifest, or a rename or removal; the folder stays (with what was not yet
/// moved back), so a later sweep finishes the job.
pub fn restore_parts(aside: &Path, dir: &Path) -> std::io::Result<()> {
    let manifest = std::fs::read_to_string(aside.join(MERGE_MANIFEST))?;
    for incoming in manifest.lines().filter(|l| !l.is_empty()) {
        // Only files were renamed in: anything else of that name (a folder the rename
        // could not replace) was there before and stays.
        let p = dir.join(incoming);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&p)?;
        }
    }
    for e in std::fs::read_dir(aside)?.flatten() {
        let n = e.file_name();
        if n.to_string_lossy().starts_with(MERGE_MANIFEST) {
            continue;
        }
        std::fs::rename(e.path(), dir.join(&n))?;
    }
    std::fs::remove_dir_all(aside)
}

/// Ends a commit of parts that succeeded: the old parts set aside in `aside` are garbage.
pub fn discard_parts(aside: &Path) {
    let _ = std::fs::remove_dir_all(aside);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid of a process that has ended (a child that was run and waited for).
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_a_gone_writer_of_this_host_is_swept() {
        let dir = std::env::temp_dir().join(format!("tessera-leftovers-{}", tag()));
        std::fs::create_dir_all(&dir).unwrap();
        let host = host().unwrap();
        let dead = dead_pid();
        let me = std::process::id();
        let names = [
            (format!(".out.csv.tmp-{host}-{dead}-0"), true),
            (format!(".data.tessera-staging-{host}-{dead}-3"), true),
            (format!(".z.tessera-old-{dead}-7"), true), // an earlier version's name
            (format!(".out.csv.tmp-{host}-{me}-1"), false), // this process: live
            (format!(".out.csv.tmp-another-host-{dead}-0"), false),
            (format!(".out.csv.tmp-{host}-1-0"), false), // init runs
            ("visible.tmp-x-1-2".to_string(), false),    // not hidden: not ours
            (".notes-1-2".to_string(), false),
        ];
        for (name, _) in &names {
            if name.contains("staging") {
                std::fs::create_dir_all(dir.join(name).join("part")).unwrap();
            } else {
                std::fs::write(dir.join(name), b"x").unwrap();
            }
        }
        // The set-aside `z` has no `z` beside it: it is put back, not removed.
        assert_eq!(
            sweep(&dir),
            Swept {
                removed: 2,
                recovered: 1
            }
        );
        assert_eq!(std::fs::read(dir.join("z")).unwrap(), b"x");
        for (name, swept) in &names {
            assert_eq!(!dir.join(name).exists(), *swept, "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tags_are_unique_and_end_in_pid_and_counter() {
        let (a, b) = (tag(), tag());
        assert_ne!(a, b);
        let mut parts = a.rsplitn(3, '-');
        parts.next().unwrap().parse::<u64>().unwrap();
        assert_eq!(
            parts.next().unwrap().parse::<u32>().unwrap(),
            std::process::id()
        );
    }

    /// A scratch directory of its own.
    fn scratch(what: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tessera-leftovers-{what}-{}", tag()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_swap_killed_between_its_renames_is_put_back_by_an_unrelated_write() {
        // What a writer killed between `rename(data, old)` and `rename(staging, data)`
        // leaves: no `data`, the complete old copy set aside, the complete new one staged.
        let dir = scratch("swap");
        let (host, dead) = (host().unwrap(), dead_pid());
        let old = dir.join(format!(".data.tessera-old-{host}-{dead}-0"));
        let staged = dir.join(format!(".data.tessera-staging-{host}-{dead}-1"));
        std::fs::create_dir_all(old.join("c")).unwrap();
        std::fs::write(old.join("c/0"), b"old chunk").unwrap();
        std::fs::write(old.join("zarr.json"), b"{}").unwrap();
        std::fs::create_dir_all(&staged).unwrap();
        std::fs::write(staged.join("zarr.json"), b"{\"new\": 1}").unwrap();
        // Any atomic write into the directory sweeps it first.
        crate::atomic::write_atomic(&dir.join("notes.txt"), |w| {
            std::io::Write::write_all(w, b"unrelated")
                .map_err(|e| crate::error::Error::io("notes.txt", e))
        })
        .unwrap();
        assert_eq!(
            std::fs::read(dir.join("data/c/0")).unwrap(),
            b"old chunk",
            "the old copy is back in place"
        );
        assert!(!old.exists() && !staged.exists());
        // Once `data` is in place, a set-aside copy beside it is garbage.
        let stale = dir.join(format!(".data.tessera-old-{host}-{dead}-2"));
        std::fs::create_dir_all(&stale).unwrap();
        assert_eq!(
            sweep(&dir),
            Swept {
                removed: 1,
                recovered: 0
            }
        );
        assert!(dir.join("data/zarr.json").is_file() && !stale.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The names and contents of the files directly in `dir`, sorted.
    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (n, std::fs::read(e.path()).unwrap())
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn parts_set_aside_come_back_whole_at_every_step() {
        let dir = scratch("parts");
        for (n, body) in [
            ("part-0.csv", "old 0"),
            ("part-1.csv", "old 1"),
            ("notes.txt", "mine"),
        ] {
            std::fs::write(dir.join(n), body).unwrap();
        }
        let before = files(&dir);
        let old: Vec<String> = vec!["part-0.csv".into(), "part-1.csv".into()];
        let incoming: Vec<String> = (0..3).map(|i| format!("part-{i}.csv")).collect();
        let aside = set_aside_parts(&dir, "out", &old, &incoming).unwrap();
        assert_eq!(files(&dir), vec![("notes.txt".into(), b"mine".to_vec())]);
        // Two of three new parts renamed in, then the commit fails (or is killed).
        std::fs::write(dir.join("part-0.csv"), "new 0").unwrap();
        std::fs::write(dir.join("part-1.csv"), "new 1").unwrap();
        restore_parts(&aside, &dir).unwrap();
        assert_eq!(
            files(&dir),
            before,
            "the old parts, and only they, are back"
        );
        assert!(!aside.exists());
        // A commit that completes discards the old parts.
        let aside = set_aside_parts(&dir, "out", &old, &incoming).unwrap();
        for n in &incoming {
            std::fs::write(dir.join(n), "new").unwrap();
        }
        discard_parts(&aside);
        assert_eq!(files(&dir).len(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_sweep_merges_back_the_parts_of_a_killed_commit() {
        let dir = scratch("killed-merge");
        let (host, dead) = (host().unwrap(), dead_pid());
        let aside = dir.join(format!(".out.tessera-old-{host}-{dead}-0"));
        std::fs::create_dir_all(&aside).unwrap();
        std::fs::write(aside.join(MERGE_MANIFEST), "part-0.csv\npart-1.csv").unwrap();
        std::fs::write(aside.join("part-0.csv"), "old 0").unwrap();
        std::fs::write(dir.join("part-0.csv"), "new 0").unwrap(); // renamed in before the kill
                                                                  // Killed while the old parts were still being moved: an empty manifest, nothing
                                                                  // incoming to remove.
        let moving = dir.join(format!(".out.tessera-old-{host}-{dead}-1"));
        std::fs::create_dir_all(&moving).unwrap();
        std::fs::write(moving.join(MERGE_MANIFEST), "").unwrap();
        std::fs::write(moving.join("part-7.csv"), "old 7").unwrap();
        std::fs::write(dir.join("part-8.csv"), "old 8, not yet moved").unwrap();
        assert_eq!(sweep(&dir).recovered, 2);
        assert_eq!(
            files(&dir),
            vec![
                ("part-0.csv".into(), b"old 0".to_vec()),
                ("part-7.csv".into(), b"old 7".to_vec()),
                ("part-8.csv".into(), b"old 8, not yet moved".to_vec()),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_parse_at_their_last_marker() {
        assert_eq!(
            parse(".a.tmp-b.tessera-old-h-1-2"),
            Some(("a.tmp-b", Kind::Old, "h-1-2"))
        );
        assert_eq!(parse("visible.tmp-h-1-2"), None);
        assert_eq!(parse(".plain"), None);
    }
}

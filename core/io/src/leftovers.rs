//! What a killed writer leaves, and who may remove it.
//!
//! Every temporary name tessera writes beside a target — a file's `.name.tmp-…`, a
//! dataset's or a Zarr array's `.name.tessera-staging-…` and the `.name.tessera-old-…` a
//! swap sets aside, all made by [`name`] — ends in a tag: `<host>-<pid>-<n>`, the host and
//! process that made it. A writer killed mid-write (SIGKILL, the out-of-memory killer, a lost node) cannot
//! remove its own; the next tessera writer into the same directory, of any target, does
//! ([`sweep`]), but only what it can prove abandoned: made on this host by a process that
//! no longer runs. Names from another host (a filesystem shared by the ranks of a job)
//! are never judged, and neither is anything where processes cannot be looked up (no
//! `/proc`): leaving garbage is recoverable, removing a live writer's staging is not.

use std::path::Path;
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

/// Whether the temporary entry `name` was left by a writer that is gone: it carries a
/// marker and a tag of this host whose process no longer runs. A tag without a host
/// (`<pid>-<n>`, as earlier versions wrote) is taken as this host's.
pub fn abandoned(name: &str) -> bool {
    let Some(tail) = Kind::ALL.iter().find_map(|k| {
        let m = k.marker();
        name.find(m).map(|i| &name[i + m.len()..])
    }) else {
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

/// Removes from `dir` every temporary entry (file or folder) a gone writer left
/// ([`abandoned`]); returns how many. Best effort: what cannot be listed or removed stays.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') || !abandoned(&name) {
            continue;
        }
        let path = e.path();
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed += usize::from(gone.is_ok());
    }
    removed
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
        assert_eq!(sweep(&dir), 3);
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
}

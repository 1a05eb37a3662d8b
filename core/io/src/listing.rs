//! File listings taken once per job.
//!
//! Under `scheduler = "mpi"` every rank builds the same plan from the same program, so
//! whatever the plan is built from must be the same on every rank. A directory listing is
//! not: two listings of a directory another process is writing can differ, and a rank on
//! a node that does not share the filesystem sees other files or none. So rank 0 lists
//! (and stats, or gets the objects' sizes and ETags) and broadcasts the records; every
//! other rank rebuilds the files from them without listing ([`StoredFile::from_record`]:
//! a local file is stat'ed there and must be the same file, an object is rebuilt without a
//! request), and the ranks agree before any plan is built on the list — a rank that
//! cannot see a file fails the listing on every rank, naming itself, instead of leaving
//! the others waiting in the plan.

use std::time::{Duration, UNIX_EPOCH};

use tessera_runtime::cluster::numbered;

use crate::error::{Error, Result};
use crate::file::{FileRecord, StoredFile};

/// `list()` run once for the job: here outside a job of several ranks; on rank 0 and
/// broadcast otherwise (see the [module docs](self)).
///
/// # Errors
/// `list`'s error (on every rank: rank 0's, named as such elsewhere), a rank that does
/// not see the same files, the exchange's.
pub(crate) fn listed_once(
    list: impl FnOnce() -> Result<Vec<StoredFile>>,
) -> Result<Vec<StoredFile>> {
    crate::ranks::decided_by_root(
        list,
        |files| {
            let items: Vec<(usize, Vec<u8>)> = files
                .iter()
                .enumerate()
                .map(|(i, f)| (i, encode(&f.record())))
                .collect();
            Ok(numbered::pack(&items))
        },
        |message| {
            rebuild(message).map_err(|e| match e {
                Error::Io { .. } | Error::FileChanged { .. } => Error::invalid(
                    "read",
                    format!(
                        "rank {} does not see the files rank 0 listed: {e}. Under scheduler = \"mpi\" every rank must read the same files: put them on a filesystem every rank shares or in an object store",
                        tessera_runtime::cluster::rank()
                    ),
                ),
                e => e,
            })
        },
    )
}

/// The files of rank 0's message, as this rank sees them.
fn rebuild(message: &[u8]) -> Result<Vec<StoredFile>> {
    #[cfg(feature = "object-store")]
    let mut client: Option<std::sync::Arc<dyn object_store::ObjectStore>> = None;
    #[cfg(feature = "object-store")]
    let mut store = |url: &str| -> Result<std::sync::Arc<dyn object_store::ObjectStore>> {
        // One client for the listing (every file is under one prefix of one bucket).
        if let Some(c) = &client {
            return Ok(c.clone());
        }
        let c = crate::object::parse_url(url)?.store;
        client = Some(c.clone());
        Ok(c)
    };
    numbered::unpack(message)?
        .into_iter()
        .map(|(_, bytes)| {
            let record = decode(bytes)?;
            StoredFile::from_record(
                &record,
                #[cfg(feature = "object-store")]
                &mut store,
            )
        })
        .collect()
}

const LOCAL: u8 = 1;
const OBJECT: u8 = 2;
const MODIFIED: u8 = 4;
const BEFORE_EPOCH: u8 = 8;
const E_TAG: u8 = 16;

/// A record as bytes: flags, size, modification time, then the strings with their lengths.
fn encode(r: &FileRecord) -> Vec<u8> {
    let mut flags = 0;
    let mut out = Vec::with_capacity(64 + r.display.len());
    let mut strings: Vec<&[u8]> = vec![r.display.as_bytes()];
    let local = r.local.as_ref().map(|p| p.to_string_lossy().into_owned());
    if let Some(p) = &local {
        flags |= LOCAL;
        strings.push(p.as_bytes());
    }
    if let Some(p) = &r.object_path {
        flags |= OBJECT;
        strings.push(p.as_bytes());
    }
    if let Some(t) = &r.e_tag {
        flags |= E_TAG;
        strings.push(t.as_bytes());
    }
    let since = r.modified.map(|m| match m.duration_since(UNIX_EPOCH) {
        Ok(d) => (false, d),
        Err(e) => (true, e.duration()),
    });
    if let Some((before, _)) = since {
        flags |= MODIFIED;
        if before {
            flags |= BEFORE_EPOCH;
        }
    }
    out.push(flags);
    out.extend_from_slice(&r.size.to_le_bytes());
    let (secs, nanos) = since.map_or((0, 0), |(_, d)| (d.as_secs(), d.subsec_nanos()));
    out.extend_from_slice(&secs.to_le_bytes());
    out.extend_from_slice(&nanos.to_le_bytes());
    for s in strings {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s);
    }
    out
}

/// The record of [`encode`]'s bytes.
fn decode(bytes: &[u8]) -> Result<FileRecord> {
    let bad = || Error::Internal(format!("a file record of {} bytes is damaged", bytes.len()));
    let mut r = bytes;
    let mut take = |n: usize| -> Result<&[u8]> {
        if r.len() < n {
            return Err(bad());
        }
        let (head, rest) = r.split_at(n);
        r = rest;
        Ok(head)
    };
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let flags = take(1)?[0];
    let size = word(take(8)?);
    let secs = word(take(8)?);
    let nanos = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
    let mut string = || -> Result<String> {
        let n = usize::try_from(word(take(8)?)).map_err(|_| bad())?;
        Ok(String::from_utf8_lossy(take(n)?).into_owned())
    };
    let display = string()?;
    let local = (flags & LOCAL != 0).then(&mut string).transpose()?;
    let object_path = (flags & OBJECT != 0).then(&mut string).transpose()?;
    let e_tag = (flags & E_TAG != 0).then(&mut string).transpose()?;
    let modified = (flags & MODIFIED != 0)
        .then(|| {
            let d = Duration::new(secs, nanos);
            if flags & BEFORE_EPOCH != 0 {
                UNIX_EPOCH.checked_sub(d)
            } else {
                UNIX_EPOCH.checked_add(d)
            }
            .ok_or_else(bad)
        })
        .transpose()?;
    Ok(FileRecord {
        display,
        local: local.map(Into::into),
        object_path,
        size,
        modified,
        e_tag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_an_error() {
        let records = [
            FileRecord {
                display: "/data/taxi-01.csv".into(),
                local: Some("/data/taxi-01.csv".into()),
                object_path: None,
                size: 123_456_789,
                modified: Some(UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)),
                e_tag: None,
            },
            FileRecord {
                display: "s3://bucket/taxi/yellow 2024.parquet".into(),
                local: None,
                object_path: Some("taxi/yellow 2024.parquet".into()),
                size: 0,
                modified: None,
                e_tag: Some("\"9b2cf535f27731c974343645a3985328\"".into()),
            },
            FileRecord {
                display: "old".into(),
                local: Some("old".into()),
                object_path: None,
                size: 1,
                modified: Some(UNIX_EPOCH - Duration::from_secs(86_400)),
                e_tag: None,
            },
        ];
        for r in &records {
            let bytes = encode(r);
            assert_eq!(&decode(&bytes).unwrap(), r);
            assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        }
    }

    #[test]
    fn every_rank_gets_rank_zeros_listing_and_a_rank_that_sees_another_file_fails_all() {
        let dir = std::env::temp_dir().join(format!("tessera-listing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["a.csv", "b.csv"] {
            std::fs::write(dir.join(name), b"x\n1\n").unwrap();
        }
        let pattern = dir.join("*.csv").to_string_lossy().into_owned();
        let lists = std::sync::atomic::AtomicUsize::new(0);
        let got = tessera_runtime::cluster::local::run(3, |_| {
            listed_once(|| {
                lists.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                crate::glob::expand_here(&pattern)
            })
            .map(|fs| {
                fs.iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
            })
        });
        assert_eq!(
            lists.load(std::sync::atomic::Ordering::Relaxed),
            1,
            "listed once"
        );
        for g in &got {
            let names = g.as_ref().unwrap();
            assert_eq!(names.len(), 2);
            assert!(
                names[0].ends_with("a.csv") && names[1].ends_with("b.csv"),
                "{names:?}"
            );
        }

        // Rank 0 lists a file as it was; the other ranks stat it after it changed: the
        // listing fails everywhere, and the ranks that saw another file say so.
        let changed = tessera_runtime::cluster::local::run(2, |rank| {
            let cluster = tessera_runtime::cluster::current().unwrap().unwrap();
            let out = listed_once(|| {
                let files = crate::glob::expand_here(&pattern);
                std::fs::write(dir.join("a.csv"), b"x\n1\n2\n").unwrap();
                files
            });
            // Keep the ranks in step for the next collective-free assertion.
            let _ = cluster.begin().and_then(|ex| ex.agree(Ok(())));
            (rank, out.map(|_| ()))
        });
        match &changed[1].1 {
            Err(Error::Invalid { detail, .. }) => {
                assert!(
                    detail.contains("rank 1 does not see the files rank 0 listed"),
                    "{detail}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&changed[0].1, Err(Error::Distributed { rank: 1, .. })),
            "{:?}",
            changed[0].1
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Decisions the ranks of a job take together: something done once, on one rank, whose
//! outcome every rank gets ([`Exchange::on_root`]); and the outcome of work every rank
//! did for itself, which succeeds only when it succeeded everywhere ([`Exchange::agree`]).
//!
//! These are what make writes and listings correct under SPMD. A dataset commits once
//! (rank 0 renames the staging directory, after every rank wrote its partitions): a
//! rename per rank would race. A directory is listed once (rank 0) and the list
//! broadcast: two listings of a directory that is being written can differ, and ranks
//! with different file lists build different plans. And a rank that fails alone (a file
//! it cannot see) must not leave the others waiting in the plan's first exchange until
//! the watchdog fires: every rank learns of the failure at the agreement, names the rank,
//! and stops.

use super::Exchange;
use tessera_core::error::{Error, Result};

/// First byte of an outcome message.
const OK: u8 = 0;
const FAILED: u8 = 1;

fn encode(outcome: &Result<Vec<u8>>) -> Vec<u8> {
    match outcome {
        Ok(bytes) => {
            let mut m = Vec::with_capacity(bytes.len() + 1);
            m.push(OK);
            m.extend_from_slice(bytes);
            m
        }
        Err(e) => failed(e),
    }
}

/// The message of a failed outcome: the marker, then the error's text.
fn failed(e: &Error) -> Vec<u8> {
    let mut m = vec![FAILED];
    m.extend_from_slice(e.to_string().as_bytes());
    m
}

fn decode(from: usize, mut message: Vec<u8>) -> Result<Vec<u8>> {
    match message.first() {
        Some(&OK) => {
            message.remove(0);
            Ok(message)
        }
        Some(&FAILED) => Err(Error::Distributed {
            rank: from,
            detail: String::from_utf8_lossy(&message[1..]).into_owned(),
        }),
        _ => Err(Error::Internal(format!(
            "an outcome message from rank {from} of {} bytes without its marker",
            message.len()
        ))),
    }
}

impl Exchange<'_> {
    /// Runs `f` on rank `root` only and returns its outcome on every rank: its bytes, or
    /// its error — the error itself on the root, an [`Error::Distributed`] naming the root
    /// and carrying the error's message elsewhere. A collective: every rank calls it, in
    /// the same order as its other collectives.
    ///
    /// # Errors
    /// `f`'s error (see above); the collective's errors.
    pub fn on_root(&self, root: usize, f: impl FnOnce() -> Result<Vec<u8>>) -> Result<Vec<u8>> {
        if self.rank() == root {
            let outcome = f();
            self.broadcast(root, encode(&outcome))?;
            return outcome;
        }
        let message = self.broadcast(root, Vec::new())?;
        decode(root, message)
    }

    /// Shares this rank's outcome with every rank and returns `Ok` only when every rank's
    /// was `Ok`: a rank that failed gets its own error back, the others an
    /// [`Error::Distributed`] naming the lowest rank that failed and why. A collective,
    /// and a barrier: no rank returns before every rank has called it.
    ///
    /// # Errors
    /// As above; the collective's errors.
    pub fn agree(&self, mine: Result<()>) -> Result<()> {
        let share = match &mine {
            Ok(()) => vec![OK],
            Err(e) => failed(e),
        };
        let shares = self.all_gather(share)?;
        mine?;
        for (rank, share) in shares.into_iter().enumerate() {
            decode(rank, share)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::{current, local};
    use tessera_core::error::{Error, Result};

    #[test]
    fn on_root_runs_once_and_every_rank_gets_the_bytes() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let got = local::run(3, |_| {
            let c = current().unwrap().unwrap();
            let ex = c.begin().unwrap();
            ex.on_root(0, || {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(b"listing".to_vec())
            })
            .unwrap()
        });
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(got.iter().all(|g| g == b"listing"), "{got:?}");
    }

    #[test]
    fn on_root_failure_is_the_roots_error_there_and_names_the_root_elsewhere() {
        let got: Vec<Result<Vec<u8>>> = local::run(3, |_| {
            let c = current().unwrap().unwrap();
            let ex = c.begin().unwrap();
            ex.on_root(1, || {
                Err(Error::invalid("to_csv", "the directory is read-only"))
            })
        });
        assert!(
            matches!(&got[1], Err(Error::Invalid { .. })),
            "{:?}",
            got[1]
        );
        for r in [0, 2] {
            match &got[r] {
                Err(Error::Distributed { rank: 1, detail }) => {
                    assert!(detail.contains("the directory is read-only"), "{detail}")
                }
                other => panic!("rank {r}: {other:?}"),
            }
        }
    }

    #[test]
    fn agree_fails_everywhere_when_one_rank_fails_and_names_it() {
        let got: Vec<Result<()>> = local::run(4, |rank| {
            let c = current().unwrap().unwrap();
            let ex = c.begin().unwrap();
            let mine = if rank == 2 || rank == 3 {
                Err(Error::invalid(
                    "write",
                    format!("rank {rank} cannot see /scratch"),
                ))
            } else {
                Ok(())
            };
            ex.agree(mine)
        });
        for (r, g) in got.iter().enumerate() {
            match (r, g) {
                (2 | 3, Err(Error::Invalid { detail, .. })) => {
                    assert!(detail.contains(&format!("rank {r} cannot")), "{detail}")
                }
                (0 | 1, Err(Error::Distributed { rank: 2, detail })) => {
                    assert!(detail.contains("rank 2 cannot see /scratch"), "{detail}")
                }
                other => panic!("{other:?}"),
            }
        }
        let fine: Vec<Result<()>> = local::run(2, |_| {
            let c = current().unwrap().unwrap();
            c.begin().unwrap().agree(Ok(()))
        });
        assert!(fine.iter().all(Result::is_ok), "{fine:?}");
    }
}

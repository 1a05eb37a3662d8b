//! Ranks as threads of one process: the distributed algorithms without MPI.
//!
//! [`run`] starts `size` threads, gives each a [`Cluster`] over an in-memory transport,
//! and runs the same closure on each — an SPMD job in one process. The engines cannot
//! tell it from MPI: the same owner rule, the same messages, the same collectives. Tests
//! use it to prove the distributed executors on every machine; programs can use it to try
//! an SPMD program before launching it with `mpirun`.
//!
//! Sends behave as MPI's standard send does over shared memory: a message up to
//! [`EAGER_BYTES`] is buffered and the send returns at once; a longer one returns only
//! once the receiver has taken it (the rendezvous protocol). So an algorithm that would
//! leave two MPI ranks each waiting in a send to the other hangs here too (and the
//! watchdog reports it), on every machine.
//!
//! ```
//! use tessera_runtime::cluster;
//! let ranks = cluster::local::run(3, |rank| (rank, cluster::size()));
//! assert_eq!(ranks, vec![(0, 3), (1, 3), (2, 3)]);
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{with_cluster, Cluster, Message, Transport};
use tessera_core::error::{Error, Result};

/// Messages up to this many bytes are sent eagerly (Open MPI's shared-memory eager limit);
/// longer ones wait for the receiver.
pub const EAGER_BYTES: usize = 4096;

/// A message in a mailbox, and the flag its sender waits on.
struct Letter {
    message: Message,
    taken: Arc<(Mutex<bool>, Condvar)>,
}

struct Mailbox {
    queue: Mutex<VecDeque<Letter>>,
    arrived: Condvar,
}

struct World {
    mailboxes: Vec<Mailbox>,
    aborted: AtomicBool,
}

/// The in-memory transport of one rank of a [`run`].
pub struct LocalTransport {
    world: Arc<World>,
    rank: usize,
}

impl LocalTransport {
    /// The transports of a job of `size` ranks, rank 0 first.
    pub fn world(size: usize) -> Vec<Arc<LocalTransport>> {
        let world = Arc::new(World {
            mailboxes: (0..size)
                .map(|_| Mailbox {
                    queue: Mutex::new(VecDeque::new()),
                    arrived: Condvar::new(),
                })
                .collect(),
            aborted: AtomicBool::new(false),
        });
        (0..size)
            .map(|rank| {
                Arc::new(LocalTransport {
                    world: world.clone(),
                    rank,
                })
            })
            .collect()
    }

    fn aborted(&self) -> Result<()> {
        if self.world.aborted.load(Ordering::Relaxed) {
            return Err(Error::Distributed {
                rank: self.rank,
                detail: "the job was aborted by another rank".into(),
            });
        }
        Ok(())
    }
}

impl Transport for LocalTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.world.mailboxes.len()
    }

    fn describe(&self) -> String {
        format!("threads of one process, {} ranks", self.size())
    }

    fn send(&self, to: usize, tag: u64, payload: &[u8]) -> Result<()> {
        self.aborted()?;
        let mb = self
            .world
            .mailboxes
            .get(to)
            .ok_or_else(|| Error::Internal(format!("send to rank {to} of {}", self.size())))?;
        let taken = Arc::new((Mutex::new(false), Condvar::new()));
        mb.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Letter {
                message: Message {
                    from: self.rank,
                    tag,
                    payload: payload.to_vec(),
                },
                taken: taken.clone(),
            });
        mb.arrived.notify_all();
        if payload.len() <= EAGER_BYTES {
            return Ok(());
        }
        let (flag, cv) = &*taken;
        let mut done = flag.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            self.aborted()?;
            done = cv
                .wait_timeout(done, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Ok(())
    }

    fn recv(&self, wait: Duration) -> Result<Option<Message>> {
        let mb = &self.world.mailboxes[self.rank];
        let deadline = Instant::now() + wait;
        let mut q = mb.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            self.aborted()?;
            if let Some(letter) = q.pop_front() {
                let (flag, cv) = &*letter.taken;
                *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
                cv.notify_all();
                return Ok(Some(letter.message));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            q = mb
                .arrived
                .wait_timeout(q, left.min(Duration::from_millis(20)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn abort(&self, _code: i32) {
        self.world.aborted.store(true, Ordering::Relaxed);
        for mb in &self.world.mailboxes {
            mb.arrived.notify_all();
            for letter in mb.queue.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                letter.taken.1.notify_all();
            }
        }
    }
}

/// Runs `f(rank)` on `size` threads, each a rank of one job (plans on those threads run
/// distributed over the job), and returns the results in rank order. A rank that panics
/// aborts the job (so the others stop waiting for it) and the panic is resumed here.
pub fn run<T, F>(size: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let transports = LocalTransport::world(size);
    std::thread::scope(|s| {
        let handles: Vec<_> = transports
            .iter()
            .enumerate()
            .map(|(rank, t)| {
                let f = &f;
                let cluster = Cluster::new(t.clone());
                let t = t.clone();
                s.spawn(move || {
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        with_cluster(cluster, || f(rank))
                    }));
                    if out.is_err() {
                        t.abort(1);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(Ok(v)) => v,
                Ok(Err(p)) | Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::current;

    fn exchange_of<T>(f: impl Fn(&super::super::Exchange<'_>) -> T) -> T {
        let c = current().unwrap().unwrap();
        let ex = c.begin().unwrap();
        f(&ex)
    }

    #[test]
    fn all_to_all_delivers_every_share_in_rank_order() {
        let out = run(4, |rank| {
            exchange_of(|ex| {
                let parts = (0..4).map(|to| vec![rank as u8, to as u8]).collect();
                ex.all_to_all(parts).unwrap()
            })
        });
        for (rank, got) in out.iter().enumerate() {
            let want: Vec<Vec<u8>> = (0..4).map(|from| vec![from as u8, rank as u8]).collect();
            assert_eq!(got, &want);
        }
    }

    #[test]
    fn collectives_in_sequence_and_across_plans_do_not_mix() {
        let out = run(3, |rank| {
            let c = current().unwrap().unwrap();
            let mut seen = Vec::new();
            for plan in 0..3u8 {
                let ex = c.begin().unwrap();
                let a = ex.all_gather(vec![plan, rank as u8]).unwrap();
                let b = ex.broadcast(plan as usize % 3, vec![100 + plan]).unwrap();
                seen.push((a, b));
            }
            seen
        });
        for seen in out {
            for (plan, (a, b)) in seen.into_iter().enumerate() {
                let want: Vec<Vec<u8>> = (0..3).map(|r| vec![plan as u8, r as u8]).collect();
                assert_eq!(a, want);
                assert_eq!(b, vec![100 + plan as u8]);
            }
        }
    }

    #[test]
    fn a_failure_report_reaches_every_rank_naming_the_failed_one() {
        let out = run(3, |rank| {
            exchange_of(|ex| {
                if rank == 1 {
                    ex.report_failure("task 7 failed: boom");
                    return None;
                }
                Some(ex.all_gather(vec![1]).unwrap_err().to_string())
            })
        });
        for msg in [&out[0], &out[2]] {
            let msg = msg.as_ref().unwrap();
            assert!(
                msg.contains("rank 1") && msg.contains("task 7 failed: boom"),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_silent_rank_is_reported_by_the_watchdog_not_waited_for_forever() {
        let _g = tessera_core::config::set(&[("distributed.timeout", "300ms")]).unwrap();
        let out = run(2, |rank| {
            exchange_of(|ex| (rank == 0).then(|| ex.all_gather(vec![1]).unwrap_err().to_string()))
        });
        let msg = out[0].as_ref().unwrap();
        assert!(
            msg.contains("from rank 1") && msg.contains("distributed.timeout"),
            "{msg}"
        );
    }

    #[test]
    fn a_long_send_waits_until_the_receiver_takes_it_and_a_short_one_does_not() {
        let out = run(2, |rank| {
            let c = current().unwrap().unwrap();
            let ex = c.begin().unwrap();
            if rank == 0 {
                let t = std::time::Instant::now();
                ex.send(1, 0, b"x").unwrap();
                let short = t.elapsed();
                ex.send(1, 1, &vec![0; EAGER_BYTES + 1]).unwrap();
                (short, t.elapsed())
            } else {
                std::thread::sleep(Duration::from_millis(200));
                ex.recv_data(Duration::from_secs(5)).unwrap().unwrap();
                ex.recv_data(Duration::from_secs(5)).unwrap().unwrap();
                (Duration::ZERO, Duration::ZERO)
            }
        });
        let (short, long) = out[0];
        assert!(
            short < Duration::from_millis(100),
            "the short send took {short:?}"
        );
        assert!(
            long >= Duration::from_millis(150),
            "the long send returned after {long:?}"
        );
    }

    #[test]
    fn traffic_counts_payload_bytes() {
        let out = run(2, |_| {
            let c = current().unwrap().unwrap();
            let before = c.traffic();
            let ex = c.begin().unwrap();
            ex.all_gather(vec![0; 1000]).unwrap();
            c.traffic().since(&before)
        });
        for t in out {
            assert_eq!((t.sent_bytes, t.received_bytes), (1000, 1000));
            assert_eq!((t.sent_messages, t.received_messages), (1, 1));
        }
    }
}

//! One plan's conversation between ranks: tagged data, failure reports, collectives.
//!
//! A tag packs the plan's epoch (high bits), what the message is, and an id (a task, or
//! the sequence number of a collective within the plan). Messages of a later epoch (a
//! faster rank already in its next plan), or of a later collective, wait in the cluster's
//! stash; messages of an earlier epoch (left over from a plan that failed) are dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Cluster, Message};
use tessera_core::error::{Error, Result};

/// Bits of a tag that carry the id.
const ID_BITS: u32 = 36;
/// Bits of a tag that carry the kind (above the id).
const KIND_BITS: u32 = 4;
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A task's output for a consumer on the receiving rank.
    Data = 0,
    /// The sender failed; the payload says what (UTF-8).
    Failure = 1,
    /// A share of a collective.
    Collective = 2,
}

fn tag(epoch: u64, kind: Kind, id: u64) -> u64 {
    (epoch << (ID_BITS + KIND_BITS)) | ((kind as u64) << ID_BITS) | (id & ID_MASK)
}

fn split(tag: u64) -> (u64, u64, u64) {
    (
        tag >> (ID_BITS + KIND_BITS),
        (tag >> ID_BITS) & ((1 << KIND_BITS) - 1),
        tag & ID_MASK,
    )
}

/// One plan's messages on a [`Cluster`] (from [`Cluster::begin`]).
///
/// `send` may be called from any thread; everything that receives (`recv_data` and the
/// collectives) from one thread at a time.
pub struct Exchange<'c> {
    cluster: &'c Cluster,
    epoch: u64,
    timeout: Duration,
    collectives: AtomicU64,
}

impl<'c> Exchange<'c> {
    pub(super) fn new(cluster: &'c Cluster, epoch: u64, timeout: Duration) -> Exchange<'c> {
        Exchange {
            cluster,
            epoch,
            timeout,
            collectives: AtomicU64::new(0),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.cluster.rank()
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.cluster.size()
    }

    /// The watchdog's bound on a wait with no progress (`distributed.timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The cluster.
    pub fn cluster(&self) -> &'c Cluster {
        self.cluster
    }

    fn send_tagged(&self, to: usize, tag: u64, payload: &[u8]) -> Result<()> {
        self.cluster.transport.send(to, tag, payload)?;
        let c = &self.cluster.counters;
        c.sent_bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
        c.sent_messages.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Sends item `id`'s bytes to rank `to`.
    ///
    /// # Errors
    /// The transport's failure.
    pub fn send(&self, to: usize, id: u64, payload: &[u8]) -> Result<()> {
        self.send_tagged(to, tag(self.epoch, Kind::Data, id), payload)
    }

    /// Tells every other rank that this one failed, and why. Best effort, and never
    /// waits: the reports go out from a thread of their own (two failing ranks each
    /// reporting to the other must not wait on each other, nor on a rank that is gone).
    pub fn report_failure(&self, detail: &str) {
        let me = self.rank();
        let report = Arc::new(detail.as_bytes().to_vec());
        let sends = (0..self.size())
            .filter(|&r| r != me)
            .map(|to| (to, report.clone()))
            .collect();
        drop(self.send_in_background(tag(self.epoch, Kind::Failure, 0), sends));
    }

    /// The next message of this plan matching `want` (kind, id), waiting at most `wait`.
    /// A failure report of this plan from any rank is returned as its error.
    fn take(
        &self,
        wait: Duration,
        want: &dyn Fn(u64, u64) -> bool,
    ) -> Result<Option<(usize, u64, Vec<u8>)>> {
        let failure = |m: &Message| Error::Distributed {
            rank: m.from,
            detail: String::from_utf8_lossy(&m.payload).into_owned(),
        };
        {
            let mut pending = self
                .cluster
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            pending.retain(|m| split(m.tag).0 >= self.epoch);
            if let Some(pos) = pending.iter().position(|m| {
                let (e, k, id) = split(m.tag);
                e == self.epoch && (k == Kind::Failure as u64 || want(k, id))
            }) {
                let m = pending.remove(pos);
                if split(m.tag).1 == Kind::Failure as u64 {
                    return Err(failure(&m));
                }
                return Ok(Some((m.from, split(m.tag).2, m.payload)));
            }
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(m) = self.cluster.transport.recv(left)? else {
                return Ok(None);
            };
            let c = &self.cluster.counters;
            c.received_bytes
                .fetch_add(m.payload.len() as u64, Ordering::Relaxed);
            c.received_messages.fetch_add(1, Ordering::Relaxed);
            let (e, k, id) = split(m.tag);
            if e == self.epoch && k == Kind::Failure as u64 {
                return Err(failure(&m));
            }
            if e == self.epoch && want(k, id) {
                return Ok(Some((m.from, id, m.payload)));
            }
            if e >= self.epoch {
                self.cluster
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(m);
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// The next data message of this plan (sender, id, bytes), waiting at most `wait`.
    ///
    /// # Errors
    /// Another rank's failure report ([`Error::Distributed`] naming that rank), or the
    /// transport's failure.
    pub fn recv_data(&self, wait: Duration) -> Result<Option<(usize, u64, Vec<u8>)>> {
        self.take(wait, &|k, _| k == Kind::Data as u64)
    }

    /// Sends `parts[r]` to every rank `r` and returns what every rank sent this one, in
    /// rank order (this rank's own part is moved, not sent). A collective: every rank
    /// calls it, in the same order as its other collectives.
    ///
    /// # Errors
    /// The length of `parts` is not the number of ranks, a failure report, the transport's
    /// failure, or no share from some rank within `distributed.timeout`.
    pub fn all_to_all(&self, mut parts: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        let (me, size) = (self.rank(), self.size());
        if parts.len() != size {
            return Err(Error::Internal(format!(
                "all_to_all with {} parts on {size} ranks",
                parts.len()
            )));
        }
        let own = std::mem::take(&mut parts[me]);
        let sends = parts
            .into_iter()
            .enumerate()
            .filter(|&(to, _)| to != me)
            .map(|(to, p)| (to, Arc::new(p)))
            .collect();
        self.collective(own, sends, "all-to-all")
    }

    /// One collective: sends `sends` (destination, bytes), then receives every other
    /// rank's share; `own` is this rank's. The shares in rank order.
    fn collective(
        &self,
        own: Vec<u8>,
        sends: Vec<(usize, Arc<Vec<u8>>)>,
        what: &str,
    ) -> Result<Vec<Vec<u8>>> {
        let seq = self.collectives.fetch_add(1, Ordering::Relaxed);
        let t = tag(self.epoch, Kind::Collective, seq);
        let mut out: Vec<Option<Vec<u8>>> = (0..self.size()).map(|_| None).collect();
        out[self.rank()] = Some(own);
        let sending = self.send_in_background(t, sends);
        self.gather_shares(seq, &mut out, what)?;
        self.finish_sends(sending)?;
        Ok(out.into_iter().map(|o| o.unwrap_or_default()).collect())
    }

    /// Sends on a thread of their own: a transport's send of a long message may wait for
    /// the receiver to take it, and every rank sends before it receives in a collective,
    /// so sending on the receiving thread would leave every rank waiting on the others.
    /// A payload going to several ranks is shared, not copied per rank.
    fn send_in_background(
        &self,
        t: u64,
        sends: Vec<(usize, Arc<Vec<u8>>)>,
    ) -> std::thread::JoinHandle<Result<u64>> {
        let transport = self.cluster.transport.clone();
        let sending = self.cluster.sending.clone();
        sending.fetch_add(1, Ordering::AcqRel);
        std::thread::spawn(move || {
            /// Counts the send as finished however the thread ends.
            struct Done(Arc<std::sync::atomic::AtomicUsize>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::AcqRel);
                }
            }
            let _done = Done(sending);
            let mut bytes = 0;
            for (to, payload) in &sends {
                transport.send(*to, t, payload)?;
                bytes += payload.len() as u64;
            }
            Ok(bytes)
        })
    }

    /// Waits for [`Exchange::send_in_background`]'s sends (every peer has taken its share
    /// by now) and counts them.
    fn finish_sends(&self, sending: std::thread::JoinHandle<Result<u64>>) -> Result<()> {
        let messages = self.size() as u64 - 1;
        let bytes = sending
            .join()
            .map_err(|_| Error::Internal("the sending thread of a collective panicked".into()))??;
        let c = &self.cluster.counters;
        c.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
        c.sent_messages.fetch_add(messages, Ordering::Relaxed);
        Ok(())
    }

    /// Every rank's `mine`, in rank order. A collective.
    ///
    /// # Errors
    /// As [`Exchange::all_to_all`].
    pub fn all_gather(&self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let me = self.rank();
        let shared = Arc::new(mine);
        let sends = (0..self.size())
            .filter(|&r| r != me)
            .map(|to| (to, shared.clone()))
            .collect();
        // Every send has finished when `collective` returns: the bytes are this rank's again.
        let own = Vec::new();
        let mut all = self.collective(own, sends, "all-gather")?;
        all[me] = Arc::try_unwrap(shared).unwrap_or_else(|a| a.as_ref().clone());
        Ok(all)
    }

    /// `root`'s bytes on every rank (`value` is read on the root only). A collective.
    ///
    /// # Errors
    /// As [`Exchange::all_to_all`].
    pub fn broadcast(&self, root: usize, value: Vec<u8>) -> Result<Vec<u8>> {
        let (me, size) = (self.rank(), self.size());
        let seq = self.collectives.fetch_add(1, Ordering::Relaxed);
        let t = tag(self.epoch, Kind::Collective, seq);
        if me == root {
            let shared = Arc::new(value);
            let sends = (0..size)
                .filter(|&r| r != me)
                .map(|to| (to, shared.clone()))
                .collect();
            self.finish_sends(self.send_in_background(t, sends))?;
            return Ok(Arc::try_unwrap(shared).unwrap_or_else(|a| a.as_ref().clone()));
        }
        let mut out: Vec<Option<Vec<u8>>> = (0..size).map(|r| (r != root).then(Vec::new)).collect();
        self.gather_shares(seq, &mut out, "broadcast")?;
        Ok(out[root].take().unwrap_or_default())
    }

    /// Fills the empty slots of `out` with collective `seq`'s share from each rank.
    fn gather_shares(&self, seq: u64, out: &mut [Option<Vec<u8>>], what: &str) -> Result<()> {
        let mut last = Instant::now();
        while let Some(missing) = out.iter().position(|o| o.is_none()) {
            let got = self.take(Duration::from_millis(50), &|k, id| {
                k == Kind::Collective as u64 && id == seq
            })?;
            match got {
                Some((from, _, bytes)) => {
                    out[from] = Some(bytes);
                    last = Instant::now();
                }
                None if last.elapsed() > self.timeout => {
                    return Err(Error::Distributed {
                        rank: missing,
                        detail: format!(
                            "rank {} waited {:.0} s for its share of {what} {seq} from rank {missing} (distributed.timeout); that rank stopped, hangs, or runs a different program",
                            self.rank(),
                            last.elapsed().as_secs_f64()
                        ),
                    });
                }
                None => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_pack_epoch_kind_and_id() {
        let t = tag(7, Kind::Collective, 12345);
        assert_eq!(split(t), (7, Kind::Collective as u64, 12345));
        let t = tag(1, Kind::Data, ID_MASK);
        assert_eq!(split(t), (1, 0, ID_MASK));
        assert_ne!(tag(1, Kind::Data, 5), tag(2, Kind::Data, 5));
    }

    /// A transport whose sends block until released, and which records an abort.
    struct Stuck {
        release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
        aborted: std::sync::atomic::AtomicBool,
    }

    impl crate::cluster::Transport for Stuck {
        fn rank(&self) -> usize {
            0
        }
        fn size(&self) -> usize {
            2
        }
        fn describe(&self) -> String {
            "stuck".into()
        }
        fn send(&self, _to: usize, _tag: u64, _payload: &[u8]) -> Result<()> {
            let _ = self.release.lock().unwrap().recv();
            Ok(())
        }
        fn recv(&self, _wait: Duration) -> Result<Option<crate::cluster::Message>> {
            Ok(None)
        }
        fn abort(&self, _code: i32) {
            self.aborted.store(true, Ordering::SeqCst);
        }
    }

    /// After a failed plan, a failure report stuck sending to a rank that stopped ends the
    /// job within the grace time instead of holding the process; once the sends finish,
    /// nothing is aborted.
    #[test]
    fn a_send_still_blocked_after_a_failed_plan_ends_the_job() {
        let (tx, rx) = std::sync::mpsc::channel();
        let stuck = Arc::new(Stuck {
            release: std::sync::Mutex::new(rx),
            aborted: std::sync::atomic::AtomicBool::new(false),
        });
        let cluster = crate::cluster::Cluster::new(stuck.clone());
        let ex = cluster.begin().unwrap();
        ex.report_failure("rank 0: a partition function failed");
        let started = Instant::now();
        cluster.end_failed_plan("a partition function failed", Duration::from_millis(200));
        assert!(stuck.aborted.load(Ordering::SeqCst), "not aborted");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Released, the send finishes and a later failure settles without an abort.
        tx.send(()).unwrap();
        assert!(cluster.settle_sends(Duration::from_secs(5)));
        stuck.aborted.store(false, Ordering::SeqCst);
        cluster.end_failed_plan("again", Duration::from_millis(200));
        assert!(
            !stuck.aborted.load(Ordering::SeqCst),
            "aborted with nothing in flight"
        );
    }
}

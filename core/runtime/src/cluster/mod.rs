//! SPMD runs: one program on every rank of a job, and what the ranks say to each other.
//!
//! Under `scheduler = "mpi"` the user's binary runs on every rank (`mpirun -n 8
//! ./analysis`); every rank builds the same lazy graph, lowers it to the same plan, and
//! runs the tasks an owner rule gives it. What crosses ranks is bytes: a chunk's host form
//! or a partition's Arrow IPC. This module is the seam between the engines and whatever
//! moves those bytes:
//!
//! - a [`Transport`] sends tagged byte messages to a rank and receives the next message
//!   from any rank. `tessera-mpi` implements it over MPI (host memory); [`local`]
//!   implements it over threads of one process, which is how the distributed algorithms
//!   are tested on a machine without MPI. A GPU transport (NCCL, CUDA-aware MPI) would be
//!   a third implementation.
//! - a [`Cluster`] wraps a transport with what every engine needs on top: plan epochs (so
//!   a message of one plan is never taken for another's), a stash for messages that
//!   arrive early, collectives built from point-to-point messages (all-gather,
//!   all-to-all, broadcast), failure reports, a watchdog on every wait, and byte counters;
//! - decisions taken once for the job ([`Exchange::on_root`]: a commit, a directory
//!   listing) or together ([`Exchange::agree`]: every rank's part succeeded).
//!
//! Receiving from *any* rank is the design's deadlock argument: a rank's receiving thread
//! takes whatever arrives, so no send waits on a receive that is posted in a different
//! order, and the only waits are for data that has not been produced yet — which the
//! watchdog bounds (`distributed.timeout`).

mod decide;
mod exchange;
pub mod local;
pub mod numbered;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tessera_core::error::{Error, Result};

pub use exchange::Exchange;

/// One message: who sent it, its tag, its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The sending rank.
    pub from: usize,
    /// The tag the sender gave it.
    pub tag: u64,
    /// The bytes.
    pub payload: Vec<u8>,
}

/// Moves tagged byte messages between the ranks of a job.
///
/// Implementations must accept `send` from several threads at once and deliver the
/// messages of one sender to one receiver in the order they were sent when they were sent
/// from one thread. `recv` is called from one thread at a time.
pub trait Transport: Send + Sync {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Ranks in the job.
    fn size(&self) -> usize;
    /// The transport in words (`"MPI (Open MPI v4.1.4), 4 ranks"`), for `explain` and errors.
    fn describe(&self) -> String;
    /// Sends `payload` to rank `to`. It may block until the receiver takes it; payloads of
    /// any length are accepted (a transport with a count limit splits them).
    ///
    /// # Errors
    /// The transport's failure, naming the destination.
    fn send(&self, to: usize, tag: u64, payload: &[u8]) -> Result<()>;
    /// The next message for this rank from any rank, waiting at most `wait`; `None` when
    /// nothing arrived in that time.
    ///
    /// # Errors
    /// The transport's failure.
    fn recv(&self, wait: Duration) -> Result<Option<Message>>;
    /// Ends the whole job now (`MPI_Abort`): the last resort after a failure was reported,
    /// when a peer may be blocked forever on this rank. Returns only when the transport
    /// cannot abort.
    fn abort(&self, code: i32);
}

/// A transport a scheduler name opens: `tessera-mpi` submits one for `"mpi"`.
pub struct TransportFactory {
    /// The `scheduler` value it serves.
    pub scheduler: &'static str,
    /// Opens the process's transport (initialising MPI on first use).
    pub open: fn() -> Result<Arc<dyn Transport>>,
}

inventory::collect!(TransportFactory);

/// Bytes and messages this rank has sent and received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Payload bytes received.
    pub received_bytes: u64,
    /// Messages sent.
    pub sent_messages: u64,
    /// Messages received.
    pub received_messages: u64,
}

impl Traffic {
    /// The traffic between two snapshots (`self` the later one).
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            sent_bytes: self.sent_bytes - earlier.sent_bytes,
            received_bytes: self.received_bytes - earlier.received_bytes,
            sent_messages: self.sent_messages - earlier.sent_messages,
            received_messages: self.received_messages - earlier.received_messages,
        }
    }
}

#[derive(Default)]
struct Counters {
    sent_bytes: AtomicU64,
    received_bytes: AtomicU64,
    sent_messages: AtomicU64,
    received_messages: AtomicU64,
}

/// A transport with plan epochs, a stash for early messages, collectives, a watchdog and
/// traffic counters. One per process (per rank thread with [`local`]).
pub struct Cluster {
    transport: Arc<dyn Transport>,
    epoch: AtomicU64,
    /// Messages received before the plan (or the collective) they belong to.
    pending: Mutex<Vec<Message>>,
    counters: Counters,
    /// Sends running on threads of their own ([`Exchange`]'s collectives and failure
    /// reports): one still blocked when a plan has failed is waiting for a rank that has
    /// stopped receiving, and would hold the process at `MPI_Finalize`.
    sending: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("transport", &self.transport.describe())
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .finish()
    }
}

impl Cluster {
    /// Wraps a transport.
    pub fn new(transport: Arc<dyn Transport>) -> Arc<Cluster> {
        Arc::new(Cluster {
            transport,
            epoch: AtomicU64::new(0),
            pending: Mutex::new(Vec::new()),
            counters: Counters::default(),
            sending: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Waits up to `grace` for the sends running on threads of their own to finish;
    /// `false` when some are still blocked then.
    pub fn settle_sends(&self, grace: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        while self.sending.load(Ordering::Acquire) > 0 {
            if start.elapsed() > grace {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// After a failed plan on this rank (already reported to the others): waits a bounded
    /// time for this rank's sends to finish, and ends the whole job (`abort`, with `why`
    /// on stderr) when one is still blocked, rather than leave the process hanging in a
    /// send to a rank that has stopped, or in `MPI_Finalize` after it.
    pub fn end_failed_plan(&self, why: &str, grace: std::time::Duration) {
        if !self.settle_sends(grace) {
            eprintln!(
                "tessera: rank {}: {why}; a send to another rank is still blocked after {:.0} s, ending the job",
                self.rank(),
                grace.as_secs_f64()
            );
            self.abort(1);
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.transport.size()
    }

    /// The transport in words.
    pub fn describe(&self) -> String {
        self.transport.describe()
    }

    /// Bytes and messages sent and received so far.
    pub fn traffic(&self) -> Traffic {
        let c = &self.counters;
        Traffic {
            sent_bytes: c.sent_bytes.load(Ordering::Relaxed),
            received_bytes: c.received_bytes.load(Ordering::Relaxed),
            sent_messages: c.sent_messages.load(Ordering::Relaxed),
            received_messages: c.received_messages.load(Ordering::Relaxed),
        }
    }

    /// Starts the exchange of the next plan. Every rank runs the same plans in the same
    /// order (SPMD), so the `n`-th exchange of every rank is the same plan's.
    ///
    /// # Errors
    /// A bad `distributed.timeout`.
    pub fn begin(&self) -> Result<Exchange<'_>> {
        let timeout = tessera_core::config::distributed_timeout()?;
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Exchange::new(self, epoch, timeout))
    }

    /// Ends the job (see [`Transport::abort`]).
    pub fn abort(&self, code: i32) {
        self.transport.abort(code)
    }
}

thread_local! {
    static SCOPED: RefCell<Option<Arc<Cluster>>> = const { RefCell::new(None) };
}

static PROCESS: OnceLock<std::result::Result<Arc<Cluster>, String>> = OnceLock::new();

/// The cluster plans on this thread run on: the one [`with_cluster`] set, else, under
/// `scheduler = "mpi"`, the process's (opened on first use); `None` for the local
/// schedulers.
///
/// # Errors
/// `scheduler = "mpi"` without a transport for it (tessera built without the `mpi`
/// feature), or the transport's refusal to open (a wrong launcher).
pub fn current() -> Result<Option<Arc<Cluster>>> {
    if let Some(c) = SCOPED.with(|s| s.borrow().clone()) {
        return Ok(Some(c));
    }
    let kind = tessera_core::config::scheduler()?;
    if !kind.is_distributed() {
        return Ok(None);
    }
    let opened = PROCESS.get_or_init(|| {
        let factory = inventory::iter::<TransportFactory>
            .into_iter()
            .find(|f| f.scheduler == "mpi")
            .ok_or_else(|| {
                "scheduler = \"mpi\" needs tessera built with the `mpi` feature \
                 (cargo build --features mpi, with MPI and libclang installed) and the program \
                 launched by mpirun or srun; or choose scheduler = \"threads\""
                    .to_string()
            })?;
        (factory.open)().map(Cluster::new).map_err(|e| match e {
            Error::Config(m) => m,
            e => e.to_string(),
        })
    });
    match opened {
        Ok(c) => Ok(Some(c.clone())),
        Err(e) => Err(Error::Config(e.clone())),
    }
}

/// Runs `f` with plans on this thread running on `cluster` (whatever `scheduler` says):
/// how [`local`] makes threads into ranks. Restores the previous cluster afterwards.
pub fn with_cluster<T>(cluster: Arc<Cluster>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Cluster>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            SCOPED.with(|s| *s.borrow_mut() = prev);
        }
    }
    let prev = SCOPED.with(|s| s.borrow_mut().replace(cluster));
    let _restore = Restore(prev);
    f()
}

/// Refuses a write to a destination private to each process (`op`: a store in memory)
/// under a distributed scheduler with more than one rank: every rank would fill its own
/// copy with only its own blocks. Writers to shared destinations (files, object stores)
/// write from every rank and commit once instead.
///
/// # Errors
/// [`Error::Invalid`] naming `op` and what to do instead, under `scheduler = "mpi"` with
/// more than one rank; configuration errors.
pub fn refuse_distributed_write(op: &str) -> Result<()> {
    match current()? {
        Some(c) if c.size() > 1 => Err(Error::invalid(
            op,
            format!(
                "this destination belongs to one process, and under scheduler = \"mpi\" ({} ranks) each rank would hold only its own blocks: write to a file or an object store every rank reaches, or persist() the array (its blocks stay on their ranks)",
                c.size()
            ),
        )),
        _ => Ok(()),
    }
}

/// This process's rank: 0 outside a distributed run (and when the cluster cannot open).
/// Programs print their results where `rank() == 0`.
pub fn rank() -> usize {
    current().ok().flatten().map_or(0, |c| c.rank())
}

/// Ranks in the job: 1 outside a distributed run.
pub fn size() -> usize {
    current().ok().flatten().map_or(1, |c| c.size())
}

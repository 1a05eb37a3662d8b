//! The MPI transport: tagged byte messages over a duplicate of `MPI_COMM_WORLD`.
//!
//! A message starts with one MPI message of bytes on tag [`FIRST`]: a 16-byte header
//! (tessera's 64-bit tag and the total length), followed there by the payload when it is
//! at most [`INLINE`] bytes; a longer payload follows in pieces of at most [`PIECE`] bytes
//! on tag [`REST`], sent from the caller's buffer. MPI counts are `int`, so no single MPI message may carry
//! 2^31 bytes or more; pieces of 1 GiB keep well inside that. A sender holds a lock per
//! destination for a whole message, so the pieces on (sender, receiver, [`REST`]) are
//! always the current message's, in order (MPI does not reorder messages of one sender on
//! one tag and communicator). The receiver probes any source on [`FIRST`] with
//! `MPI_Improbe`, which also makes a probed message its own (no other receive can take
//! it), then takes the rest from that sender.

#![allow(unsafe_code)]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mpi::environment::Universe;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Equivalence;
use mpi::Threading;

use tessera_core::error::{Error, Result};
use tessera_runtime::cluster::{Message, Transport, TransportFactory};

/// MPI tag of a message's first part.
const FIRST: i32 = 1;
/// MPI tag of the further pieces of a long message.
const REST: i32 = 2;
/// Bytes per MPI message: well under `i32::MAX`.
const PIECE: usize = 1 << 30;
const HEADER: usize = 16;
/// Payloads up to this many bytes travel in the header's message.
const INLINE: usize = 64 << 10;

/// The communicator, shared by the threads of one rank.
struct Comm(SimpleCommunicator);

// SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (checked in `open`), under which
// the MPI standard allows any thread to call MPI on a communicator concurrently; the
// handle itself is an immutable value for its whole life (it is freed only at exit).
unsafe impl Send for Comm {}
// SAFETY: as above: concurrent calls on one communicator are allowed under
// MPI_THREAD_MULTIPLE, and tessera never mutates the handle.
unsafe impl Sync for Comm {}

/// The MPI universe, finalised when the process exits.
struct Held {
    _universe: Universe,
}

// SAFETY: the universe is only touched twice — created in `open` and dropped (which calls
// MPI_Finalize) in the exit handler — each time behind the `UNIVERSE` mutex.
unsafe impl Send for Held {}

static UNIVERSE: Mutex<Option<Held>> = Mutex::new(None);
static OPENED: OnceLock<std::result::Result<Arc<MpiTransport>, String>> = OnceLock::new();

extern "C" fn finalize_at_exit() {
    if let Ok(mut u) = UNIVERSE.lock() {
        drop(u.take());
    }
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

/// The MPI transport of this process (one per process: MPI initialises once).
pub struct MpiTransport {
    comm: Comm,
    rank: usize,
    size: usize,
    library: String,
    /// One lock per destination: a message's pieces are never interleaved with another's.
    sending: Vec<Mutex<()>>,
    receiving: Mutex<()>,
}

impl MpiTransport {
    /// Initialises MPI (`MPI_THREAD_MULTIPLE`) on first use and checks the launch; later
    /// calls return the same transport.
    ///
    /// # Errors
    /// MPI that cannot initialise or lacks `MPI_THREAD_MULTIPLE`, or a launch the launcher
    /// and MPI disagree on ([`crate::launch::check`]).
    pub fn open() -> Result<Arc<MpiTransport>> {
        OPENED
            .get_or_init(|| {
                Self::init().map_err(|e| match e {
                    Error::Config(m) => m,
                    e => e.to_string(),
                })
            })
            .clone()
            .map_err(Error::Config)
    }

    fn init() -> Result<Arc<MpiTransport>> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| {
                Error::Config("MPI was initialised already by someone else than tessera".into())
            })?;
        let world = universe.world();
        let size = world.size() as usize;
        let rank = world.rank() as usize;
        let library = mpi::environment::library_version()
            .map(|v| v.lines().next().unwrap_or("").trim().to_string())
            .unwrap_or_else(|_| "MPI".into());
        // Keep the universe for the exit handler before anything can fail, so MPI is
        // finalised on every path.
        *UNIVERSE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Held {
            _universe: universe,
        });
        // SAFETY: `atexit` registers a plain `extern "C" fn()` with no captured state;
        // it runs once, on normal process exit, after `main` returns.
        unsafe {
            atexit(finalize_at_exit);
        }
        if threading != Threading::Multiple {
            return Err(Error::Config(format!(
                "{library} provides {threading:?} threading; tessera's mpi scheduler sends from worker threads and needs MPI_THREAD_MULTIPLE (Open MPI and MPICH provide it)"
            )));
        }
        crate::launch::check(size, |k| std::env::var(k).ok())?;
        crate::signals::install(rank, size);
        let comm = world.duplicate();
        Ok(Arc::new(MpiTransport {
            comm: Comm(comm),
            rank,
            size,
            library,
            sending: (0..size).map(|_| Mutex::new(())).collect(),
            receiving: Mutex::new(()),
        }))
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn describe(&self) -> String {
        format!("MPI ({}), {} ranks", self.library, self.size)
    }

    fn send(&self, to: usize, tag: u64, payload: &[u8]) -> Result<()> {
        let lock = self.sending.get(to).ok_or_else(|| {
            Error::Internal(format!("send to rank {to} of a world of {}", self.size))
        })?;
        let _one_at_a_time = lock.lock().unwrap_or_else(|e| e.into_inner());
        let dest = self.comm.0.process_at_rank(to as i32);
        // A short payload rides in the header's message; a long one follows in pieces
        // straight from the caller's buffer, never copied.
        let inline = if payload.len() <= INLINE {
            payload.len()
        } else {
            0
        };
        let mut head = Vec::with_capacity(HEADER + inline);
        head.extend_from_slice(&tag.to_le_bytes());
        head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        head.extend_from_slice(&payload[..inline]);
        dest.send_with_tag(&head[..], FIRST);
        for piece in payload[inline..].chunks(PIECE) {
            dest.send_with_tag(piece, REST);
        }
        Ok(())
    }

    fn recv(&self, wait: Duration) -> Result<Option<Message>> {
        let _one_receiver = self.receiving.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = Instant::now() + wait;
        let mut nap = Duration::from_micros(20);
        let (msg, status) = loop {
            if let Some(m) = self
                .comm
                .0
                .any_process()
                .immediate_matched_probe_with_tag(FIRST)
            {
                break m;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(nap.min(left));
            nap = (nap * 2).min(Duration::from_millis(1));
        };
        let from = status.source_rank();
        let count = status.count(u8::equivalent_datatype());
        let count = usize::try_from(count).map_err(|_| {
            Error::Internal(format!("MPI message of {count} bytes from rank {from}"))
        })?;
        let mut head = vec![0u8; count];
        msg.matched_receive_into(&mut head[..]);
        if count < HEADER {
            return Err(Error::Distributed {
                rank: from as usize,
                detail: format!("sent a {count}-byte message, shorter than tessera's header"),
            });
        }
        let tag = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let total = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        let total = usize::try_from(total).map_err(|_| Error::Distributed {
            rank: from as usize,
            detail: format!("announced a message of {total} bytes"),
        })?;
        let mut payload = head.split_off(HEADER);
        if total > payload.len() {
            let mut at = payload.len();
            payload.resize(total, 0);
            let src = self.comm.0.process_at_rank(from);
            while at < total {
                let n = (total - at).min(PIECE);
                src.receive_into_with_tag(&mut payload[at..at + n], REST);
                at += n;
            }
        }
        Ok(Some(Message {
            from: from as usize,
            tag,
            payload,
        }))
    }

    fn abort(&self, code: i32) {
        self.comm.0.abort(code)
    }
}

fn open() -> Result<Arc<dyn Transport>> {
    Ok(MpiTransport::open()?)
}

tessera_core::inventory::submit! {
    TransportFactory { scheduler: "mpi", open }
}

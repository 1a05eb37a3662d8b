//! # tessera-runtime: what the engines share at run time
//!
//! The array and dataframe engines run their plans on the same machinery, and no backend
//! needs any of it, so it lives here rather than in the protocol (`tessera-core`), whose
//! crate a backend author depends on:
//!
//! - [`pool`]: one rayon pool per thread count, shared by every scheduler of a process, and
//!   the panic boundary of a task run on it;
//! - [`allocator`]: the glibc `malloc` setting the first pool applies (`tune-allocator`);
//! - [`cluster`]: the seam between the ranks of a job (the [`cluster::Transport`] trait a
//!   transport such as `tessera-mpi` implements, epochs, collectives, the watchdog, the
//!   decisions every rank must agree on), and [`cluster::local`], ranks as threads of one
//!   process for tests and examples;
//! - [`cancel`]: the token a caller cancels a running computation with (Ctrl-C in Python),
//!   read at every task boundary;
//! - [`spill`]: the files a plan over `memory-limit` writes what it keeps to (LZ4 frames
//!   under a per-process directory, read back as untrusted bytes).
//!
//! Configuration (`num-threads`, `scheduler`, `distributed.timeout`, `spill-dir`, ...) is
//! `tessera-config`'s and the error type `tessera-core`'s; every layer reads both.

pub mod allocator;
pub mod cancel;
pub mod cluster;
pub mod pool;
pub mod spill;

//! # tessera-mpi: the `mpi` scheduler's transport
//!
//! With the `mpi` feature, this crate registers a [`tessera_runtime::cluster::Transport`]
//! over MPI (the `mpi` crate, rsmpi) for `scheduler = "mpi"`. Nothing else changes in a
//! program: every rank of `mpirun -n P ./program` (or `srun -n P ./program`) runs it, the
//! engines place each task on one rank by an owner rule, and chunks cross ranks as bytes
//! over a duplicate of `MPI_COMM_WORLD` (so a program's own MPI traffic never meets
//! tessera's).
//!
//! MPI is opened on the first distributed plan, with `MPI_THREAD_MULTIPLE` (worker
//! threads send while one thread receives), and finalised when the process exits. Before
//! anything runs, the world MPI reports is checked against what the launcher said
//! ([`launch`]): a binary started without a launcher, or by another MPI's launcher (which
//! silently makes every rank a world of one), is refused with a message that says what to
//! do.
//!
//! A rank that aborts, and the ranks the launcher then stops, each say so on stderr in
//! tessera's words before they end (`signals.rs`, with the `mpi` feature).
//!
//! Without the feature the crate still builds (no MPI needed) and keeps the launch checks,
//! so `cargo test --workspace` runs everywhere.

pub mod launch;
#[cfg(feature = "mpi")]
mod signals;
#[cfg(feature = "mpi")]
mod transport;

#[cfg(feature = "mpi")]
pub use transport::MpiTransport;

//! # tessera-array: lazy chunked arrays
//!
//! The array engine above the protocol (`tessera-core`): the user API ([`Array`],
//! [`RandomState`], [`Index`]) that builds a lazy graph, the lowering that turns the arrays
//! asked for into one task per chunk with every blockwise chain fused into one
//! [`Program`](tessera_core::program::Program) (slices pushed into their sources), the
//! schedulers that run those tasks with early release of intermediates and a memory budget
//! ([`exec`]), `explain()`, and chunked linear algebra ([`linalg`]: TSQR, SVD,
//! `svd_compressed`, `lstsq`, norms).
//!
//! Everything here talks to chunks only through [`ArrayBackend`](tessera_core::ArrayBackend),
//! so it runs unchanged on any registered backend.

pub mod array;
mod block_io;
mod codec;
pub mod exec;
mod graph;
pub mod linalg;
mod stored;

pub use array::{Array, BlockSink, BlockSource, Index, RandomState, StoreSummary};

// The protocol's modules under the names this crate's code uses (`crate::dtype`, ...).
use tessera_core::{
    backend, chunks, config, dispatch_host, dtype, error, fallback, host, program, random, registry,
};

//! Tests that change process-wide configuration with `tessera::config::set` (scheduler,
//! split-every, memory-limit, optimize, the dataframe backend).
//!
//! A scoped override is process-wide, like `dask.config.set`, so a test that sets one
//! would change what a concurrently running test sees. These tests live in their own
//! binary and each holds [`serial`] for its whole run.

use std::sync::{Mutex, MutexGuard};

#[path = "../common/mod.rs"]
mod common;

mod arrays;
mod frame_config;
mod large_chunks;
mod linalg_memory;
mod memory_limit;
mod object_store;
mod optimizer;
mod progress;
mod spill;

/// Serialises the tests of this binary (a failed test's poisoned lock is taken anyway).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

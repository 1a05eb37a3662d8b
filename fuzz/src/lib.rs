//! # tessera-fuzz
//!
//! Fuzzing for everything tessera reads that it did not write: CSV files, `.npy` files,
//! Zarr metadata and chunks, the dataframe protocol's wire messages, and the raw C values
//! a plugin hands the host. A bad input must give a typed error; a panic is a bug, even one
//! tessera's task boundary catches (the runner's panic hook counts those too).
//!
//! Why a seeded mutator and not `cargo fuzz`: libFuzzer needs a nightly toolchain and
//! sanitizer runtimes, and CI machines have the stable one only. The mutator here
//! ([`mutate`]) makes libFuzzer's edits — bit flips, interesting bytes and numbers, inserts,
//! deletes, duplicated and spliced ranges, format tokens — from a corpus of valid inputs
//! built by the formats' own writers, so a run is reproducible from its seed on every
//! machine. It is not coverage-guided; the corpus and the dictionaries stand in for that.
//!
//! - [`targets`]: the five [`Target`]s and their corpora;
//! - [`mod@run`]: the runner and its [`Report`];
//! - the `tessera-fuzz` binary: `cargo run --release -p tessera-fuzz -- --inputs 1000000`
//!   runs every target and prints a JSON line per target; `tests/fuzz.rs` runs a short
//!   pass of each in CI.

pub mod mutate;
pub mod run;
pub mod targets;

pub use run::{run, Report};
pub use targets::{Scratch, Target};

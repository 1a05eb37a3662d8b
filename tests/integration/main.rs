//! The facade's integration tests, one binary with a module per area (linking one
//! executable instead of one per file keeps a cold `cargo test` quick on small machines).
//!
//! None of these tests changes process-wide configuration; those that must live in
//! `tests/global_config`, where they run one at a time.

#[path = "../common/mod.rs"]
mod common;

mod array_io;
mod arrays;
mod cancel;
mod config_file;
mod cuda_unavailable;
mod distributed;
mod dtypes;
mod examples;
mod frame_calendar;
mod frame_categorical;
mod frame_comoments;
mod frame_group_head;
mod frame_io;
mod frame_plugins;
mod frame_quantiles;
mod frame_relational;
mod frame_reshape;
mod frame_windows;
mod frames;
mod linalg;
mod matmul_streaming;
mod plugins;
mod profile;
mod symmetry;

//! # tessera-observe
//!
//! Watching a computation run. The array and dataframe engines report each task they
//! finish to a [`Stage`]; this crate turns that into a progress bar on stderr when a
//! person is watching (config key `progress`: `auto`, `always`, `never`) and into calls of
//! the application's own callback ([`set_progress_callback`]) so a notebook, a GUI or a
//! service can show progress its own way.
//!
//! A crate of its own so that the protocol (`tessera-core`) stays free of terminal code,
//! and both engines share one definition of what progress is.

pub mod progress;

pub use progress::{set_progress_callback, Progress, ProgressCallback, ProgressMode, Stage};

//! # tessera-observe
//!
//! Watching a computation run. The array and dataframe engines report each task they
//! finish to a [`Stage`]; this crate turns that into a progress bar on stderr when a
//! person is watching (config key `progress`: `auto`, `always`, `never`), into calls of
//! the application's own callback ([`set_progress_callback`]) so a notebook, a GUI or a
//! service can show progress its own way, and, inside [`profile::record`], into a
//! [`Profile`]: a Chrome trace and an HTML report of every task and of memory over time.
//!
//! A crate of its own so that the protocol (`tessera-core`) stays free of terminal code,
//! and both engines share one definition of what progress is.

pub mod profile;
pub mod progress;
mod timing;

pub use profile::{MemorySample, Profile, TaskSpan};
pub use progress::{set_progress_callback, Progress, ProgressCallback, ProgressMode, Stage};
pub use timing::TaskTiming;

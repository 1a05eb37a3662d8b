//! Progress of a running computation: a bar on stderr when a person is watching, and the
//! application's callback.
//!
//! An engine opens a [`Stage`] for each stage of a plan it runs (the array engine has
//! one, `compute`; a dataframe plan has one per scan, shuffle, aggregation, join or sort)
//! and calls [`Stage::task_done`] as tasks finish, from any worker thread. The stage keeps
//! counters in atomics and reports at most ten times a second:
//!
//! - to the callback set with [`set_progress_callback`], if any, with a [`Progress`]
//!   (tasks done of total, bytes produced, elapsed time, rate and ETA), and once more when
//!   the stage finishes;
//! - to stderr, depending on the `progress` config key: `never` draws nothing; `auto`
//!   (the default) draws an `indicatif` bar once the stage has run for a second, and only
//!   when stderr is a terminal; `always` draws the bar on a terminal and, elsewhere (a CI
//!   log), a plain line at most once a second.
//!
//! The cost when nobody watches is two atomic adds and a clock read per task.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tessera_core::{Error, Result};

use crate::timing::TaskTiming;

/// When progress is drawn on stderr (config key `progress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar once a stage has run for [`DELAY`], when stderr is a terminal.
    Auto,
    /// Always: a bar on a terminal, plain lines elsewhere.
    Always,
    /// Never.
    Never,
}

impl ProgressMode {
    /// `auto`, `always` or `never`.
    pub fn parse(s: &str) -> Option<ProgressMode> {
        match s.trim() {
            "auto" => Some(ProgressMode::Auto),
            "always" => Some(ProgressMode::Always),
            "never" => Some(ProgressMode::Never),
            _ => None,
        }
    }

    /// The configured mode.
    ///
    /// # Errors
    /// [`Error::Config`] when the `progress` key holds something else.
    pub fn from_config() -> Result<ProgressMode> {
        let (v, _) = tessera_core::config::get("progress")?;
        ProgressMode::parse(&v).ok_or_else(|| {
            Error::Config(format!(
                "progress = '{v}': expected `auto`, `always` or `never`"
            ))
        })
    }

    /// Whether a stage that has run for `elapsed` draws on stderr, given whether stderr
    /// is a terminal.
    pub fn draws(self, terminal: bool, elapsed: Duration) -> bool {
        match self {
            ProgressMode::Never => false,
            ProgressMode::Always => true,
            ProgressMode::Auto => terminal && elapsed >= DELAY,
        }
    }
}

/// How long a stage runs before `auto` draws its bar: short computations print nothing.
pub const DELAY: Duration = Duration::from_secs(1);

/// The least time between two reports to the callback or the bar.
const REPORT_EVERY: Duration = Duration::from_millis(100);

/// The least time between two plain lines (`always` without a terminal).
const LINE_EVERY: Duration = Duration::from_secs(1);

/// One report of a stage's progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The stage's name (`compute`, `scan`, `shuffle`, `aggregate`, `join`, `sort`, ...).
    pub stage: String,
    /// Tasks finished.
    pub done: usize,
    /// Tasks in the stage.
    pub total: usize,
    /// Bytes of the results produced so far.
    pub bytes: u64,
    /// Time since the stage started.
    pub elapsed: Duration,
    /// True on the last report of the stage.
    pub finished: bool,
}

impl Progress {
    /// Tasks per second so far.
    pub fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.done as f64 / s
        } else {
            0.0
        }
    }

    /// The time left at the rate so far, once a task has finished.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.rate();
        (self.done > 0 && rate > 0.0).then(|| {
            Duration::from_secs_f64((self.total - self.done.min(self.total)) as f64 / rate)
        })
    }

    /// One line: `compute: 120/400 tasks, 1.20 GiB, 55.0 tasks/s, ETA 5s` (no bytes
    /// where the stage does not count them).
    pub fn line(&self) -> String {
        let eta = self
            .eta()
            .map_or(String::new(), |e| format!(", ETA {}s", e.as_secs()));
        let bytes = if self.bytes > 0 {
            format!(", {}", tessera_core::chunks::format_bytes(self.bytes))
        } else {
            String::new()
        };
        format!(
            "{}: {}/{} tasks{bytes}, {:.1} tasks/s{eta}",
            self.stage,
            self.done,
            self.total,
            self.rate()
        )
    }
}

/// An application's progress callback; it runs on the worker that finished a task, so it
/// should return quickly.
pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

static CALLBACK: RwLock<Option<ProgressCallback>> = RwLock::new(None);

/// Sets (or, with `None`, removes) the callback every stage reports to, process-wide;
/// returns the previous one. Stages already running keep the callback they started with.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let previous = tessera_observe::set_progress_callback(Some(Arc::new(move |p| {
///     log.lock().unwrap().push((p.done, p.total));
/// })));
/// let stage = tessera_observe::Stage::start("compute", 3).unwrap();
/// for _ in 0..3 {
///     stage.task_done(8);
/// }
/// stage.finish();
/// tessera_observe::set_progress_callback(previous);
/// assert_eq!(seen.lock().unwrap().last(), Some(&(3, 3)));
/// ```
pub fn set_progress_callback(cb: Option<ProgressCallback>) -> Option<ProgressCallback> {
    let mut slot = CALLBACK.write().unwrap_or_else(|p| p.into_inner());
    std::mem::replace(&mut *slot, cb)
}

/// One stage of a running plan (see the module docs).
pub struct Stage {
    name: String,
    total: usize,
    start: Instant,
    done: AtomicUsize,
    bytes: AtomicU64,
    /// Microseconds since `start` of the last report (callback or bar).
    last_report: AtomicU64,
    /// Microseconds since `start` of the last plain line.
    last_line: AtomicU64,
    /// Whether a report is being made (one at a time; others skip).
    reporting: AtomicBool,
    mode: ProgressMode,
    terminal: bool,
    callback: Option<ProgressCallback>,
    bar: Mutex<Option<ProgressBar>>,
    /// The running profile recording, if any (`crate::profile::record`).
    recorder: Option<Arc<crate::profile::Recorder>>,
}

impl Stage {
    /// Opens a stage of `total` tasks.
    ///
    /// # Errors
    /// [`Error::Config`] when the `progress` key holds something other than `auto`,
    /// `always` or `never`.
    pub fn start(name: &str, total: usize) -> Result<Stage> {
        Ok(Stage {
            name: name.to_string(),
            total,
            start: Instant::now(),
            done: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            last_report: AtomicU64::new(0),
            last_line: AtomicU64::new(0),
            reporting: AtomicBool::new(false),
            mode: ProgressMode::from_config()?,
            terminal: std::io::stderr().is_terminal(),
            callback: CALLBACK.read().unwrap_or_else(|p| p.into_inner()).clone(),
            bar: Mutex::new(None),
            recorder: crate::profile::active_here(),
        })
    }

    /// Records a finished task with its timing: progress as [`Stage::task_done`], and a
    /// span in the running profile recording, if there is one.
    pub fn task_finished(&self, t: TaskTiming) {
        if let Some(r) = &self.recorder {
            r.task(&self.name, &t);
        }
        self.task_done(t.bytes_out);
    }

    /// Records a finished task that produced `bytes`, and reports if it is time to.
    pub fn task_done(&self, bytes: u64) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if self.callback.is_none() && self.mode == ProgressMode::Never {
            return;
        }
        let now = self.start.elapsed().as_micros() as u64;
        let last = self.last_report.load(Ordering::Relaxed);
        if now.saturating_sub(last) < REPORT_EVERY.as_micros() as u64 {
            return;
        }
        if self
            .last_report
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.report(false);
        }
    }

    fn snapshot(&self, finished: bool) -> Progress {
        Progress {
            stage: self.name.clone(),
            done: self.done.load(Ordering::Relaxed),
            total: self.total,
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed: self.start.elapsed(),
            finished,
        }
    }

    fn report(&self, finished: bool) {
        if self.reporting.swap(true, Ordering::Acquire) && !finished {
            return;
        }
        let p = self.snapshot(finished);
        if let Some(cb) = &self.callback {
            cb(&p);
        }
        if self.mode.draws(self.terminal, p.elapsed) {
            if self.terminal {
                self.draw_bar(&p);
            } else {
                self.draw_line(&p);
            }
        }
        self.reporting.store(false, Ordering::Release);
    }

    fn draw_bar(&self, p: &Progress) {
        let mut slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let bar = slot.get_or_insert_with(|| {
            let bar =
                ProgressBar::with_draw_target(Some(p.total as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} tasks {msg} ({per_sec}, ETA {eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(self.name.clone());
            bar
        });
        bar.set_position(p.done as u64);
        if p.bytes > 0 {
            bar.set_message(tessera_core::chunks::format_bytes(p.bytes));
        }
        if p.finished {
            bar.finish_and_clear();
        }
    }

    fn draw_line(&self, p: &Progress) {
        let now = p.elapsed.as_micros() as u64;
        let last = self.last_line.load(Ordering::Relaxed);
        if !p.finished && now.saturating_sub(last) < LINE_EVERY.as_micros() as u64 {
            return;
        }
        self.last_line.store(now, Ordering::Relaxed);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "tessera progress: {}", p.line());
    }

    /// Closes the stage: a last report (the callback sees `finished`), the bar cleared.
    pub fn finish(&self) {
        self.report(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_decide_when_to_draw() {
        assert_eq!(ProgressMode::parse(" auto"), Some(ProgressMode::Auto));
        assert_eq!(ProgressMode::parse("always"), Some(ProgressMode::Always));
        assert_eq!(ProgressMode::parse("never"), Some(ProgressMode::Never));
        assert_eq!(ProgressMode::parse("sometimes"), None);
        let (short, long) = (Duration::from_millis(200), Duration::from_secs(2));
        assert!(!ProgressMode::Auto.draws(true, short));
        assert!(ProgressMode::Auto.draws(true, long));
        assert!(!ProgressMode::Auto.draws(false, long));
        assert!(ProgressMode::Always.draws(false, short));
        assert!(!ProgressMode::Never.draws(true, long));
    }

    #[test]
    fn reports_count_rate_and_eta() {
        let p = Progress {
            stage: "compute".into(),
            done: 10,
            total: 40,
            bytes: 3 << 20,
            elapsed: Duration::from_secs(2),
            finished: false,
        };
        assert_eq!(p.rate(), 5.0);
        assert_eq!(p.eta(), Some(Duration::from_secs(6)));
        assert_eq!(
            p.line(),
            "compute: 10/40 tasks, 3.00 MiB, 5.0 tasks/s, ETA 6s"
        );
        let none = Progress {
            done: 0,
            bytes: 0,
            ..p
        };
        assert_eq!(none.eta(), None);
        assert_eq!(none.line(), "compute: 0/40 tasks, 0.0 tasks/s");
    }
}

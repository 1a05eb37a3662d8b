//! A profile of one computation: every task's start, end, thread, kind and bytes, and the
//! memory in use over time, written as Chrome trace-event JSON (opens in Perfetto and
//! `chrome://tracing`) and as a self-contained HTML report a person opens in a browser.
//!
//! [`record`] runs a closure with a recorder installed; every [`Stage`](crate::Stage)
//! opened while it runs reports its tasks to it ([`Stage::task_finished`](crate::Stage::task_finished)).
//! The engines wrap it as `Array::compute_with_profile` and `DataFrame::compute_with_profile`,
//! which add the plan's `explain()` text. One recording at a time: a second one waits.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tessera_core::{Error, Result};

/// One finished task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpan {
    /// The stage it ran in (`compute`, `aggregate: partial`, ...).
    pub stage: String,
    /// What it did: `generate`, `program`, `reduce`, `matmul`, `io`, `shuffle`, ...
    pub kind: String,
    /// A worker number (small integers, in order of first use).
    pub thread: usize,
    /// Microseconds from the start of the recording.
    pub start_us: u64,
    /// Microseconds from the start of the recording.
    pub end_us: u64,
    /// Bytes of the task's inputs (0 where the engine does not know them).
    pub bytes_in: u64,
    /// Bytes of its result (0 where the engine does not know them).
    pub bytes_out: u64,
}

/// Memory the scheduler held at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySample {
    /// Microseconds from the start of the recording.
    pub t_us: u64,
    /// Bytes of chunks held.
    pub bytes: u64,
}

/// What a recording found.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Every task, in the order they finished.
    pub spans: Vec<TaskSpan>,
    /// Memory in use after each task that reported it.
    pub memory: Vec<MemorySample>,
    /// Wall time of the recording, microseconds.
    pub wall_us: u64,
    /// The plan, as `explain()` describes it (set by the engine's wrapper).
    pub explain: String,
    /// A title for the report.
    pub title: String,
}

/// The recorder of the running [`record`] call.
pub(crate) struct Recorder {
    start: Instant,
    spans: Mutex<Vec<TaskSpan>>,
    memory: Mutex<Vec<MemorySample>>,
}

static ACTIVE: Mutex<Option<Arc<Recorder>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The recorder of the running [`record`] call, if any.
pub(crate) fn active() -> Option<Arc<Recorder>> {
    lock(&ACTIVE).clone()
}

/// The recorder of the [`record`] call running on this thread, if any: a stage belongs to
/// the recording whose closure started it, not to one another thread happens to run at the
/// same time (concurrent computes, tests running side by side).
pub(crate) fn active_here() -> Option<Arc<Recorder>> {
    if RECORDING.with(|r| r.get()) {
        active()
    } else {
        None
    }
}

/// Records work a stage does besides its tasks (writing or reading a spill file) as a
/// span of `stage` in the running recording; nothing when none runs.
pub fn side_span(stage: &str, t: crate::TaskTiming) {
    if let Some(r) = active() {
        r.task(stage, &t);
    }
}

thread_local! {
    static WORKER: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
}

impl Recorder {
    pub(crate) fn task(&self, stage: &str, t: &crate::TaskTiming) {
        let us = |i: Instant| i.saturating_duration_since(self.start).as_micros() as u64;
        let span = TaskSpan {
            stage: stage.to_string(),
            kind: t.kind.to_string(),
            thread: WORKER.with(|w| *w),
            start_us: us(t.start),
            end_us: us(Instant::now()),
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
        };
        if let Some(held) = t.held_bytes {
            lock(&self.memory).push(MemorySample {
                t_us: span.end_us,
                bytes: held,
            });
        }
        lock(&self.spans).push(span);
    }
}

thread_local! {
    /// True while this thread runs a [`record`] closure.
    static RECORDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` while recording every task of every stage it runs; returns its result and
/// the profile. Recordings take turns (the recorder is process-wide). A recording started
/// inside another on the same thread (a profiled compute inside a profiled block
/// function) runs `f` unrecorded into an empty profile: its tasks go to the outer one.
pub fn record<R>(f: impl FnOnce() -> R) -> (R, Profile) {
    if RECORDING.with(|r| r.get()) {
        return (f(), Profile::default());
    }
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = lock(&TURN);
    RECORDING.with(|r| r.set(true));
    let recorder = Arc::new(Recorder {
        start: Instant::now(),
        spans: Mutex::new(Vec::new()),
        memory: Mutex::new(Vec::new()),
    });
    *lock(&ACTIVE) = Some(recorder.clone());
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            *lock(&ACTIVE) = None;
            RECORDING.with(|r| r.set(false));
        }
    }
    let out = {
        let _clear = Clear;
        f()
    };
    let wall_us = recorder.start.elapsed().as_micros() as u64;
    let mut memory = std::mem::take(&mut *lock(&recorder.memory));
    memory.sort_by_key(|m| m.t_us);
    let profile = Profile {
        spans: std::mem::take(&mut *lock(&recorder.spans)),
        memory,
        wall_us,
        explain: String::new(),
        title: String::from("tessera profile"),
    };
    (out, profile)
}

/// Colours of task kinds in the HTML report (unknown kinds are grey).
fn colour(kind: &str) -> &'static str {
    match kind {
        "generate" => "#4e79a7",
        "program" => "#59a14f",
        "reduce" => "#f28e2b",
        "matmul" | "sketch" | "moments" => "#e15759",
        "io" | "scan" => "#76b7b2",
        "shuffle" | "partition" => "#edc948",
        "aggregate" | "join" | "sort" => "#b07aa1",
        "user function" => "#ff9da7",
        "transfer" | "assemble" => "#9c755f",
        "spill" | "unspill" => "#bab0ac",
        _ => "#8c8c8c",
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Profile {
    /// The peak of [`Profile::memory`], in bytes.
    pub fn peak_bytes(&self) -> u64 {
        self.memory.iter().map(|m| m.bytes).max().unwrap_or(0)
    }

    /// The Chrome trace-event form: one complete event (`"ph": "X"`) per task, on one
    /// track per worker, and a counter (`"ph": "C"`) for memory in use.
    pub fn chrome_trace(&self) -> serde_json::Value {
        let mut events: Vec<serde_json::Value> = Vec::with_capacity(self.spans.len() + 8);
        let threads: std::collections::BTreeSet<usize> =
            self.spans.iter().map(|s| s.thread).collect();
        events.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": {"name": self.title},
        }));
        for t in threads {
            events.push(serde_json::json!({
                "name": "thread_name", "ph": "M", "pid": 1, "tid": t,
                "args": {"name": format!("worker {t}")},
            }));
        }
        for s in &self.spans {
            events.push(serde_json::json!({
                "name": s.kind,
                "cat": s.stage,
                "ph": "X",
                "ts": s.start_us,
                "dur": s.end_us.saturating_sub(s.start_us),
                "pid": 1,
                "tid": s.thread,
                "args": {"stage": s.stage, "bytes_in": s.bytes_in, "bytes_out": s.bytes_out},
            }));
        }
        for m in &self.memory {
            events.push(serde_json::json!({
                "name": "memory in use", "ph": "C", "ts": m.t_us, "pid": 1, "tid": 0,
                "args": {"bytes": m.bytes},
            }));
        }
        serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }

    /// Writes [`Profile::chrome_trace`] to `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_chrome_trace(&self, path: &Path) -> Result<()> {
        write(path, self.chrome_trace().to_string())
    }

    /// The self-contained HTML report: a summary, the task stream (one lane per worker,
    /// a bar per task coloured by kind, its details on hover), memory in use over time,
    /// the longest tasks, and the plan. Inline SVG and CSS; no script, no network.
    pub fn html(&self) -> String {
        let wall = self.wall_us.max(1) as f64;
        let threads: Vec<usize> = {
            let mut t: Vec<usize> = self.spans.iter().map(|s| s.thread).collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        let (width, lane) = (1000.0, 22.0);
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\
             body{{font-family:system-ui,sans-serif;margin:24px;color:#222}}\
             svg{{background:#fafafa;border:1px solid #ddd}}\
             table{{border-collapse:collapse}}td,th{{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}}\
             pre{{background:#f4f4f4;padding:8px;overflow-x:auto}}\
             .key{{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}}\
             </style></head><body>\n<h1>{}</h1>\n",
            escape(&self.title),
            escape(&self.title)
        );
        let _ = writeln!(
            h,
            "<p id=\"summary\">{} tasks on {} workers in {:.3} s; peak memory held by the scheduler {}.</p>",
            self.spans.len(),
            threads.len(),
            wall / 1e6,
            tessera_core::chunks::format_bytes(self.peak_bytes())
        );
        // Task stream.
        let height = lane * threads.len().max(1) as f64 + 20.0;
        let _ = writeln!(
            h,
            "<h2>Task stream</h2>\n<svg id=\"timeline\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\">",
            width + 80.0,
            width + 80.0
        );
        for (i, t) in threads.iter().enumerate() {
            let _ = writeln!(
                h,
                "<text x=\"4\" y=\"{}\" font-size=\"11\">worker {t}</text>",
                i as f64 * lane + 15.0
            );
        }
        let mut kinds: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
        for s in &self.spans {
            let row = threads.iter().position(|t| *t == s.thread).unwrap_or(0);
            let x = 80.0 + s.start_us as f64 / wall * width;
            let w = ((s.end_us.saturating_sub(s.start_us)) as f64 / wall * width).max(0.5);
            let _ = writeln!(
                h,
                "<rect class=\"task\" data-kind=\"{}\" x=\"{x:.2}\" y=\"{:.1}\" width=\"{w:.2}\" height=\"{}\" fill=\"{}\"><title>{} ({}): {:.3} ms, in {}, out {}</title></rect>",
                escape(&s.kind),
                row as f64 * lane + 3.0,
                lane - 6.0,
                colour(&s.kind),
                escape(&s.kind),
                escape(&s.stage),
                (s.end_us - s.start_us.min(s.end_us)) as f64 / 1e3,
                tessera_core::chunks::format_bytes(s.bytes_in),
                tessera_core::chunks::format_bytes(s.bytes_out)
            );
            let e = kinds.entry(&s.kind).or_default();
            e.0 += 1;
            e.1 += s.end_us.saturating_sub(s.start_us);
        }
        h.push_str("</svg>\n<p id=\"legend\">");
        for (k, (n, us)) in &kinds {
            let _ = write!(
                h,
                "<span class=\"key\" style=\"background:{}\"></span>{} ({n} tasks, {:.1} ms)",
                colour(k),
                escape(k),
                *us as f64 / 1e3
            );
        }
        h.push_str("</p>\n");
        // Memory over time.
        let (mw, mh) = (width + 80.0, 160.0);
        let peak = self.peak_bytes().max(1) as f64;
        let mut points = String::from("80,150 ");
        for m in &self.memory {
            let x = 80.0 + m.t_us as f64 / wall * width;
            let y = 150.0 - m.bytes as f64 / peak * 140.0;
            let _ = write!(points, "{x:.2},{y:.2} ");
        }
        let _ = writeln!(
            h,
            "<h2>Memory in use</h2>\n<svg id=\"memory\" width=\"{mw}\" height=\"{mh}\" viewBox=\"0 0 {mw} {mh}\">\
             <text x=\"4\" y=\"15\" font-size=\"11\">{}</text><text x=\"4\" y=\"150\" font-size=\"11\">0</text>\
             <polyline id=\"memory-line\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
            tessera_core::chunks::format_bytes(self.peak_bytes()),
            points.trim_end()
        );
        // Longest tasks.
        let mut top: Vec<&TaskSpan> = self.spans.iter().collect();
        top.sort_by_key(|s| std::cmp::Reverse(s.end_us.saturating_sub(s.start_us)));
        h.push_str("<h2>Longest tasks</h2>\n<table id=\"top-tasks\"><tr><th>kind</th><th>stage</th><th>worker</th><th>start (ms)</th><th>duration (ms)</th><th>in</th><th>out</th></tr>\n");
        for s in top.iter().take(15) {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
                escape(&s.kind),
                escape(&s.stage),
                s.thread,
                s.start_us as f64 / 1e3,
                s.end_us.saturating_sub(s.start_us) as f64 / 1e3,
                tessera_core::chunks::format_bytes(s.bytes_in),
                tessera_core::chunks::format_bytes(s.bytes_out)
            );
        }
        h.push_str("</table>\n");
        let _ = writeln!(
            h,
            "<h2>Plan</h2>\n<pre id=\"explain\">{}</pre>\n</body></html>",
            escape(&self.explain)
        );
        h
    }

    /// Writes [`Profile::html`] to `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_html(&self, path: &Path) -> Result<()> {
        write(path, self.html())
    }
}

fn write(path: &Path, text: String) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stage, TaskTiming};

    #[test]
    fn a_recording_sees_every_task_of_its_stages_and_writes_both_forms() {
        let (sum, mut p) = record(|| {
            let stage = Stage::start("compute", 3).unwrap();
            let mut sum = 0;
            for i in 0..3u64 {
                let start = Instant::now();
                sum += i;
                stage.task_finished(TaskTiming {
                    kind: if i == 2 { "reduce" } else { "program" },
                    start,
                    bytes_in: 8 * i,
                    bytes_out: 8,
                    held_bytes: Some(8 * (i + 1)),
                });
            }
            stage.finish();
            sum
        });
        assert_eq!(sum, 3);
        assert_eq!(p.spans.len(), 3);
        assert_eq!(p.peak_bytes(), 24);
        assert!(p
            .spans
            .iter()
            .all(|s| s.end_us >= s.start_us && s.end_us <= p.wall_us));
        p.explain = "a <plan> & more".into();
        let trace = p.chrome_trace();
        let events = trace["traceEvents"].as_array().unwrap();
        let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(complete.len(), 3);
        for e in &complete {
            for key in ["name", "ts", "dur", "pid", "tid"] {
                assert!(!e[key].is_null(), "{key} missing in {e}");
            }
        }
        assert_eq!(events.iter().filter(|e| e["ph"] == "C").count(), 3);
        let html = p.html();
        assert_eq!(html.matches("<rect class=\"task\"").count(), 3);
        assert!(html.contains("id=\"memory-line\""));
        assert!(html.contains("a &lt;plan&gt; &amp; more"));
        // Outside a recording, stages record nothing.
        let (_, empty) = record(|| ());
        assert!(empty.spans.is_empty());
        // A recording inside a recording does not deadlock; the outer one keeps the tasks.
        let ((_, inner), outer) = record(|| {
            record(|| {
                let stage = Stage::start("inner", 1).unwrap();
                stage.task_finished(TaskTiming {
                    kind: "program",
                    start: Instant::now(),
                    bytes_in: 0,
                    bytes_out: 0,
                    held_bytes: None,
                });
                stage.finish();
            })
        });
        assert!(inner.spans.is_empty());
        assert_eq!(outer.spans.len(), 1);
    }
}

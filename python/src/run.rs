//! Running a computation from Python: without the GIL, and cancellable with Ctrl-C.
//!
//! [`detached`] runs the work on a thread of its own inside a
//! [`CancelToken`] scope while the calling thread, the
//! GIL released, waits for it in slices of 20 ms and asks Python between slices whether
//! a signal arrived (`PyErr_CheckSignals`, which runs Python's SIGINT handler). On
//! `KeyboardInterrupt` it cancels the token: the engines start no further task, the
//! running ones finish (one chunk or partition each), and the `KeyboardInterrupt` is raised
//! once the work thread has ended — so nothing keeps running behind the user's back and the
//! interpreter is usable at once.

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use tessera::cancel::CancelToken;

use crate::errors::to_py;

/// How often the waiting thread looks for a signal.
const POLL: Duration = Duration::from_millis(20);

/// Runs `work` without the GIL on a thread of its own, cancelled by Ctrl-C (see the
/// module docs).
///
/// # Errors
/// `work`'s error as a Python exception, or `KeyboardInterrupt` when interrupted.
pub fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> tessera::Result<T> + Send,
{
    let token = CancelToken::new();
    std::thread::scope(|s| {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        // A receiver is not `Sync`; the closures the GIL is released for borrow it.
        let done_rx = Mutex::new(done_rx);
        let wait = |timeout: Option<std::time::Duration>| -> bool {
            let rx = done_rx.lock().unwrap_or_else(|e| e.into_inner());
            match timeout {
                None => {
                    let _ = rx.recv();
                    true
                }
                Some(t) => !matches!(rx.recv_timeout(t), Err(mpsc::RecvTimeoutError::Timeout)),
            }
        };
        let handle = std::thread::Builder::new()
            .name("tessera-compute".into())
            .spawn_scoped(s, {
                let token = token.clone();
                move || {
                    let out = tessera::error::catch_panic(
                        || token.scope(work),
                        |message| tessera::Error::Panicked {
                            task: "the compute".into(),
                            message,
                        },
                    );
                    let _ = done_tx.send(());
                    out
                }
            })
            .map_err(|e| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "could not start the compute thread: {e}"
                ))
            })?;
        let mut interrupted = None;
        loop {
            let finished = py.detach(|| wait(Some(POLL)));
            if finished {
                break;
            }
            if let Err(e) = py.check_signals() {
                token.cancel();
                interrupted = Some(e);
                // Wait for the running tasks to finish; the work returns `Cancelled`.
                py.detach(|| wait(None));
                break;
            }
        }
        let out = py.detach(|| handle.join());
        if let Some(e) = interrupted {
            return Err(e);
        }
        match out {
            Ok(r) => r.map_err(to_py),
            Err(_) => Err(to_py(tessera::Error::Internal(
                "the compute thread ended without a result".into(),
            ))),
        }
    })
}

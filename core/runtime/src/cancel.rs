//! Cancelling a running computation from outside it.
//!
//! A caller that may need to stop a `compute()` half-way — Python's Ctrl-C, a service's
//! request timeout — makes a [`CancelToken`], runs the computation inside
//! [`CancelToken::scope`], and calls [`CancelToken::cancel`] from another thread. The
//! engines read the token at their task boundaries: the array scheduler before each task,
//! [`parallel_map`](crate::pool::parallel_map) (every dataframe stage) before each
//! partition's task. A task already running finishes (tasks are short: one chunk or one
//! partition), no new one starts, and the computation returns
//! [`Error::Cancelled`] once the running tasks are done;
//! everything it held is dropped as on any other error, so the process stays usable.
//!
//! The token travels with the work, not with the process: [`current`] is the token of the
//! calling thread's scope, a stage carries it into the tasks it spawns on the worker pool
//! (so a stage started inside a task sees it too), and two computations on two threads
//! with two tokens cancel independently.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tessera_core::error::{Error, Result};

/// A flag that stops the computations running in its [`scope`](CancelToken::scope).
/// Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

thread_local! {
    static CURRENT: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Asks every computation in this token's scope to stop at its next task boundary.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `Err(Error::Cancelled)` once cancelled.
    ///
    /// # Errors
    /// [`Error::Cancelled`] when [`cancel`](CancelToken::cancel) was called.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Runs `f` with this token as the calling thread's [`current`] one (restoring the
    /// previous one after, also when `f` panics).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<CancelToken>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }
}

/// The token of the innermost [`CancelToken::scope`] on this thread, if any.
pub fn current() -> Option<CancelToken> {
    CURRENT.with(|c| c.borrow().clone())
}

/// `Err(Error::Cancelled)` when this thread's current token was cancelled (`Ok` outside
/// any scope).
///
/// # Errors
/// [`Error::Cancelled`] when the current token was cancelled.
pub fn check_current() -> Result<()> {
    CURRENT.with(|c| c.borrow().as_ref().map_or(Ok(()), CancelToken::check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sets_and_restores_the_current_token() {
        assert!(current().is_none());
        let outer = CancelToken::new();
        let inner = CancelToken::new();
        outer.scope(|| {
            inner.scope(|| {
                inner.cancel();
                assert!(matches!(check_current(), Err(Error::Cancelled)));
            });
            assert!(check_current().is_ok(), "the outer token is not cancelled");
        });
        assert!(current().is_none());
        assert!(check_current().is_ok());
    }

    #[test]
    fn the_token_is_restored_after_a_panic() {
        let t = CancelToken::new();
        let r = std::panic::catch_unwind(|| t.scope(|| panic!("inside")));
        assert!(r.is_err());
        assert!(current().is_none());
    }
}

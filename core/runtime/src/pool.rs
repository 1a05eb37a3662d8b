//! The worker pool that the array and dataframe schedulers share.
//!
//! One rayon pool per thread count (`num-threads` in config, `0` meaning one per core),
//! started on first use and kept for the life of the process, so a program that alternates
//! array and frame work, or computes many small plans, does not start threads per call.
//! [`parallel_map`] is the frame engine's stage runner and honours `scheduler`:
//! `single-threaded` runs in order on the calling thread.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use tessera_core::config::SchedulerKind;
use tessera_core::error::{Error, Result};

static POOLS: LazyLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The shared pool of `threads` workers (threads named `tessera-worker-N`), started on
/// first use.
///
/// # Errors
/// [`Error::Internal`] when the operating system refuses to start the threads.
pub fn worker_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    crate::allocator::tune();
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&threads) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("tessera-worker-{i}"))
            .build()
            .map_err(|e| Error::Internal(format!("cannot start {threads} worker threads: {e}")))?,
    );
    pools.insert(threads, p.clone());
    Ok(p)
}

/// The number of workers the configuration asks for: `num-threads`, or the machine's
/// available parallelism when it is `0`.
///
/// # Errors
/// A [`Error::Config`] when `num-threads` is not a valid value.
pub fn worker_threads() -> Result<usize> {
    let n = tessera_core::config::num_threads()?;
    Ok(if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
    })
}

/// Runs `f(0..n)` under the configured scheduler — in order on the calling thread for
/// `single-threaded`, on the worker pool for `threads` — and returns the results in index
/// order, or the first error. The dataframe engine's stages use it.
///
/// # Errors
/// The first error `f` returns, or a configuration error.
pub fn parallel_map<T, F>(n: usize, f: F) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize) -> Result<T> + Send + Sync,
{
    use rayon::prelude::*;
    let token = crate::cancel::current();
    let token = token.as_ref();
    match tessera_core::config::scheduler()? {
        SchedulerKind::SingleThreaded => {
            crate::allocator::tune();
            (0..n).map(|i| guarded(&f, i, token)).collect()
        }
        SchedulerKind::Threads | SchedulerKind::Mpi => {
            let pool = worker_pool(worker_threads()?)?;
            pool.install(|| {
                (0..n)
                    .into_par_iter()
                    .map(|i| guarded(&f, i, token))
                    .collect()
            })
        }
    }
}

/// `f(i)` with a panic caught at the task boundary, not started once the caller's
/// [`CancelToken`](crate::cancel::CancelToken) is cancelled, and run in that token's scope
/// (a stage the task starts sees it too).
fn guarded<T>(
    f: &(impl Fn(usize) -> Result<T> + Sync),
    i: usize,
    token: Option<&crate::cancel::CancelToken>,
) -> Result<T> {
    let Some(token) = token else {
        return caught(f, i);
    };
    token.check()?;
    token.scope(|| caught(f, i))
}

/// `f(i)` with a panic caught at the task boundary.
fn caught<T>(f: &(impl Fn(usize) -> Result<T> + Sync), i: usize) -> Result<T> {
    tessera_core::error::catch_panic(
        || f(i),
        |message| Error::Panicked {
            task: format!("task {i}"),
            message,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_map_keeps_index_order_and_returns_the_first_error() {
        let v = parallel_map(100, |i| Ok(i * 2)).unwrap();
        assert_eq!(v, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let e = parallel_map(10, |i| {
            if i == 7 {
                Err(Error::invalid("t", "seven"))
            } else {
                Ok(i)
            }
        });
        assert!(e.unwrap_err().to_string().contains("seven"));
    }

    #[test]
    fn a_panicking_task_is_an_error_naming_it() {
        let e = parallel_map(4, |i| {
            if i == 2 {
                panic!("decoder blew up");
            }
            Ok(i)
        })
        .unwrap_err();
        assert!(
            matches!(&e, Error::Panicked { task, message } if task == "task 2" && message == "decoder blew up"),
            "{e:?}"
        );
    }
}

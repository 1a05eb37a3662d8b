//! A rank's own last words. Under MPI, a rank that aborts takes the job down: the
//! launcher notices, says which process died, and ends every other rank with SIGTERM.
//! Neither side says anything of tessera's on its own, so each rank's handlers here write
//! one line to stderr first — the aborting rank that it aborted while running a plan, the
//! others that the launcher stopped them — then die of the same signal as before.
//!
//! Only async-signal-safe work happens in a handler: the lines are formatted when the
//! transport opens, and the handler writes one with `write(2)`, restores the default
//! action and raises the signal again. SIGKILL cannot be caught; a rank killed that way is
//! named by the launcher alone, and the others still say why they stopped.

#![allow(unsafe_code)]

use std::os::raw::c_int;
use std::sync::OnceLock;

/// `SIGABRT` and `SIGTERM`: the same numbers on Linux and the BSDs.
const SIGABRT: c_int = 6;
const SIGTERM: c_int = 15;
/// `SIG_DFL`.
const DEFAULT: usize = 0;

/// The lines the handlers write: on SIGABRT, on SIGTERM.
static LINES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn raise(sig: c_int) -> c_int;
    fn write(fd: c_int, buf: *const u8, count: usize) -> isize;
}

/// The line rank `rank` of `size` writes when it aborts, or (`aborted` false) when the
/// launcher stops it.
fn line(rank: usize, size: usize, aborted: bool) -> Vec<u8> {
    if aborted {
        format!(
            "tessera: rank {rank} of {size} aborted (SIGABRT) while running a plan; the \
             launcher ends the other ranks\n"
        )
    } else {
        format!(
            "tessera: rank {rank} of {size} stopped by SIGTERM from the launcher: another \
             rank ended before the plan did (the launcher names it)\n"
        )
    }
    .into_bytes()
}

extern "C" fn on_signal(sig: c_int) {
    if let Some((abort, term)) = LINES.get() {
        let l = if sig == SIGABRT { abort } else { term };
        // SAFETY: `write` is async-signal-safe; the buffer is a static, initialised before
        // the handler was installed, never freed.
        unsafe {
            write(2, l.as_ptr(), l.len());
        }
    }
    // SAFETY: `signal` and `raise` are async-signal-safe; the default action then ends the
    // process as the signal would have without this handler.
    unsafe {
        signal(sig, DEFAULT);
        raise(sig);
    }
}

/// Installs the handlers for rank `rank` of `size` (once per process).
pub(crate) fn install(rank: usize, size: usize) {
    if LINES
        .set((line(rank, size, true), line(rank, size, false)))
        .is_err()
    {
        return;
    }
    // SAFETY: `on_signal` is an `extern "C" fn(c_int)` that only makes async-signal-safe
    // calls; the previous handlers are the defaults (tessera installs these once, when MPI
    // opens, before any task runs).
    unsafe {
        signal(SIGABRT, on_signal as extern "C" fn(c_int) as usize);
        signal(SIGTERM, on_signal as extern "C" fn(c_int) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_name_the_rank_and_the_signal() {
        let a = String::from_utf8(line(1, 3, true)).unwrap();
        assert!(
            a.starts_with("tessera: rank 1 of 3 aborted (SIGABRT)"),
            "{a}"
        );
        let t = String::from_utf8(line(0, 3, false)).unwrap();
        assert!(
            t.starts_with("tessera: rank 0 of 3 stopped by SIGTERM"),
            "{t}"
        );
        assert!(a.ends_with('\n') && t.ends_with('\n'));
    }
}

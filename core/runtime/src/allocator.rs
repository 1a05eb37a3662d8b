//! Tuning glibc's `malloc` for columnar work.
//!
//! A dataframe stage allocates its column buffers (megabytes each) per batch and frees them
//! when the batch moves on. With glibc's defaults such a buffer is `mmap`ed, and freeing it
//! (or trimming the heap it came from) hands the pages back to the system, so the next batch
//! faults every page in again and the kernel zeroes it: on TPC-H Q1 at scale factor 1 that
//! is half of the query's time. Fixing the `mmap` threshold at 64 MiB and trimming only past
//! 256 MiB of free heap keeps the buffers in the process for reuse, as jemalloc and
//! mimalloc (which Polars and DuckDB ship) do by design. 64 MiB rather than glibc's dynamic
//! ceiling of 32 MiB so that a 32 MiB array chunk (2048 x 2048 float64) is reused too.
//!
//! It runs once, when the first worker pool starts, and only on Linux with glibc; the
//! `tune-allocator` key (`TESSERA_TUNE_ALLOCATOR=false`) leaves `malloc` as the program set
//! it, and a program with its own global allocator is not affected at all.

use std::sync::OnceLock;

/// Buffers up to this size come from the heap, larger ones from `mmap`.
pub const MMAP_THRESHOLD: usize = 64 << 20;

/// Free memory at the top of a heap is returned to the system only past this much.
pub const TRIM_THRESHOLD: usize = 256 << 20;

static TUNED: OnceLock<bool> = OnceLock::new();

/// Applies the tuning the first time it is called in the process, unless `tune-allocator`
/// is off; later calls do nothing. Returns whether `malloc` took the settings (false where
/// the key is off, where `malloc` is not glibc's, or where it refused them).
pub fn tune() -> bool {
    *TUNED.get_or_init(|| tessera_core::config::tune_allocator().unwrap_or(true) && apply())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn apply() -> bool {
    // SAFETY: `mallopt` only sets two of glibc's malloc parameters (no pointers are passed);
    // it is thread-safe (it takes the arena locks) and valid at any time in the process's
    // life. Both values fit a C `int`.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_takes_the_settings_once() {
        let first = tune();
        assert_eq!(
            first,
            cfg!(all(target_os = "linux", target_env = "gnu")),
            "glibc's mallopt accepts both values; elsewhere nothing is set"
        );
        assert_eq!(tune(), first, "a second call reports the first outcome");
    }

    #[test]
    fn the_key_is_a_boolean() {
        // (`true`: tests share the process, and the other one reads the key.)
        let _g = tessera_core::config::set(&[("tune-allocator", "true")]).unwrap();
        assert!(tessera_core::config::tune_allocator().unwrap());
        let e = tessera_core::config::set(&[("tune-allocator", "sometimes")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`true` or `false`"), "{e}");
    }
}

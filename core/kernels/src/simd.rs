//! Which SIMD path a multiversioned kernel takes, and a way to force each one in tests.
//!
//! Hot loops (the CPU backend's sums, Philox word generation, uniform and normal
//! transforms) are compiled three times: for AVX-512, for AVX2 with FMA, and for the
//! baseline x86-64 (or whatever the target is). [`simd_kernel!`](crate::simd_kernel)
//! writes that: the body once, three clones, and a dispatch on [`path`]. Normally `path`
//! is the best the CPU supports, detected once. Tests force each path the machine can
//! run with [`run_on`] and compare its bits with the baseline's, so a kernel that differs
//! on one instruction set is caught on any machine that has it — and [`report`] prints
//! which paths ran and which the machine could not run, past the test harness's capture.
//!
//! Forcing is process-wide: every kernel called on any thread while [`run_on`] runs takes
//! the forced path. All paths must give the same bits (that is the property under test),
//! so other tests running meanwhile are unaffected unless a path is wrong.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One compiled version of a multiversioned kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimdPath {
    /// x86-64 with AVX-512 F, DQ, VL and BW.
    Avx512,
    /// x86-64 with AVX2 and FMA.
    Avx2,
    /// The target's baseline instruction set.
    Baseline,
}

impl SimdPath {
    /// Every path, best first.
    pub const ALL: [SimdPath; 3] = [SimdPath::Avx512, SimdPath::Avx2, SimdPath::Baseline];

    /// `avx512`, `avx2`, `baseline`.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Avx512 => "avx512",
            SimdPath::Avx2 => "avx2",
            SimdPath::Baseline => "baseline",
        }
    }

    /// Whether this CPU can run the path.
    pub fn supported(self) -> bool {
        match self {
            SimdPath::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512bw")
            }
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Why the CPU cannot run the path (for skip lines).
    pub fn requirement(self) -> &'static str {
        match self {
            SimdPath::Avx512 => "an x86-64 CPU with AVX-512 F, DQ, VL and BW",
            SimdPath::Avx2 => "an x86-64 CPU with AVX2 and FMA",
            SimdPath::Baseline => "nothing",
        }
    }

    fn code(self) -> u8 {
        match self {
            SimdPath::Avx512 => 1,
            SimdPath::Avx2 => 2,
            SimdPath::Baseline => 3,
        }
    }
}

/// 0: not forced; otherwise a [`SimdPath::code`].
static FORCED: AtomicU8 = AtomicU8::new(0);

/// The best path this CPU supports, detected once.
pub fn detected() -> SimdPath {
    static BEST: OnceLock<SimdPath> = OnceLock::new();
    *BEST.get_or_init(|| {
        SimdPath::ALL
            .into_iter()
            .find(|p| p.supported())
            .unwrap_or(SimdPath::Baseline)
    })
}

/// The path kernels take now: the forced one inside [`run_on`], else [`detected`].
#[inline]
pub fn path() -> SimdPath {
    match FORCED.load(Ordering::Relaxed) {
        1 => SimdPath::Avx512,
        2 => SimdPath::Avx2,
        3 => SimdPath::Baseline,
        _ => detected(),
    }
}

fn turn() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` with every multiversioned kernel forced onto `p`; `None` (and `f` not run)
/// when this CPU cannot run `p`. Calls take turns; the previous state is restored even
/// if `f` panics.
pub fn run_on<R>(p: SimdPath, f: impl FnOnce() -> R) -> Option<R> {
    if !p.supported() {
        return None;
    }
    struct Restore(u8);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.store(self.0, Ordering::Relaxed);
        }
    }
    let _turn = turn();
    let _restore = Restore(FORCED.swap(p.code(), Ordering::Relaxed));
    Some(f())
}

/// Runs `f` on every path this CPU supports and returns each result with its path; then
/// [`report`]s which ran, for `test`.
pub fn on_every_path<R>(test: &str, mut f: impl FnMut() -> R) -> Vec<(SimdPath, R)> {
    let out: Vec<(SimdPath, R)> = SimdPath::ALL
        .into_iter()
        .filter_map(|p| run_on(p, &mut f).map(|r| (p, r)))
        .collect();
    let ran: Vec<SimdPath> = out.iter().map(|(p, _)| *p).collect();
    report(test, &ran);
    out
}

/// Prints which paths `test` ran (`simd paths: <test>: ran avx512, avx2, baseline`) and a
/// `skipped:` line for each path the CPU cannot run, straight to standard output, which
/// the test harness does not capture (`.ci/run` counts the skip lines).
pub fn report(test: &str, ran: &[SimdPath]) {
    let mut out = std::io::stdout().lock();
    let names: Vec<&str> = ran.iter().map(|p| p.name()).collect();
    let _ = writeln!(out, "simd paths: {test}: ran {}", names.join(", "));
    for p in SimdPath::ALL.into_iter().filter(|p| !ran.contains(p)) {
        let _ = writeln!(
            out,
            "skipped: {test} [{}]: this machine is not {}",
            p.name(),
            p.requirement()
        );
    }
    let _ = out.flush();
}

/// Defines a kernel compiled for every [`SimdPath`], dispatched on [`path`]: the body is
/// written once and cloned for AVX-512, AVX2 and the baseline (through `multiversion`,
/// which the calling crate depends on). Arguments are plain identifiers.
///
/// ```
/// tessera_kernels::simd_kernel! {
///     /// Sum of squares.
///     pub fn sum_sq(x: &[f64]) -> f64 {
///         x.iter().map(|v| v * v).sum()
///     }
/// }
/// let on_each = tessera_kernels::simd::on_every_path("doc", || sum_sq(&[1.0, 2.0]));
/// assert!(on_each.iter().all(|(_, s)| *s == 5.0));
/// ```
///
/// A kernel whose best shape differs per instruction set (how many independent lanes fit
/// the registers: 32 zmm, 16 ymm, 16 xmm) starts with a constant given per path, in the
/// order AVX-512, AVX2, baseline; its clones see their own value:
///
/// ```
/// tessera_kernels::simd_kernel! {
///     const WIDTH: usize = [16, 8, 4];
///     /// Sum of squares, `WIDTH` partial sums side by side.
///     pub fn sum_sq_wide(x: &[f64]) -> f64 {
///         let mut acc = [0.0; WIDTH];
///         for c in x.chunks(WIDTH) {
///             for (a, v) in acc.iter_mut().zip(c) {
///                 *a += v * v;
///             }
///         }
///         acc.iter().sum()
///     }
/// }
/// assert_eq!(sum_sq_wide(&[1.0, 2.0, 3.0]), 14.0);
/// ```
#[macro_export]
macro_rules! simd_kernel {
    (
        const $c:ident : $cty:ty = [$a512:expr, $a2:expr, $abase:expr];
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[multiversion::multiversion(targets("x86_64+avx512f+avx512dq+avx512vl+avx512bw"))]
            fn avx512($($arg: $ty),*) $(-> $ret)? {
                #[allow(dead_code)]
                const $c: $cty = $a512;
                $body
            }
            #[multiversion::multiversion(targets("x86_64+avx2+fma"))]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                #[allow(dead_code)]
                const $c: $cty = $a2;
                $body
            }
            fn baseline($($arg: $ty),*) $(-> $ret)? {
                #[allow(dead_code)]
                const $c: $cty = $abase;
                $body
            }
            match $crate::simd::path() {
                $crate::simd::SimdPath::Avx512 => avx512($($arg),*),
                $crate::simd::SimdPath::Avx2 => avx2($($arg),*),
                $crate::simd::SimdPath::Baseline => baseline($($arg),*),
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? $body:block
    ) => {
        $crate::simd_kernel! {
            const NO_PATH_CONSTANT: () = [(), (), ()];
            $(#[$meta])*
            $vis fn $name($($arg: $ty),*) $(-> $ret)? $body
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forcing_is_scoped_and_refuses_what_the_cpu_lacks() {
        assert_eq!(run_on(SimdPath::Baseline, path), Some(SimdPath::Baseline));
        for p in SimdPath::ALL {
            match run_on(p, path) {
                Some(seen) => assert_eq!(seen, p),
                None => assert!(!p.supported()),
            }
        }
        assert!(detected().supported());
    }
}

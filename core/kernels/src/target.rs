//! Whether this CPU can run the instructions this binary was compiled for.
//!
//! The workspace builds for the target's baseline (x86-64: SSE2) unless told otherwise, and
//! its hot kernels pick AVX2 or AVX-512 at run time ([`crate::simd`]); such a build runs
//! anywhere. A user who compiles for their own machine (`RUSTFLAGS="-C target-cpu=native"`
//! or `-C target-cpu=x86-64-v3`, which the README's "Building for speed" describes) lets the compiler use those
//! instructions everywhere — arrow's kernels, hashing, Parquet decoding — and gets a
//! binary that dies of `SIGILL` (an illegal instruction, no message) when carried to an
//! older CPU. [`check`] compares the features the compiler was allowed to use (`cfg!`)
//! with the ones the CPU reports (`cpuid`, through `is_x86_feature_detected!`) and names
//! what is missing, so that the registry can refuse to run on the wrong CPU with a clear
//! error before the first kernel runs, and the Python module can refuse to import.

use std::sync::OnceLock;

/// Where `cpuid` reports a feature: a leaf and sub-leaf, the register, the bit; and
/// which register state the operating system must save for it to be usable.
#[derive(Debug, Clone, Copy)]
struct Bit {
    leaf: u32,
    sub: u32,
    reg: Reg,
    bit: u32,
    state: State,
}

/// A register `cpuid` answers in.
#[derive(Debug, Clone, Copy)]
enum Reg {
    Eax,
    Ebx,
    Ecx,
    Edx,
}

/// The register state a feature needs the operating system to save on a context switch
/// (XCR0); without it the instructions fault although the CPU has them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Nothing beyond the baseline's SSE state.
    Base,
    /// `xsave` and friends: the OS must have turned XSAVE on (OSXSAVE).
    Xsave,
    /// The 256-bit YMM state (AVX and everything encoded with VEX on YMM).
    Avx,
    /// The AVX-512 opmask and ZMM state.
    Avx512,
}

const fn bit(leaf: u32, sub: u32, reg: Reg, bit: u32, state: State) -> Bit {
    Bit {
        leaf,
        sub,
        reg,
        bit,
        state,
    }
}

/// Each feature `-C target-cpu` of the x86-64 levels or of a current x86-64 CPU turns on:
/// its name, whether the compiler was allowed to use it (`cfg!`), and where `cpuid` says
/// the CPU has it (Intel's SDM, volume 2, CPUID; AMD's APM, volume 3, appendix E).
#[cfg(target_arch = "x86_64")]
macro_rules! probes {
    ($($f:tt => ($leaf:literal, $sub:literal) $reg:ident [$b:literal] $state:ident),* $(,)?) => {
        &[$(($f, cfg!(target_feature = $f), bit($leaf, $sub, Reg::$reg, $b, State::$state))),*]
    };
}

#[cfg(target_arch = "x86_64")]
const PROBES: &[(&str, bool, Bit)] = probes![
    "sse3" => (1, 0) Ecx[0] Base,
    "pclmulqdq" => (1, 0) Ecx[1] Base,
    "ssse3" => (1, 0) Ecx[9] Base,
    "fma" => (1, 0) Ecx[12] Avx,
    "cmpxchg16b" => (1, 0) Ecx[13] Base,
    "sse4.1" => (1, 0) Ecx[19] Base,
    "sse4.2" => (1, 0) Ecx[20] Base,
    "movbe" => (1, 0) Ecx[22] Base,
    "popcnt" => (1, 0) Ecx[23] Base,
    "aes" => (1, 0) Ecx[25] Base,
    "xsave" => (1, 0) Ecx[26] Xsave,
    "avx" => (1, 0) Ecx[28] Avx,
    "f16c" => (1, 0) Ecx[29] Avx,
    "rdrand" => (1, 0) Ecx[30] Base,
    "bmi1" => (7, 0) Ebx[3] Base,
    "avx2" => (7, 0) Ebx[5] Avx,
    "bmi2" => (7, 0) Ebx[8] Base,
    "avx512f" => (7, 0) Ebx[16] Avx512,
    "avx512dq" => (7, 0) Ebx[17] Avx512,
    "rdseed" => (7, 0) Ebx[18] Base,
    "adx" => (7, 0) Ebx[19] Base,
    "avx512ifma" => (7, 0) Ebx[21] Avx512,
    "avx512cd" => (7, 0) Ebx[28] Avx512,
    "sha" => (7, 0) Ebx[29] Base,
    "avx512bw" => (7, 0) Ebx[30] Avx512,
    "avx512vl" => (7, 0) Ebx[31] Avx512,
    "avx512vbmi" => (7, 0) Ecx[1] Avx512,
    "avx512vbmi2" => (7, 0) Ecx[6] Avx512,
    "gfni" => (7, 0) Ecx[8] Base,
    "vaes" => (7, 0) Ecx[9] Avx,
    "vpclmulqdq" => (7, 0) Ecx[10] Avx,
    "avx512vnni" => (7, 0) Ecx[11] Avx512,
    "avx512bitalg" => (7, 0) Ecx[12] Avx512,
    "avx512vpopcntdq" => (7, 0) Ecx[14] Avx512,
    "avx512fp16" => (7, 0) Edx[23] Avx512,
    "avx512bf16" => (7, 1) Eax[5] Avx512,
    "xsaveopt" => (0xD, 1) Eax[0] Xsave,
    "xsavec" => (0xD, 1) Eax[1] Xsave,
    "xsaves" => (0xD, 1) Eax[3] Xsave,
    "lzcnt" => (0x8000_0001, 0) Ecx[5] Base,
    "sse4a" => (0x8000_0001, 0) Ecx[6] Base,
];

#[cfg(not(target_arch = "x86_64"))]
const PROBES: &[(&str, bool, Bit)] = &[];

/// What this CPU and its operating system let a program use, read from `cpuid` and XCR0
/// directly: unlike `is_x86_feature_detected!`, which answers `true` for any feature the
/// binary was compiled with, without asking the CPU.
#[cfg(target_arch = "x86_64")]
fn cpu_has(b: Bit) -> bool {
    use std::arch::x86_64::{__cpuid_count, __get_cpuid_max};
    let max = if b.leaf >= 0x8000_0000 {
        __get_cpuid_max(0x8000_0000).0
    } else {
        __get_cpuid_max(0).0
    };
    if b.leaf > max {
        return false;
    }
    let r = __cpuid_count(b.leaf, b.sub);
    let word = match b.reg {
        Reg::Eax => r.eax,
        Reg::Ebx => r.ebx,
        Reg::Ecx => r.ecx,
        Reg::Edx => r.edx,
    };
    word & (1 << b.bit) != 0 && os_saves(b.state)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has(_: Bit) -> bool {
    false
}

/// Whether the operating system saves the register state `state` needs.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn os_saves(state: State) -> bool {
    if state == State::Base {
        return true;
    }
    // OSXSAVE: the OS turned XSAVE on, so XGETBV may be executed.
    if std::arch::x86_64::__cpuid_count(1, 0).ecx & (1 << 27) == 0 {
        return false;
    }
    // SAFETY: XGETBV exists when OSXSAVE is set, checked just above; `xcr0` has no other
    // requirement.
    let xcr0 = unsafe { xcr0() };
    match state {
        State::Base | State::Xsave => true,
        // SSE and AVX (YMM upper halves) state.
        State::Avx => xcr0 & 0b110 == 0b110,
        // Those, and the opmask, ZMM upper halves and ZMM16-31 state.
        State::Avx512 => xcr0 & 0b1110_0110 == 0b1110_0110,
    }
}

/// XCR0, the register state the operating system saves.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    // SAFETY: the caller checked OSXSAVE, so XGETBV with ECX = 0 cannot fault.
    unsafe { std::arch::x86_64::_xgetbv(0) }
}

/// What the compiler was allowed to use and this CPU lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this program was compiled for CPUs with {} (rustc's -C target-cpu or -C target-feature), \
     but this CPU lacks {}; it would stop with an illegal instruction. Run a build made for \
     this CPU: the portable build (no target-cpu flag; tessera's hot kernels still choose \
     AVX2 or AVX-512 at run time), or one compiled here with -C target-cpu=native",
    built_for.join(", "),
    missing.join(", ")
)]
pub struct TargetMismatch {
    /// Every feature beyond the architecture's baseline the compiler was allowed to use.
    pub built_for: Vec<&'static str>,
    /// Those of them this CPU does not have.
    pub missing: Vec<&'static str>,
}

/// The features beyond the baseline this binary was compiled to use, e.g. `["sse3",
/// "ssse3", ..., "avx2", "fma", ...]` for `-C target-cpu=x86-64-v3`; empty for the
/// portable build.
pub fn built_for() -> Vec<&'static str> {
    PROBES.iter().filter(|p| p.1).map(|p| p.0).collect()
}

/// Compares `built` (the features compiled in) with what `has` says the CPU has.
///
/// # Errors
/// A [`TargetMismatch`] naming the features compiled in that `has` denies.
pub fn compare(built: &[&'static str], has: impl Fn(&str) -> bool) -> Result<(), TargetMismatch> {
    let missing: Vec<&'static str> = built.iter().copied().filter(|f| !has(f)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(TargetMismatch {
            built_for: built.to_vec(),
            missing,
        })
    }
}

/// Whether this CPU runs every instruction this binary may contain; computed once.
///
/// ```
/// // The portable build runs on any x86-64 CPU; a native build on the CPU it was made on.
/// tessera_kernels::target::check().expect("built for this CPU");
/// ```
///
/// # Errors
/// A [`TargetMismatch`] naming the compiled-in features this CPU lacks.
pub fn check() -> Result<(), TargetMismatch> {
    static VERDICT: OnceLock<Result<(), TargetMismatch>> = OnceLock::new();
    VERDICT
        .get_or_init(|| {
            compare(&built_for(), |name| {
                PROBES.iter().any(|p| p.0 == name && cpu_has(p.2))
            })
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_binary_runs_here() {
        // Whatever the flags of this test build, it is running on this CPU: every
        // feature it was compiled for must be found, or the check would refuse a binary
        // that works.
        assert_eq!(check(), Ok(()));
    }

    #[test]
    fn a_missing_feature_is_named_with_the_remedy() {
        let built = ["avx", "avx2", "fma", "bmi2"];
        let err = compare(&built, |f| f == "avx" || f == "bmi2").unwrap_err();
        assert_eq!(err.missing, ["avx2", "fma"]);
        let text = err.to_string();
        assert!(
            text.contains("compiled for CPUs with avx, avx2, fma, bmi2"),
            "{text}"
        );
        assert!(text.contains("this CPU lacks avx2, fma"), "{text}");
        assert!(text.contains("target-cpu=native"), "{text}");
        assert_eq!(compare(&built, |_| true), Ok(()));
        assert_eq!(compare(&[], |_| false), Ok(()));
    }

    /// The standard library's detection is the oracle for the cpuid table: for every
    /// feature not compiled in (the macro answers `true` for those without asking), it
    /// reads the CPU itself, and a wrong leaf, register or bit here disagrees with it on
    /// any CPU that has one of the two features.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_cpuid_table_agrees_with_std_detect() {
        macro_rules! std_says {
            ($($f:tt),*) => {
                |name: &str| match name {
                    $($f => std::arch::is_x86_feature_detected!($f),)*
                    other => panic!("no std detection listed for {other}"),
                }
            };
        }
        let std_has = std_says!(
            "sse3",
            "pclmulqdq",
            "ssse3",
            "fma",
            "cmpxchg16b",
            "sse4.1",
            "sse4.2",
            "movbe",
            "popcnt",
            "aes",
            "xsave",
            "avx",
            "f16c",
            "rdrand",
            "bmi1",
            "avx2",
            "bmi2",
            "avx512f",
            "avx512dq",
            "rdseed",
            "adx",
            "avx512ifma",
            "avx512cd",
            "sha",
            "avx512bw",
            "avx512vl",
            "avx512vbmi",
            "avx512vbmi2",
            "gfni",
            "vaes",
            "vpclmulqdq",
            "avx512vnni",
            "avx512bitalg",
            "avx512vpopcntdq",
            "avx512fp16",
            "avx512bf16",
            "xsaveopt",
            "xsavec",
            "xsaves",
            "lzcnt",
            "sse4a"
        );
        let mut seen = Vec::new();
        for &(name, compiled_in, b) in PROBES {
            assert!(!seen.contains(&name), "{name} listed twice");
            seen.push(name);
            if !compiled_in {
                assert_eq!(cpu_has(b), std_has(name), "{name}");
            }
        }
        assert!(
            cpu_has(bit(1, 0, Reg::Edx, 26, State::Base)),
            "SSE2, the x86-64 baseline"
        );
    }
}

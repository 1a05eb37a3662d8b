//! Runs generated kernel texts on the host: the same text NVRTC compiles, compiled as C++
//! with a shim header that defines what CUDA provides (`__global__`, `threadIdx`,
//! `__syncthreads`, the intrinsics), and launched with every block's threads as fibers on
//! the launching thread that run in rounds from barrier to barrier. It proves the numerics
//! of the text — the bits of every op, cast and generator, the order-free correctness of
//! the reduction tree, that every thread of a block reaches each barrier — not launch
//! configuration, races, streams or speed.
//!
//! The kernels of a test go into one translation unit (`c++ -std=c++20 -O1
//! -ffp-contract=off`, so no `a * b + c` is contracted, as NVRTC's `--fmad=false`), one
//! shared library, loaded once; a suite's thousands into one unit per core, compiled side
//! by side. The shim and the prelude, the same in every unit and half
//! of its compile time (the standard headers above all), are compiled once into a GCC
//! precompiled header that each unit includes (shared by the processes of a run), and a
//! unit is compiled once per process however many tests ask for it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::codegen::{ctype, Arg, KernelPlan, Launch, PRELUDE};
use crate::host_bytes;
use tessera_core::{DType, HostArray};

/// What CUDA gives a kernel, for the host.
const SHIM: &str = r#"
#include <math.h>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <mutex>
#include <setjmp.h>
#include <ucontext.h>
#include <sys/mman.h>
#define __global__
#define __device__
#define __forceinline__ inline
// Every `__shared__` array in one section, which each launch fills with the poison byte
// before each block (a GPU's shared memory starts undefined in every block; a block that
// reads a slot before writing it must see garbage, not what the previous block left).
#define __shared__ static __attribute__((section("tsr_shared"), aligned(16)))
extern "C" char __start_tsr_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_tsr_shared[] __attribute__((weak, visibility("hidden")));
static inline void tsr_poison_shared() {
    if (__start_tsr_shared && __stop_tsr_shared > __start_tsr_shared)
        std::memset(__start_tsr_shared, 0xA5, (size_t)(__stop_tsr_shared - __start_tsr_shared));
}
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
// A block's threads are fibers on the launching thread (see `tsr_launch`): `__syncthreads`
// hands control back to the launch, which runs every other thread of the block up to the
// same barrier before this one goes on. A fiber starts on its own stack through
// `setcontext` and switches with `_setjmp`/`_longjmp`, which save no signal mask (a
// `swapcontext` is two system calls, and was a third of a suite's run).
struct TsrJump { jmp_buf at; };
struct TsrFibers {
    // Each fiber's stack, one mapping for all: a guard page per fiber would be a mapping
    // of its own, and a process that loads hundreds of libraries (TPC-H on host devices),
    // each with a set of 256, ran out of mappings (`vm.max_map_count`: a new thread then
    // failed to map its signal stack). A canary word at the bottom of each stack, checked
    // after every launch, reports an overflow instead.
    static constexpr size_t STACK = 256 * 1024;
    static constexpr unsigned long long CANARY = 0x7e55e7a5ca9a11edULL;
    char* stacks = nullptr;
    unsigned capacity = 0;
    // Each fiber's entry onto its stack (made once, entered once per block), and where it
    // waits at a barrier.
    std::vector<ucontext_t> start;
    std::vector<TsrJump> waits;
    // 0: not started, 1: waiting at a barrier, 2: returned.
    std::vector<unsigned char> state;
    jmp_buf launch;
    // The launch's body (a launcher's call of its kernel) and its argument.
    void (*body)(void*) = nullptr;
    void* arg = nullptr;
};
// The launch in progress: one at a time per library (`tsr_launch` holds its lock).
static TsrFibers* tsr_fibers = nullptr;
// Set while this thread runs a launch without fibers, whose kernel has no barrier.
static thread_local bool tsr_flat = false;
__attribute__((noinline)) static void __syncthreads() {
    if (tsr_flat) {
        std::fprintf(stderr, "__syncthreads in a kernel launched without fibers: a barrier the host shim did not see in its text\n");
        std::abort();
    }
    TsrFibers& f = *tsr_fibers;
    f.state[threadIdx.x] = 1;
    if (!_setjmp(f.waits[threadIdx.x].at)) _longjmp(f.launch, 1);
}
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
static inline long long __double_as_longlong(double d) { long long v; std::memcpy(&v, &d, 8); return v; }
static inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
// CUDA's integer atomics (the blocks of one launch run one after another here, but
// the kernel text is the device's).
static inline unsigned atomicCAS(unsigned* a, unsigned cmp, unsigned val) {
    __atomic_compare_exchange_n(a, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
static inline unsigned atomicAdd(unsigned* a, unsigned v) {
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);
}
template <typename T> static inline T tsr_atomic_min(T* a, T v) {
    T cur = __atomic_load_n(a, __ATOMIC_SEQ_CST);
    while (v < cur && !__atomic_compare_exchange_n(a, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return cur;
}
template <typename T> static inline T tsr_atomic_max(T* a, T v) {
    T cur = __atomic_load_n(a, __ATOMIC_SEQ_CST);
    while (v > cur && !__atomic_compare_exchange_n(a, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return cur;
}
static inline unsigned atomicMin(unsigned* a, unsigned v) { return tsr_atomic_min(a, v); }
static inline unsigned long long atomicMin(unsigned long long* a, unsigned long long v) { return tsr_atomic_min(a, v); }
static inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) { return tsr_atomic_max(a, v); }
// A fiber: the kernel as thread `threadIdx.x`, then back to the launch for good.
static void tsr_fiber() {
    tsr_fibers->body(tsr_fibers->arg);
    tsr_fibers->state[threadIdx.x] = 2;
    _longjmp(tsr_fibers->launch, 1);
}
// Blocks one after another (so `__shared__` statics are the block's), a block's threads as
// fibers on this thread, run in rounds: each runs to its next `__syncthreads` or its end,
// so no thread passes a barrier before every thread of the block has reached it, as on the
// device. Rounds alternate direction, so that a read of another thread's write with no
// barrier between them sees the stale value in one round or the next. Fibers make a
// barrier a few jumps where threads meeting at `std::barrier` cost futex wake-ups of the
// whole block (a reduction's block is the device's 256 threads). Returns 0, or 1 when a
// block's threads diverged: some returned while others wait at a barrier (which would
// hang the device), with what happened on stderr.
static int tsr_launch(const char* name, unsigned grid, unsigned block, void (*body)(void*), void* arg) {
    // One launch at a time per library: tests that build the same kernels load the same
    // library, and share its fibers (and its `__shared__` statics).
    static std::mutex launching;
    std::lock_guard<std::mutex> one(launching);
    static TsrFibers f;
    const size_t span = TsrFibers::STACK;
    if (f.capacity < block) {
        if (f.stacks) munmap(f.stacks, span * f.capacity);
        void* m = mmap(nullptr, span * block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) { std::fprintf(stderr, "%s: no memory for %u fiber stacks\n", name, block); f.stacks = nullptr; f.capacity = 0; return 1; }
        f.stacks = (char*)m;
        f.start.resize(block);
        f.waits.resize(block);
        f.state.resize(block);
        for (unsigned t = 0; t < block; ++t) {
            getcontext(&f.start[t]);
            f.start[t].uc_stack.ss_sp = f.stacks + span * t;
            f.start[t].uc_stack.ss_size = TsrFibers::STACK;
            f.start[t].uc_link = nullptr;
            makecontext(&f.start[t], tsr_fiber, 0);
        }
        f.capacity = block;
    }
    tsr_fibers = &f;
    f.body = body;
    f.arg = arg;
    blockDim.x = block; gridDim.x = grid;
    for (unsigned t = 0; t < block; ++t) std::memcpy(f.stacks + span * t, &TsrFibers::CANARY, 8);
    int rc = 0;
    for (unsigned b = 0; b < grid && rc == 0; ++b) {
        blockIdx.x = b;
        tsr_poison_shared();
        for (unsigned t = 0; t < block; ++t) f.state[t] = 0;
        for (bool up = true;; up = !up) {
            unsigned waiting = 0, returned = 0;
            for (unsigned i = 0; i < block; ++i) {
                const unsigned t = up ? i : block - 1 - i;
                if (f.state[t] == 2) { ++returned; continue; }
                threadIdx.x = t;
                if (!_setjmp(f.launch)) {
                    if (f.state[t] == 0) setcontext(&f.start[t]);
                    _longjmp(f.waits[t].at, 1);
                }
                if (f.state[t] == 1) ++waiting; else ++returned;
            }
            if (waiting == 0) break;
            if (returned > 0) {
                std::fprintf(stderr, "%s: block %u of %u diverged at __syncthreads: %u of its %u threads wait at a barrier that %u returned without reaching\n", name, b, grid, waiting, block, returned);
                rc = 1;
                break;
            }
        }
    }
    for (unsigned t = 0; t < block; ++t) {
        if (std::memcmp(f.stacks + span * t, &TsrFibers::CANARY, 8) != 0) {
            std::fprintf(stderr, "%s: thread %u overflowed its %zu-byte fiber stack\n", name, t, TsrFibers::STACK);
            rc = 1;
        }
    }
    return rc;
}
// A launch of a kernel without barriers: every thread of every block in turn, called.
static int tsr_launch_flat(unsigned grid, unsigned block, void (*body)(void*), void* arg) {
    blockDim.x = block; gridDim.x = grid;
    tsr_flat = true;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        tsr_poison_shared();
        for (unsigned t = 0; t < block; ++t) { threadIdx.x = t; body(arg); }
    }
    tsr_flat = false;
    return 0;
}
"#;

/// Threads per block of an array program's elementwise launch and the most blocks a
/// launch uses on the host: small, so a launch is cheap, and not a divisor of most shapes,
/// so grid-stride loops and ragged parts happen.
const BLOCK: u32 = 8;
/// Threads per block of the dataframe kernels' launches ([`HostKernels::run_grid`]): the
/// device's own, so the upper levels of the block-wide scans and sums (`tsr_block_scan`,
/// `tsr_block_sum`: 128 down to 8 partners apart) run here as there; at 8 threads only
/// the lowest three ever ran.
const FRAME_BLOCK: u32 = crate::codegen::BLOCK;
const MAX_GRID: u64 = 6;
/// Threads per block of a reduction's launches through [`HostKernels::run`] (the bit
/// tests): the device's own block size, so every level of the shared-memory tree (128
/// down to 1 partner apart) runs here as there.
const REDUCE_BLOCK: u32 = crate::codegen::BLOCK;

/// The loaded libraries, and which of them holds each entry.
type Libraries = (Vec<Arc<libloading::Library>>, HashMap<String, usize>);

/// Compiled kernels: libraries, and which library holds each entry. A kernel asked for
/// that none holds is compiled on the spot, alone.
pub struct HostKernels {
    libs: Mutex<Libraries>,
    /// One launch at a time: a kernel's `__shared__` arrays are statics on the host, so
    /// two launches of one kernel from two threads would share them.
    launch: Mutex<()>,
}

impl std::fmt::Debug for HostKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostKernels")
    }
}

/// Compiles every distinct kernel of `plans` into one library.
pub fn build(plans: &[&KernelPlan]) -> Result<HostKernels, String> {
    let k = HostKernels {
        libs: Mutex::default(),
        launch: Mutex::default(),
    };
    k.add(plans)?;
    Ok(k)
}

/// The flags of every kernel unit and of the precompiled header: GCC uses a precompiled
/// header only where the unit is compiled with the options it was. No `_FORTIFY_SOURCE`
/// (some distributions' default): its checked `longjmp` refuses a jump onto another stack,
/// which is how a fiber is resumed.
const CXX_FLAGS: [&str; 8] = [
    "-std=c++20",
    "-O1",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fPIC",
    "-pthread",
    "-U_FORTIFY_SOURCE",
    "-w",
];

/// The C++ compiler: `$CXX`, else `c++`.
fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".to_string())
}

/// Whether the compiler whose `--version` printed `version` is GCC, whose `.gch` files an
/// `#include` picks up.
fn is_gcc(version: &[u8]) -> bool {
    String::from_utf8_lossy(version).contains("Free Software Foundation")
}

/// The start of every unit: an include of [`shim_header`], or where there is none the
/// shim's and the prelude's text. The header's text stays beside its precompiled form, so
/// a unit that cannot use the latter still compiles, only slower.
fn unit_head() -> String {
    match shim_header().filter(|h| h.exists()) {
        Some(header) => format!("#include \"{}\"\n", header.display()),
        None => format!("{SHIM}{PRELUDE}"),
    }
}

/// The shim and the prelude as a header with its precompiled form beside it, in a folder
/// of the temp dir named by a hash of the text, the compiler's version and the flags (so
/// the processes of a test run share it); `None` where the compiler is not GCC (whose
/// `.gch` files the include picks up) or the build failed, and each unit then carries the
/// text itself.
fn shim_header() -> Option<&'static Path> {
    static HEADER: OnceLock<Option<PathBuf>> = OnceLock::new();
    HEADER.get_or_init(build_shim_header).as_deref()
}

/// Finds or builds [`shim_header`]. Both files are written under names of this process
/// and renamed into place, so a process never includes another's half-written header.
fn build_shim_header() -> Option<PathBuf> {
    const PREFIX: &str = "tessera-host-kernels-pch-";
    let cxx = cxx();
    let version = Command::new(&cxx).arg("--version").output().ok()?;
    if !is_gcc(&version.stdout) {
        return None;
    }
    let version = String::from_utf8_lossy(&version.stdout);
    let text = format!("{SHIM}{PRELUDE}");
    let key =
        crate::codegen::stable_hash(format!("{cxx}\n{version}\n{CXX_FLAGS:?}\n{text}").as_bytes());
    let tmp = std::env::temp_dir();
    let name = format!("{PREFIX}{key:x}");
    let dir = tmp.join(&name);
    let (header, gch) = (dir.join("shim.hpp"), dir.join("shim.hpp.gch"));
    if header.exists() && gch.exists() {
        return Some(header);
    }
    // The headers of other versions of the shim or the compiler, made over a day ago (a
    // precompiled header is tens of megabytes).
    for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let other = entry.file_name();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 24 * 3600);
        if stale && other != name.as_str() && other.to_string_lossy().starts_with(PREFIX) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    std::fs::create_dir_all(&dir).ok()?;
    let me = std::process::id();
    let (header_tmp, gch_tmp) = (dir.join(format!("{me}.hpp")), dir.join(format!("{me}.gch")));
    std::fs::write(&header_tmp, &text).ok()?;
    std::fs::rename(&header_tmp, &header).ok()?;
    let built = Command::new(&cxx)
        .args(CXX_FLAGS)
        .args(["-x", "c++-header", "-o"])
        .arg(&gch_tmp)
        .arg(&header)
        .output()
        .ok()?;
    if !built.status.success() {
        let _ = std::fs::remove_file(&gch_tmp);
        return None;
    }
    std::fs::rename(&gch_tmp, &gch).ok()?;
    Some(header)
}

/// What a kernel's text calls when it synchronises its block: `__syncthreads`, and the
/// prelude's functions that call it (a test below finds every such function of the
/// prelude here). A kernel with none of them runs without fibers.
const BARRIERS: [&str; 3] = ["__syncthreads", "tsr_block_sum", "tsr_block_scan"];

/// Plans per unit when a compile is split: a large set (a suite's thousands of kernels) is
/// compiled as several units side by side, one per core at most, each its own library.
const PLANS_PER_UNIT: usize = 200;

/// A compiled library and the entry names it holds.
type Compiled = (Arc<libloading::Library>, Vec<String>);

/// Compiles `plans` into libraries (one, or for many plans one per core); returns each with
/// the entry names it holds.
fn compile(plans: &[&KernelPlan]) -> Result<Vec<Compiled>, String> {
    let mut unique: BTreeMap<u64, &KernelPlan> = BTreeMap::new();
    for p in plans {
        unique.entry(p.hash).or_insert(p);
    }
    let unique: Vec<&KernelPlan> = unique.into_values().collect();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let units = unique.len().div_ceil(PLANS_PER_UNIT).clamp(1, cores);
    let per_unit = unique.len().div_ceil(units).max(1);
    let unit = |plans: &[&KernelPlan]| {
        let mut src = unit_head();
        let mut names = Vec::new();
        for p in plans {
            src.push_str(&p.body);
            let barriers = BARRIERS.iter().any(|b| p.body.contains(b));
            for e in &p.entries {
                src.push_str(&launcher(&e.name, &e.args, barriers));
                names.push(e.name.clone());
            }
        }
        library_of(&src).map(|lib| (lib, names))
    };
    std::thread::scope(|s| {
        let compiles: Vec<_> = unique
            .chunks(per_unit)
            .map(|part| s.spawn(move || unit(part)))
            .collect();
        compiles
            .into_iter()
            .map(|c| {
                c.join()
                    .unwrap_or_else(|_| Err("a host-shim compile panicked".to_string()))
            })
            .collect()
    })
}

/// A unit whose compile ended, by a hash of its text.
type Built = Arc<OnceLock<Result<Arc<libloading::Library>, String>>>;

/// The library of the unit `src`, compiled once per process: the frame suite's two runs on
/// host devices (its bits, and the kernels NVRTC compiles) ask for the same units from two
/// threads, and the second waits for the first's library instead of compiling it again
/// (before, both compiled it in the same temp folder, and the first to finish removed it).
/// Sharing a library is safe: `tsr_launch` runs one launch of a library at a time.
fn library_of(src: &str) -> Result<Arc<libloading::Library>, String> {
    static BUILT: OnceLock<Mutex<HashMap<u64, Built>>> = OnceLock::new();
    let key = crate::codegen::stable_hash(src.as_bytes());
    let cell = {
        let mut built = BUILT
            .get_or_init(Mutex::default)
            .lock()
            .map_err(|e| e.to_string())?;
        built.entry(key).or_default().clone()
    };
    cell.get_or_init(|| compile_unit(src, key).map(Arc::new))
        .clone()
}

/// Compiles the unit `src` (whose hash is `key`) into a shared library and loads it.
fn compile_unit(src: &str, key: u64) -> Result<libloading::Library, String> {
    let dir = std::env::temp_dir().join(format!(
        "tessera-host-kernels-{}-{key:x}",
        std::process::id(),
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (cpp, so) = (dir.join("kernels.cpp"), dir.join("libkernels.so"));
    std::fs::write(&cpp, src).map_err(|e| e.to_string())?;
    let cxx = cxx();
    let out = Command::new(&cxx)
        .args(CXX_FLAGS)
        .args(["-shared", "-o"])
        .arg(&so)
        .arg(&cpp)
        .output()
        .map_err(|e| format!("{cxx} could not be run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the kernels did not compile as C++ ({}):\n{}",
            cpp.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    // SAFETY: the library was just built from the generated text and the shim above; its
    // initialisers are the C++ runtime's.
    #[allow(unsafe_code)]
    let lib = unsafe { libloading::Library::new(&so) }.map_err(|e| e.to_string())?;
    // The mapping outlives the file; nothing is left in the temp dir.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(lib)
}

/// Whether a C++ compiler is there (the test skips with the reason when not).
pub fn compiler() -> Result<(), String> {
    let cxx = cxx();
    match Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(format!(
            "no C++ compiler ({cxx}) to build the host shim: apt-get install g++ (.ci/run installs it)"
        )),
    }
}

/// Calls the host entry `host_{kernel}` of `lib` (made by [`launcher`]) as `grid` blocks of
/// `block` threads; a launch whose block's threads diverged at `__syncthreads` is an error
/// (the launcher printed which block, and how many threads waited and returned).
///
/// # Safety
///
/// Every pointer in `args` must point into a live buffer, in the order and of the sizes
/// the kernel's arguments need for this launch.
#[allow(unsafe_code)]
unsafe fn call_entry(
    lib: &libloading::Library,
    kernel: &str,
    grid: u32,
    block: u32,
    args: &mut [*mut std::ffi::c_void],
) -> Result<(), String> {
    let entry = format!("host_{kernel}");
    // SAFETY: `launcher` generates every `host_` entry with this signature; the caller
    // vouches for the arguments.
    let verdict = unsafe {
        let f: libloading::Symbol<
            unsafe extern "C" fn(u32, u32, *mut *mut std::ffi::c_void) -> i32,
        > = lib.get(entry.as_bytes()).map_err(|e| e.to_string())?;
        f(grid, block, args.as_mut_ptr())
    };
    if verdict == 0 {
        Ok(())
    } else {
        Err(format!(
            "{entry}: the threads of a block diverged at __syncthreads (some returned while \
             others waited at a barrier, which hangs the device); the counts are on stderr"
        ))
    }
}

/// The host launcher of entry `name`: a body that unpacks `void** a` into the kernel's
/// arguments (a plain function: a `std::function` per launcher, the template machinery of
/// thousands, took half of a large unit's compile), and the entry that launches it and
/// returns the launch's verdict (0, or 1 when a block's threads diverged). A kernel whose
/// text has `barriers` runs its threads as fibers, one without as plain calls.
fn launcher(name: &str, args: &[Arg], barriers: bool) -> String {
    let mut call = Vec::new();
    let mut k = 0;
    for a in args {
        match *a {
            Arg::Params => call.push(format!("(const u64*)a[{k}]")),
            Arg::Input(_, d) => call.push(format!("(const {}*)a[{k}]", ctype(d))),
            Arg::Output(d) | Arg::Partials(d) => call.push(format!("({}*)a[{k}]", ctype(d))),
            Arg::PartialIndex => call.push(format!("(i64*)a[{k}]")),
            Arg::ZigguratTables => {
                call.push(format!("(const f64*)a[{k}]"));
                call.push(format!("(const u64*)a[{}]", k + 1));
                call.push(format!("(const f64*)a[{}]", k + 2));
                k += 2;
            }
        }
        k += 1;
    }
    format!(
        "static void tsr_body_{name}(void* p) {{ void** a = (void**)p; {name}({}); }}\n\
         extern \"C\" int host_{name}(unsigned grid, unsigned block, void** a) {{ return {launch}grid, block, tsr_body_{name}, a); }}\n",
        call.join(", "),
        launch = if barriers {
            format!("tsr_launch(\"{name}\", ")
        } else {
            "tsr_launch_flat(".to_string()
        }
    )
}

/// `plan`'s parameters as bytes (at least one word) and copies of `inputs`, each at least
/// a byte, so that every pointer a kernel gets is valid.
fn arguments(plan: &KernelPlan, inputs: &[&[u8]]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut params: Vec<u8> = plan.params.iter().flat_map(|v| v.to_le_bytes()).collect();
    params.resize(params.len().max(8), 0);
    let ins = inputs
        .iter()
        .map(|b| {
            let mut v = b.to_vec();
            v.resize(v.len().max(1), 0);
            v
        })
        .collect();
    (params, ins)
}

/// A host buffer a kernel writes, filled with [`POISON`] first.
struct Buf(Vec<u8>);

/// What every output and partial buffer holds before a kernel runs: `0xA5` bytes (not NaN,
/// but unmistakable in every dtype: -2.5e-127 as f64, -2.9e-16 as f32, 0xA5A5… as an
/// integer). A GPU leaves fresh buffers uninitialised, so a kernel that skips an element
/// must show as a wrong value here too, not pass wherever the CPU's answer happens to be 0.
/// A bool byte has no value wrong for both answers (`0xA5` reads as `true`), so a kernel
/// with a bool output runs twice, poisoned `false` and `true` ([`BOOL_POISONS`]), and an
/// element the two runs disagree on was never written.
const POISON: u8 = 0xA5;
/// The two poisons of a bool output: `false`, then `true`.
const BOOL_POISONS: [u8; 2] = [0, 1];

impl Buf {
    fn poisoned(d: DType, n: usize) -> Buf {
        Buf(vec![POISON; n.max(1) * d.size()])
    }
    fn ptr(&mut self) -> *mut std::ffi::c_void {
        self.0.as_mut_ptr().cast()
    }
}

impl HostKernels {
    /// Compiles the kernels of `plans` that no library holds yet into a new one.
    pub fn add(&self, plans: &[&KernelPlan]) -> Result<(), String> {
        let mut libs = self.libs.lock().map_err(|e| e.to_string())?;
        let missing: Vec<&KernelPlan> = plans
            .iter()
            .copied()
            .filter(|p| !libs.1.contains_key(&p.entries[0].name))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        for (lib, names) in compile(&missing)? {
            libs.0.push(lib);
            let at = libs.0.len() - 1;
            for n in names {
                libs.1.insert(n, at);
            }
        }
        Ok(())
    }

    /// The library holding `plan`'s entries, compiling it first when none does.
    fn library(&self, plan: &KernelPlan) -> Result<Arc<libloading::Library>, String> {
        self.add(&[plan])?;
        let libs = self.libs.lock().map_err(|e| e.to_string())?;
        let at = libs.1[&plan.entries[0].name];
        Ok(libs.0[at].clone())
    }

    /// Runs `plan` (one output of `program`) over `inputs`; returns the output, shaped as
    /// the program's output `shape`, with reductions in blocks of `REDUCE_BLOCK` (the device's 256) threads.
    pub fn run(
        &self,
        plan: &KernelPlan,
        inputs: &[HostArray],
        shape: &[usize],
    ) -> Result<HostArray, String> {
        let ins: Vec<Vec<u8>> = inputs.iter().map(host_bytes::to_bytes).collect();
        let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
        let n = shape.iter().product::<usize>() * plan.out_dtype.size();
        let out = self.launch(plan, &refs, n, REDUCE_BLOCK)?;
        host_bytes::from_bytes(plan.out_dtype, shape, &out[..n]).map_err(|e| e.to_string())
    }

    /// Runs `plan` over input buffers; returns an output buffer of `out_bytes` bytes (at
    /// least one). Reductions run in blocks of `BLOCK` (8) threads, not the device's
    /// `REDUCE_BLOCK` (the device's 256) of [`HostKernels::run`]: this is the host devices' path, whose
    /// suite launches thousands of kernels.
    pub fn run_bytes(
        &self,
        plan: &KernelPlan,
        inputs: &[&[u8]],
        out_bytes: usize,
    ) -> Result<Vec<u8>, String> {
        self.launch(plan, inputs, out_bytes, BLOCK)
    }

    /// Runs entry 0 of `plan` as `grid` blocks of `FRAME_BLOCK` (the device's 256)
    /// threads over `inputs`, with one poisoned output buffer of each length in `outputs`
    /// (the device's `launch_grid`).
    pub fn run_grid(
        &self,
        plan: &KernelPlan,
        grid: u32,
        inputs: &[&[u8]],
        outputs: &[crate::device::Output],
    ) -> Result<Vec<Vec<u8>>, String> {
        let lib = self.library(plan)?;
        let _one_at_a_time = self.launch.lock().map_err(|e| e.to_string())?;
        let (mut params, mut ins) = arguments(plan, inputs);
        let mut outs: Vec<Buf> = outputs
            .iter()
            .map(|o| match *o {
                crate::device::Output::Written(n) => Buf(vec![POISON; n.max(1)]),
                crate::device::Output::Filled(n, byte) => Buf(vec![byte; n.max(1)]),
            })
            .collect();
        let mut args: Vec<*mut std::ffi::c_void> = vec![params.as_mut_ptr().cast()];
        args.extend(ins.iter_mut().map(|i| i.as_mut_ptr().cast()));
        args.extend(outs.iter_mut().map(Buf::ptr));
        // SAFETY: every pointer points into a live buffer: the parameters, copies of the
        // inputs, and the outputs sized by the caller for what the kernel writes.
        #[allow(unsafe_code)]
        unsafe {
            call_entry(
                &lib,
                &plan.entries[0].name,
                grid.max(1),
                FRAME_BLOCK,
                &mut args,
            )?;
        }
        Ok(outs.into_iter().map(|b| b.0).collect())
    }

    /// [`HostKernels::run_bytes`] with reductions in blocks of `reduce_block` threads. A
    /// bool output runs twice, poisoned `false` and `true` (see [`POISON`]); the runs must
    /// agree on every byte.
    fn launch(
        &self,
        plan: &KernelPlan,
        inputs: &[&[u8]],
        out_bytes: usize,
        reduce_block: u32,
    ) -> Result<Vec<u8>, String> {
        if plan.out_dtype != DType::Bool {
            return self.launch_poisoned(plan, inputs, out_bytes, reduce_block, POISON);
        }
        let [f, t] =
            BOOL_POISONS.map(|p| self.launch_poisoned(plan, inputs, out_bytes, reduce_block, p));
        let (f, t) = (f?, t?);
        // The buffers hold at least one byte; only the output's own bytes count.
        match f[..out_bytes]
            .iter()
            .zip(&t[..out_bytes])
            .position(|(a, b)| a != b)
        {
            None => Ok(f),
            Some(i) => Err(format!(
                "{}: bool output element {i} of {out_bytes} was never written (it read as \
                 the poison: {} when poisoned false, {} when poisoned true)",
                plan.entries[0].name, f[i], t[i]
            )),
        }
    }

    /// One run of [`HostKernels::launch`] with the output poisoned with `poison`.
    fn launch_poisoned(
        &self,
        plan: &KernelPlan,
        inputs: &[&[u8]],
        out_bytes: usize,
        reduce_block: u32,
        poison: u8,
    ) -> Result<Vec<u8>, String> {
        let lib = self.library(plan)?;
        let _one_at_a_time = self.launch.lock().map_err(|e| e.to_string())?;
        let tables = tessera_core::random::ziggurat::tables();
        let (mut params, mut ins) = arguments(plan, inputs);
        let wi: Vec<u8> = tables.wi.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ki: Vec<u8> = tables.ki.iter().flat_map(|v| v.to_le_bytes()).collect();
        let fi: Vec<u8> = tables.fi.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = Buf(vec![poison; out_bytes.max(1)]);
        let pass = |entry: usize,
                    grid: u64,
                    block: u32,
                    args: Vec<*mut std::ffi::c_void>|
         -> Result<(), String> {
            // SAFETY: every pointer in `args` points into a live buffer sized for what the
            // kernel touches (the plan's parameters, the inputs, an output of the output's
            // element count, partials of kept x parts).
            #[allow(unsafe_code)]
            unsafe {
                let mut args = args;
                let grid = grid.clamp(1, MAX_GRID) as u32;
                call_entry(&lib, &plan.entries[entry].name, grid, block, &mut args)
            }
        };
        let head = |params: &mut Vec<u8>, ins: &mut Vec<Vec<u8>>| {
            let mut v: Vec<*mut std::ffi::c_void> = vec![params.as_mut_ptr().cast()];
            for i in ins.iter_mut() {
                v.push(i.as_mut_ptr().cast());
            }
            v
        };
        let (mut wi, mut ki, mut fi) = (wi, ki, fi);
        let mut tail = |v: &mut Vec<*mut std::ffi::c_void>| {
            if plan.entries[0].args.contains(&Arg::ZigguratTables) {
                v.push(wi.as_mut_ptr().cast());
                v.push(ki.as_mut_ptr().cast());
                v.push(fi.as_mut_ptr().cast());
            }
        };
        match plan.launch {
            Launch::Elementwise { n } => {
                if n > 0 {
                    let mut args = head(&mut params, &mut ins);
                    args.push(out.ptr());
                    tail(&mut args);
                    pass(0, n.div_ceil(u64::from(BLOCK)), BLOCK, args)?;
                }
            }
            Launch::Reduce {
                kept, parts, acc, ..
            } => {
                if kept > 0 {
                    let np = (kept * parts) as usize;
                    let mut part = Buf::poisoned(acc, np);
                    let mut idx = Buf::poisoned(DType::I64, np);
                    let mut args = head(&mut params, &mut ins);
                    args.push(part.ptr());
                    args.push(idx.ptr());
                    tail(&mut args);
                    pass(0, kept * parts, reduce_block, args)?;
                    let fin = vec![params.as_mut_ptr().cast(), part.ptr(), idx.ptr(), out.ptr()];
                    pass(1, kept.div_ceil(u64::from(reduce_block)), reduce_block, fin)?;
                }
            }
        }
        Ok(out.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit of one trivial kernel entry point, different for each `tag`.
    fn unit(tag: &str) -> String {
        let head = unit_head();
        format!("{head}extern \"C\" int tsr_test_{tag}() {{ return 7; }}\n")
    }

    #[test]
    fn gcc_gets_a_precompiled_shim_that_units_compile_against() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "gcc_gets_a_precompiled_shim",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        let version = Command::new(cxx()).arg("--version").output().unwrap();
        if !is_gcc(&version.stdout) {
            assert!(
                shim_header().is_none(),
                "only GCC picks up a .gch beside an include"
            );
            return;
        }
        let header = shim_header().expect("GCC builds the precompiled shim");
        assert!(
            header.with_extension("hpp.gch").is_file(),
            "{}",
            header.display()
        );
        assert_eq!(
            std::fs::read_to_string(header).unwrap(),
            format!("{SHIM}{PRELUDE}")
        );
        let lib = library_of(&unit("pch")).unwrap();
        // SAFETY: the entry was compiled just above with this signature and takes nothing.
        #[allow(unsafe_code)]
        let got = unsafe {
            lib.get::<unsafe extern "C" fn() -> i32>(b"tsr_test_pch")
                .unwrap()()
        };
        assert_eq!(got, 7);
    }

    /// Runs kernel `name` of `src` on `out` (one word per thread) as `grid` blocks of
    /// `block` threads.
    fn launch_words(
        src: &str,
        name: &str,
        grid: u32,
        block: u32,
        out: &mut [u64],
    ) -> Result<(), String> {
        let lib = library_of(&format!("{}{src}", unit_head())).unwrap();
        let mut args: Vec<*mut std::ffi::c_void> = vec![out.as_mut_ptr().cast()];
        // SAFETY: the kernel writes one word per thread of the launch into `out`, which
        // holds `grid * block` words.
        #[allow(unsafe_code)]
        unsafe {
            call_entry(&lib, name, grid, block, &mut args)
        }
    }

    #[test]
    fn shared_memory_is_poisoned_in_every_block() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "shared_memory_is_poisoned_in_every_block",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        // Only block 0 writes its slots; block 1 reads slots it never wrote, which on a GPU
        // hold garbage. Statics on the host kept block 0's values: a kernel that forgot to
        // write its shared memory in some blocks passed.
        let src = r#"
__global__ void reads_before_writing(u64* out) {
    __shared__ u64 slot[8];
    unsigned t = threadIdx.x;
    if (blockIdx.x == 0) slot[t] = 7;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = slot[t];
}
"#;
        let mut out = vec![0u64; 16];
        let src = format!(
            "{src}{}",
            launcher("reads_before_writing", &[Arg::Output(DType::U64)], true)
        );
        launch_words(&src, "reads_before_writing", 2, 8, &mut out).unwrap();
        assert_eq!(&out[..8], &[7; 8]);
        assert_eq!(
            &out[8..],
            &[0xA5A5_A5A5_A5A5_A5A5; 8],
            "block 1 saw block 0's slots"
        );
    }

    /// `x > 0` over five floats, as the array backend's kernel for it; with `skip_last`,
    /// the kernel's loop planted one element short.
    fn greater_than_zero(skip_last: bool) -> KernelPlan {
        use tessera_core::program::{AxisMap, BinaryOp, IndexMap, ProgramBuilder};
        let mut pb = ProgramBuilder::new(&[5]);
        let map = IndexMap {
            src_shape: vec![5],
            axes: vec![AxisMap {
                start: 0,
                step: 1,
                out_axis: Some(0),
            }],
        };
        let x = pb.input(0, DType::F64, map);
        let zero = pb.constant(tessera_core::Scalar::F64(0.0));
        let y = pb.binary(BinaryOp::Gt, x, zero).unwrap();
        let program = pb.finish(vec![(y, None)]).unwrap();
        let mut plan = crate::codegen::generate(&program, 0, 1).unwrap();
        assert_eq!(plan.out_dtype, DType::Bool);
        if skip_last {
            assert!(plan.body.contains("f < n;"), "{}", plan.body);
            plan.body = plan.body.replace("f < n;", "f < n - 1;");
            // Its own name: the library caches kernels by name.
            let (old, new) = (
                plan.entries[0].name.clone(),
                format!("{}_planted", plan.entries[0].name),
            );
            plan.body = plan.body.replace(&old, &new);
            plan.entries[0].name = new;
        }
        plan
    }

    #[test]
    fn a_bool_kernel_that_skips_an_element_is_caught_whatever_the_answer() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "a_bool_kernel_that_skips_an_element_is_caught",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        let (good, planted) = (greater_than_zero(false), greater_than_zero(true));
        let lib = build(&[&good, &planted]).unwrap();
        // The skipped last element's answer is `true` here and `false` there: a single
        // poison would pass one of the two.
        for last in [1.0, -1.0] {
            let x = ndarray::ArrayD::from_shape_vec(
                ndarray::IxDyn(&[5]),
                vec![1.0, -2.0, 3.0, 0.0, last],
            )
            .unwrap();
            let input = <f64 as tessera_core::host::HostElement>::wrap(x);
            let got = lib.run(&good, std::slice::from_ref(&input), &[5]).unwrap();
            let want: Vec<bool> = vec![true, false, true, false, last > 0.0];
            assert_eq!(
                got.to_f64_vec(),
                want.iter()
                    .map(|&b| f64::from(u8::from(b)))
                    .collect::<Vec<_>>()
            );
            let err = lib.run(&planted, &[input], &[5]).unwrap_err();
            assert!(
                err.contains("bool output element 4 of 5 was never written"),
                "{err}"
            );
        }
    }

    /// A frame kernel (launched as the dataframe backend launches them) that writes each
    /// thread's inclusive block scan of ones, through the prelude's `tsr_block_scan` or,
    /// `capped`, a copy of it planted to stop at 8 partners apart.
    fn scan_plan(name: &str, capped: bool) -> KernelPlan {
        let scan = if capped {
            format!("{name}_capped")
        } else {
            "tsr_block_scan".to_string()
        };
        let body = format!(
            r#"
template <typename T> TSR_D T {name}_capped(T* s, T v, T* total) {{
    s[threadIdx.x] = v;
    __syncthreads();
    for (u32 d = 1; d < blockDim.x && d < 8; d <<= 1) {{
        T x = threadIdx.x >= d ? s[threadIdx.x - d] : 0;
        __syncthreads();
        s[threadIdx.x] += x;
        __syncthreads();
    }}
    T r = s[threadIdx.x];
    *total = s[blockDim.x - 1];
    __syncthreads();
    return r;
}}
extern "C" __global__ void {name}(const u64* P, u8* out0) {{
    __shared__ u64 s[256];
    u64 total;
    u64 incl = {scan}(s, (u64)1, &total);
    ((u64*)out0)[blockIdx.x * blockDim.x + threadIdx.x] = incl;
}}
"#
        );
        KernelPlan {
            hash: crate::codegen::stable_hash(body.as_bytes()),
            body,
            entries: vec![crate::codegen::Entry {
                name: name.to_string(),
                args: vec![Arg::Params, Arg::Output(DType::U8)],
            }],
            params: vec![0],
            launch: Launch::Elementwise { n: 0 },
            out_dtype: DType::U8,
        }
    }

    /// The dataframe kernels run in blocks of the device's 256 threads, so a block scan
    /// whose upper levels are wrong (planted: capped at 8 partners apart) gives wrong
    /// sums here, as on the GPU; in the 8-thread blocks of before, both scans agreed.
    #[test]
    fn a_block_scan_capped_at_8_threads_is_caught_on_host_devices() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "a_block_scan_capped_at_8_threads_is_caught_on_host_devices",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        let (good, capped) = (
            scan_plan("tsr_test_block_scan", false),
            scan_plan("tsr_test_capped_scan", true),
        );
        let lib = build(&[&good, &capped]).unwrap();
        let words = |plan: &KernelPlan| -> Vec<u64> {
            let out = lib
                .run_grid(plan, 1, &[], &[crate::device::Output::Written(256 * 8)])
                .unwrap();
            out[0]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let want: Vec<u64> = (1..=256).collect();
        assert_eq!(
            words(&good),
            want,
            "every one of the block's 256 threads scans"
        );
        let planted = words(&capped);
        assert_eq!(&planted[..8], &want[..8]);
        assert_ne!(
            planted, want,
            "the capped scan passed: the upper levels never ran"
        );
    }

    #[test]
    fn every_thread_of_a_block_reaches_a_barrier_before_any_passes_it() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "every_thread_of_a_block_reaches_a_barrier",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        // Each thread writes its slot, then (after a barrier) adds its neighbours' slots on
        // both sides: a thread that ran past the barrier early would read a neighbour's
        // stale zero. Twice, through a second barrier, with the slots rewritten between.
        let src = r#"
__global__ void rounds(u64* out) {
    __shared__ u64 slot[256];
    unsigned t = threadIdx.x, n = blockDim.x;
    slot[t] = 1000 * (blockIdx.x + 1) + t;
    __syncthreads();
    u64 sum = slot[(t + 1) % n] + slot[(t + n - 1) % n];
    __syncthreads();
    slot[t] = sum;
    __syncthreads();
    out[blockIdx.x * n + t] = slot[(t + 1) % n] + slot[(t + n - 1) % n];
}
"#;
        let block = 256u32;
        let mut out = vec![0u64; 3 * block as usize];
        let src = format!(
            "{src}{}",
            launcher("rounds", &[Arg::Output(DType::U64)], true)
        );
        launch_words(&src, "rounds", 3, block, &mut out).unwrap();
        let n = u64::from(block);
        let first = |b: u64, t: u64| 1000 * (b + 1) + t;
        let second = |b: u64, t: u64| first(b, (t + 1) % n) + first(b, (t + n - 1) % n);
        for b in 0..3u64 {
            for t in 0..n {
                let want = second(b, (t + 1) % n) + second(b, (t + n - 1) % n);
                assert_eq!(out[(b * n + t) as usize], want, "block {b} thread {t}");
            }
        }
    }

    #[test]
    fn every_prelude_function_that_synchronises_the_block_is_a_barrier() {
        // The prelude's functions start at column 0 with `TSR_D` (after any `template`
        // line) and end at a `}` in column 0.
        let mut syncing = Vec::new();
        let mut current: Option<String> = None;
        for line in PRELUDE.lines() {
            if let Some(rest) = line.strip_prefix("template <typename T> ").or(Some(line)) {
                if let Some(sig) = rest.strip_prefix("TSR_D ") {
                    let name = sig.split('(').next().unwrap_or_default();
                    current = name.split_whitespace().last().map(str::to_string);
                }
            }
            if line.contains("__syncthreads") {
                if let Some(name) = &current {
                    if !syncing.contains(name) {
                        syncing.push(name.clone());
                    }
                }
            }
            if line.starts_with('}') {
                current = None;
            }
        }
        assert!(syncing.len() >= 2, "{syncing:?}");
        for name in &syncing {
            assert!(
                BARRIERS.contains(&name.as_str()),
                "{name} synchronises the block"
            );
        }
    }

    #[test]
    fn threads_that_diverge_at_a_barrier_are_an_error_not_a_hang() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "threads_that_diverge_at_a_barrier",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        // The odd threads return before the barrier the even ones wait at.
        let src = r#"
__global__ void diverges(u64* out) {
    if (threadIdx.x % 2 == 1) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}
"#;
        let mut out = vec![0u64; 8];
        let src = format!(
            "{src}{}",
            launcher("diverges", &[Arg::Output(DType::U64)], true)
        );
        let err = launch_words(&src, "diverges", 1, 8, &mut out).unwrap_err();
        assert!(
            err.contains("host_diverges") && err.contains("diverged at __syncthreads"),
            "{err}"
        );
    }

    #[test]
    fn a_unit_is_compiled_once_per_process_and_its_library_shared() {
        if compiler().is_err() {
            tessera_conformance::skip::skip(
                "a_unit_is_compiled_once_per_process",
                "no C++ compiler (apt-get install g++; .ci/run installs it)",
            );
            return;
        }
        let src = unit("shared");
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| library_of(&src).unwrap());
            let b = s.spawn(|| library_of(&src).unwrap());
            (a.join().unwrap(), b.join().unwrap())
        });
        assert!(
            Arc::ptr_eq(&a, &b),
            "two threads asking for one unit share one library"
        );
        let other = library_of(&unit("other")).unwrap();
        assert!(!Arc::ptr_eq(&a, &other));
        let broken = library_of("this is not C++").unwrap_err();
        assert!(broken.contains("did not compile as C++"), "{broken}");
    }
}

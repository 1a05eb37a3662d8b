//! Runs generated kernel texts on the host: the same text NVRTC compiles, compiled as C++
//! with a shim header that defines what CUDA provides (`__global__`, `threadIdx`,
//! `__syncthreads`, the intrinsics), and launched with every block's threads as real
//! threads meeting at a barrier. It proves the numerics of the text — the bits of every
//! op, cast and generator, the order-free correctness of the reduction tree — not launch
//! configuration, races, streams or speed.
//!
//! All kernels of a test go into one translation unit (`c++ -std=c++20 -O1
//! -ffp-contract=off`, so no `a * b + c` is contracted, as NVRTC's `--fmad=false`), one
//! shared library, loaded once. The shim and the prelude, the same in every unit and half
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
#include <thread>
#include <barrier>
#include <vector>
#include <functional>
#include <mutex>
#include <condition_variable>
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
static thread_local std::barrier<>* tsr_bar = nullptr;
static inline void __syncthreads() { tsr_bar->arrive_and_wait(); }
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
static inline long long __double_as_longlong(double d) { long long v; std::memcpy(&v, &d, 8); return v; }
static inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
// CUDA's integer atomics, as the block's threads run at once here.
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
// Blocks one after another (so `__shared__` statics are the block's), the threads of a
// block at once, on a pool of threads that lives as long as the library (a reduction's
// block is the device's 256 threads: spawning them per block would cost more than the
// kernels).
struct TsrPool {
    std::mutex m;
    std::condition_variable go, done;
    std::vector<std::thread> threads;
    unsigned long generation = 0;
    unsigned pending = 0, grid = 0, block = 0, b = 0;
    const std::function<void()>* kernel = nullptr;
    std::barrier<>* bar = nullptr;
    void work(unsigned t) {
        unsigned long seen = 0;
        std::unique_lock<std::mutex> l(m);
        for (;;) {
            go.wait(l, [&] { return generation != seen; });
            seen = generation;
            if (t >= block) continue;
            const std::function<void()>* k = kernel;
            threadIdx.x = t; blockIdx.x = b; blockDim.x = block; gridDim.x = grid;
            tsr_bar = bar;
            l.unlock();
            (*k)();
            l.lock();
            if (--pending == 0) done.notify_all();
        }
    }
};
static void tsr_launch(unsigned grid, unsigned block, const std::function<void()>& k) {
    // One launch at a time per library: tests that build the same kernels load the same
    // library, and share its pool (and its `__shared__` statics).
    static std::mutex launching;
    std::lock_guard<std::mutex> one(launching);
    // Never destroyed: its threads wait on it until the process ends.
    static TsrPool* pool = new TsrPool();
    TsrPool& p = *pool;
    std::unique_lock<std::mutex> l(p.m);
    while (p.threads.size() < block) {
        unsigned t = (unsigned)p.threads.size();
        p.threads.emplace_back([t] { pool->work(t); });
        p.threads.back().detach();
    }
    for (unsigned b = 0; b < grid; ++b) {
        std::barrier<> bar(block);
        p.grid = grid; p.block = block; p.b = b; p.kernel = &k; p.bar = &bar;
        p.pending = block;
        ++p.generation;
        p.go.notify_all();
        p.done.wait(l, [&] { return p.pending == 0; });
    }
}
"#;

/// Threads per block of an elementwise launch and the most blocks a launch uses on the
/// host: small, so a launch is cheap, and not a divisor of most shapes, so grid-stride
/// loops and ragged parts happen.
const BLOCK: u32 = 8;
const MAX_GRID: u64 = 6;
/// Threads per block of a reduction's launches through [`HostKernels::run`] (the bit
/// tests): the device's own block size, so every level of the shared-memory tree (128
/// down to 1 partner apart) runs here as there.
const REDUCE_BLOCK: u32 = crate::device::BLOCK;

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
/// header only where the unit is compiled with the options it was.
const CXX_FLAGS: [&str; 7] = [
    "-std=c++20",
    "-O1",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fPIC",
    "-pthread",
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

/// Compiles `plans` into one library; returns it with the entry names it holds.
fn compile(plans: &[&KernelPlan]) -> Result<(Arc<libloading::Library>, Vec<String>), String> {
    let mut unique: BTreeMap<u64, &KernelPlan> = BTreeMap::new();
    for p in plans {
        unique.entry(p.hash).or_insert(p);
    }
    let mut src = unit_head();
    let mut names = Vec::new();
    for p in unique.values() {
        src.push_str(&p.body);
        for e in &p.entries {
            src.push_str(&launcher(&e.name, &e.args));
            names.push(e.name.clone());
        }
    }
    Ok((library_of(&src)?, names))
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
        _ => Err(format!("no C++ compiler ({cxx}) to build the host shim")),
    }
}

/// The host launcher of entry `name`: unpacks `void** a` into the kernel's arguments.
fn launcher(name: &str, args: &[Arg]) -> String {
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
        "extern \"C\" void host_{name}(unsigned grid, unsigned block, void** a) {{ tsr_launch(grid, block, [&] {{ {name}({}); }}); }}\n",
        call.join(", ")
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
/// integer, `true` as a bool byte). A
/// GPU leaves fresh buffers uninitialised, so a kernel that skips an element must show as a
/// wrong value here too, not pass wherever the CPU's answer happens to be 0.
const POISON: u8 = 0xA5;

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
        let (lib, names) = compile(&missing)?;
        libs.0.push(lib);
        let at = libs.0.len() - 1;
        for n in names {
            libs.1.insert(n, at);
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

    /// Runs entry 0 of `plan` as `grid` blocks of `BLOCK` (8) threads over `inputs`, with one
    /// poisoned output buffer of each length in `outputs` (the device's `launch_grid`).
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
        let name = format!("host_{}", plan.entries[0].name);
        // SAFETY: the symbol was generated by `launcher` with this signature; every
        // pointer points into a live buffer: the parameters, copies of the inputs, and the
        // outputs sized by the caller for what the kernel writes.
        #[allow(unsafe_code)]
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(u32, u32, *mut *mut std::ffi::c_void)> =
                lib.get(name.as_bytes()).map_err(|e| e.to_string())?;
            f(grid.max(1), BLOCK, args.as_mut_ptr());
        }
        Ok(outs.into_iter().map(|b| b.0).collect())
    }

    /// [`HostKernels::run_bytes`] with reductions in blocks of `reduce_block` threads.
    fn launch(
        &self,
        plan: &KernelPlan,
        inputs: &[&[u8]],
        out_bytes: usize,
        reduce_block: u32,
    ) -> Result<Vec<u8>, String> {
        let lib = self.library(plan)?;
        let _one_at_a_time = self.launch.lock().map_err(|e| e.to_string())?;
        let tables = tessera_core::random::ziggurat::tables();
        let (mut params, mut ins) = arguments(plan, inputs);
        let wi: Vec<u8> = tables.wi.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ki: Vec<u8> = tables.ki.iter().flat_map(|v| v.to_le_bytes()).collect();
        let fi: Vec<u8> = tables.fi.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = Buf(vec![POISON; out_bytes.max(1)]);
        let pass = |entry: usize,
                    grid: u64,
                    block: u32,
                    args: Vec<*mut std::ffi::c_void>|
         -> Result<(), String> {
            let name = format!("host_{}", plan.entries[entry].name);
            // SAFETY: the symbol was generated by `launcher` with this signature; every
            // pointer in `args` points into a live buffer sized for what the kernel
            // touches (the plan's parameters, the inputs, an output of the output's
            // element count, partials of kept x parts).
            #[allow(unsafe_code)]
            unsafe {
                let f: libloading::Symbol<
                    unsafe extern "C" fn(u32, u32, *mut *mut std::ffi::c_void),
                > = lib.get(name.as_bytes()).map_err(|e| e.to_string())?;
                let mut args = args;
                f(grid.clamp(1, MAX_GRID) as u32, block, args.as_mut_ptr());
            }
            Ok(())
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
            eprintln!("skipped: gcc_gets_a_precompiled_shim: no C++ compiler");
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

    #[test]
    fn a_unit_is_compiled_once_per_process_and_its_library_shared() {
        if compiler().is_err() {
            eprintln!("skipped: a_unit_is_compiled_once_per_process: no C++ compiler");
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

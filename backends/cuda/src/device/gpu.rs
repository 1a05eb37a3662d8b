//! One GPU: its context, its memory pool, its compiled modules, and the launch of a
//! generated kernel over device buffers.
//!
//! - **Memory**: cudarc allocates with `cuMemAllocAsync` from the device's default pool
//!   when the device supports it; the pool's release threshold is raised to "never", so
//!   memory freed by a dropped chunk stays in the pool for the next one instead of going
//!   back to the driver at every synchronisation (no `cuMemAlloc` per chunk in the steady
//!   state).
//! - **Streams**: each host thread gets a stream of its own on each device (created on its
//!   first use, kept for the thread's life), so the scheduler's workers run their kernels
//!   and copies concurrently. The context is put in cudarc's multi-stream mode before the
//!   first allocation, so every buffer records events for the launches and copies that
//!   read or write it: a chunk made on one worker's stream and read on another's is
//!   ordered correctly, and its memory is freed only after the last use.
//! - **Products**: `f32`/`f64` matrix products go to cuBLAS (loaded at run time, one
//!   handle per thread and device on the thread's stream) when the library is present;
//!   row-major operands are handed over as their column-major transposes, so
//!   `C = op(A) B` is computed as `Cᵀ = Bᵀ op(A)ᵀ` with no copies. Without cuBLAS, and for
//!   every other dtype, the backend launches its tiled kernel.
//! - **Modules**: a kernel text is compiled once per architecture (NVRTC, cached in memory
//!   and on disk by [`crate::nvrtc`]) and loaded once per device.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};
use tessera_core::{DType, Error, Result};

use super::memory::{Device, Output};
use crate::codegen::BLOCK;
use crate::codegen::{Arg, KernelPlan, Launch};

thread_local! {
    /// This thread's stream on each device, by context.
    static STREAMS: RefCell<HashMap<usize, Arc<CudaStream>>> = RefCell::new(HashMap::new());
    /// This thread's cuBLAS handle on each device (bound to its stream), by context.
    static BLAS: RefCell<HashMap<usize, Arc<CudaBlas>>> = RefCell::new(HashMap::new());
}

/// Whether cuBLAS loads in this process: probed once, never panics (cudarc only tries to
/// open the library), and reported in the log when it does not.
#[allow(unsafe_code)]
fn cublas_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to dlopen cuBLAS and reports whether it could.
        let present =
            std::panic::catch_unwind(|| unsafe { cudarc::cublas::sys::is_culib_present() })
                .unwrap_or(false);
        if !present {
            log::info!("cuda: cuBLAS not found; matrix products run as tessera's tiled kernel");
        }
        present
    })
}

/// A device error as a tessera error naming the op.
pub(crate) fn device_err(op: &str, e: impl std::fmt::Display) -> Error {
    Error::Device {
        backend: "cuda".to_string(),
        op: op.to_string(),
        detail: e.to_string(),
    }
}

/// A device buffer, and the uses of it still in flight on streams other than the one that
/// made it.
///
/// cudarc keeps one read event per buffer. When two streams read a buffer, the second
/// read records that event again, and the buffer's free (stream-ordered, on the stream
/// that made it) then waits for the second read only: the first may still be queued when
/// the memory goes back to the pool and is handed to a new buffer. (Seen on an H200: a
/// block sliced by two workers for a rechunk, read after its free.) So each use on another
/// stream also leaves an event here, and the buffer's own stream waits for all of them
/// before the memory is freed. Completed events are dropped as new ones arrive.
pub struct GpuBuf {
    slice: CudaSlice<u8>,
    reads: Mutex<Vec<CudaEvent>>,
}

impl GpuBuf {
    fn new(slice: CudaSlice<u8>) -> GpuBuf {
        GpuBuf {
            slice,
            reads: Mutex::default(),
        }
    }

    /// Notes a use of the buffer just queued on `stream` (after the launch or copy).
    ///
    /// # Errors
    /// [`Error::Device`] when the event cannot be recorded.
    fn used_on(&self, stream: &Arc<CudaStream>) -> Result<()> {
        if Arc::ptr_eq(self.slice.stream(), stream) {
            return Ok(());
        }
        let done = stream
            .record_event(Some(
                cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING,
            ))
            .map_err(|e| device_err("record an event", e))?;
        let mut reads = self
            .reads
            .lock()
            .map_err(|_| Error::Internal("a buffer's event list lock was poisoned".into()))?;
        reads.retain(|r| !r.is_complete());
        reads.push(done);
        Ok(())
    }
}

impl Drop for GpuBuf {
    fn drop(&mut self) {
        let own = self.slice.stream().clone();
        let reads = self.reads.get_mut().map(std::mem::take).unwrap_or_default();
        for done in &reads {
            // A failed wait stays in the context's error slot, which cudarc reports on its
            // next call; the free below is still ordered after every wait that succeeded.
            let _ = own.wait(done);
        }
        // `slice` is dropped after this, freed on `own` behind every wait.
    }
}

impl std::fmt::Debug for GpuBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuBuf({} bytes)", self.slice.len())
    }
}

/// The ziggurat's tables on one device.
struct Tables {
    wi: CudaSlice<f64>,
    ki: CudaSlice<u64>,
    fi: CudaSlice<f64>,
}

/// One device.
pub struct Gpu {
    /// Its ordinal.
    pub ordinal: usize,
    ctx: Arc<CudaContext>,
    arch: &'static str,
    sms: u32,
    modules: Mutex<HashMap<u64, Arc<CudaModule>>>,
    tables: OnceLock<std::result::Result<Tables, String>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cuda:{} ({}, {} SMs)", self.ordinal, self.arch, self.sms)
    }
}

/// cuBLAS's arguments for row-major `C (m x n) = op(A) B`: column-major
/// `Cᵀ (n x m) = Bᵀ op(A)ᵀ`, since cuBLAS reads the row-major buffers of B and A as their
/// column-major transposes (no copies). `op(A)` is `A` (`m x k`) or, with `transpose_a`,
/// `Aᵀ` of `A` stored `k x m`. Alpha is one and beta zero, so C is written, never read.
fn gemm_config<T>(transpose_a: bool, (m, k, n): (i32, i32, i32), one: T, zero: T) -> GemmConfig<T> {
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    GemmConfig {
        transa: CUBLAS_OP_N,
        transb: if transpose_a {
            CUBLAS_OP_T
        } else {
            CUBLAS_OP_N
        },
        m: n,
        n: m,
        k,
        alpha: one,
        lda: n,
        ldb: if transpose_a { m } else { k },
        beta: zero,
        ldc: n,
    }
}

/// `out = op(a) @ b` of `T` elements through cuBLAS (`unit` is `(1, 0)` of `T`: alpha
/// and beta).
///
/// # Errors
/// A buffer shorter than its shape, or cuBLAS's error, as text.
#[allow(unsafe_code)]
fn gemm_into<T>(
    blas: &CudaBlas,
    transpose_a: bool,
    (m, k, n): (usize, usize, usize),
    (a, b): (&GpuBuf, &GpuBuf),
    out: &mut CudaSlice<u8>,
    (one, zero): (T, T),
) -> std::result::Result<(), String>
where
    CudaBlas: Gemm<T>,
{
    let int = |v: usize| i32::try_from(v).map_err(|_| format!("{v} exceeds cuBLAS's int"));
    let cfg = gemm_config(transpose_a, (int(m)?, int(k)?, int(n)?), one, zero);
    let short = || "an operand's buffer is shorter than its shape".to_string();
    // SAFETY: the buffers hold C-order elements of `T` written by this backend (any bit
    // pattern is a valid float); the views are no longer than the buffers (`transmute`
    // checks); cuBLAS reads `m k` and `k n` elements and writes `m n` through leading
    // dimensions that match the row-major shapes (`gemm_config`); beta = 0, so C is not
    // read before it is written.
    unsafe {
        let av = a.slice.transmute::<T>(m * k).ok_or_else(short)?;
        let bv = b.slice.transmute::<T>(k * n).ok_or_else(short)?;
        let mut ov = out.transmute_mut::<T>(m * n).ok_or_else(short)?;
        blas.gemm(cfg, &bv, &av, &mut ov).map_err(|e| e.to_string())
    }
}

/// `compute_XY` for a compute capability, as NVRTC's `--gpu-architecture` wants it.
fn arch_name(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (7, 5) => "compute_75",
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 7) => "compute_87",
        (8, 9) => "compute_89",
        (9, 0) => "compute_90",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        // A newer card: one name per process and device kind, so leaking it is bounded.
        (a, b) => Box::leak(format!("compute_{a}{b}").into_boxed_str()),
    }
}

impl Gpu {
    /// Opens device `ordinal` and sets up its memory pool.
    ///
    /// # Errors
    /// [`Error::Device`] when the context cannot be created or queried.
    #[allow(unsafe_code)]
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let ctx = CudaContext::new(ordinal).map_err(|e| device_err("open device", e))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| device_err("compute capability", e))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| device_err("multiprocessor count", e))?;
        if ctx.has_async_alloc() {
            let mut pool: cudarc::driver::sys::CUmemoryPool = std::ptr::null_mut();
            let mut threshold: u64 = u64::MAX;
            // SAFETY: the context is bound to this thread by `compute_capability` above;
            // `cuDeviceGetDefaultMemPool` writes one handle to a local, and
            // `cuMemPoolSetAttribute` reads one u64 through a valid pointer to a local.
            let ok = unsafe {
                cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                    == cudarc::driver::sys::CUresult::CUDA_SUCCESS
                    && cudarc::driver::sys::cuMemPoolSetAttribute(
                        pool,
                        cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                        (&mut threshold as *mut u64).cast(),
                    ) == cudarc::driver::sys::CUresult::CUDA_SUCCESS
            };
            if !ok {
                log::warn!("cuda:{ordinal}: the memory pool keeps its default release threshold");
            }
        }
        // A stream of the opening thread's before any allocation: it puts the context in
        // multi-stream mode, so every buffer made from now on tracks its uses with events.
        let first = ctx
            .new_stream()
            .map_err(|e| device_err("create a stream", e))?;
        STREAMS.with(|m| m.borrow_mut().insert(Arc::as_ptr(&ctx) as usize, first));
        Ok(Gpu {
            ordinal,
            ctx,
            arch: arch_name(major, minor),
            sms: u32::try_from(sms).unwrap_or(1).max(1),
            modules: Mutex::default(),
            tables: OnceLock::new(),
        })
    }

    /// The calling thread's stream on this device (made on the thread's first use).
    ///
    /// # Errors
    /// [`Error::Device`] when a stream cannot be created.
    pub fn stream(&self) -> Result<Arc<CudaStream>> {
        let key = Arc::as_ptr(&self.ctx) as usize;
        STREAMS.with(|m| {
            if let Some(s) = m.borrow().get(&key) {
                return Ok(s.clone());
            }
            let s = self
                .ctx
                .new_stream()
                .map_err(|e| device_err("create a stream", e))?;
            m.borrow_mut().insert(key, s.clone());
            Ok(s)
        })
    }

    /// A device buffer of `len` bytes (at least one) that a kernel, a join or a cuBLAS
    /// product is about to fill: not zeroed, since each writes every byte of its output (a
    /// memset would be one more pass over the output).
    ///
    /// # Errors
    /// [`Error::Device`] (out of memory).
    #[allow(unsafe_code)]
    fn for_kernel_output(&self, len: usize) -> Result<CudaSlice<u8>> {
        let s = self.stream()?;
        // SAFETY: the memory is uninitialised, and nothing reads it before a kernel writes
        // it: an elementwise kernel writes `out[f]` for every `f < n`, pass one writes
        // every partial `b < kept * parts`, pass two every `out[ko]` for `ko < kept`; the
        // positions buffer of a reduction that is not an arg-reduction is never read; the
        // one byte held for an empty output is at most copied and dropped (downloads
        // truncate to the output's length, 0); a join copies every byte of its result, and
        // a cuBLAS product with beta = 0 writes every element of C without reading it. Any
        // byte pattern is a valid `u8`.
        unsafe { s.alloc::<u8>(len.max(1)) }.map_err(|e| device_err("alloc", e))
    }

    /// This thread's cuBLAS handle on this device, or `None` when cuBLAS is absent or its
    /// handle cannot be made (logged once; products then run as the tiled kernel).
    fn blas(&self) -> Result<Option<Arc<CudaBlas>>> {
        if !cublas_present() {
            return Ok(None);
        }
        let key = Arc::as_ptr(&self.ctx) as usize;
        if let Some(b) = BLAS.with(|m| m.borrow().get(&key).cloned()) {
            return Ok(Some(b));
        }
        let stream = self.stream()?;
        match std::panic::catch_unwind(|| CudaBlas::new(stream)) {
            Ok(Ok(b)) => {
                let b = Arc::new(b);
                BLAS.with(|m| m.borrow_mut().insert(key, b.clone()));
                Ok(Some(b))
            }
            Ok(Err(e)) => Err(device_err("create a cuBLAS handle", e)),
            Err(p) => {
                log::warn!(
                    "cuda:{}: cuBLAS loaded but failed ({}); matrix products run as the tiled kernel",
                    self.ordinal,
                    tessera_core::error::panic_message(p.as_ref())
                );
                Ok(None)
            }
        }
    }

    fn tables(&self) -> Result<&Tables> {
        let t = self.tables.get_or_init(|| {
            let z = tessera_core::random::ziggurat::tables();
            let s = self.stream().map_err(|e| e.to_string())?;
            Ok(Tables {
                wi: s.clone_htod(&z.wi[..]).map_err(|e| e.to_string())?,
                ki: s.clone_htod(&z.ki[..]).map_err(|e| e.to_string())?,
                fi: s.clone_htod(&z.fi[..]).map_err(|e| e.to_string())?,
            })
        });
        t.as_ref()
            .map_err(|e| device_err("upload the ziggurat tables", e))
    }

    fn function(&self, plan: &KernelPlan, entry: usize) -> Result<CudaFunction> {
        let module = {
            let mut modules = self
                .modules
                .lock()
                .map_err(|_| Error::Internal("the module cache's lock was poisoned".into()))?;
            match modules.get(&plan.hash) {
                Some(m) => m.clone(),
                None => {
                    let ptx = crate::nvrtc::compile(&plan.source(), self.arch)?;
                    let m = self
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_src(ptx.ptx.as_str()))
                        .map_err(|e| device_err("load module", e))?;
                    modules.insert(plan.hash, m.clone());
                    m
                }
            }
        };
        module
            .load_function(&plan.entries[entry].name)
            .map_err(|e| device_err("load function", e))
    }

    /// `plan`'s parameters (`P`, at least one word) copied to the device on `s`.
    fn params(&self, s: &Arc<CudaStream>, plan: &KernelPlan) -> Result<CudaSlice<u64>> {
        let params = if plan.params.is_empty() {
            vec![0u64]
        } else {
            plan.params.clone()
        };
        s.clone_htod(&params)
            .map_err(|e| device_err("copy parameters", e))
    }

    fn grid(&self, blocks: u64) -> u32 {
        // Enough blocks to fill every SM several times; the kernels stride over the rest.
        blocks.clamp(1, u64::from(self.sms) * 32) as u32
    }
}

impl Device for Gpu {
    type Buf = GpuBuf;

    fn sms(&self) -> u32 {
        self.sms
    }

    fn capacity(&self) -> Option<u64> {
        self.ctx.total_mem().ok().map(|b| b as u64)
    }

    fn upload(&self, bytes: &[u8]) -> Result<GpuBuf> {
        let s = self.stream()?;
        // A zero-length allocation is refused by some drivers: hold one byte.
        let slice = if bytes.is_empty() {
            s.alloc_zeros::<u8>(1).map_err(|e| device_err("alloc", e))?
        } else {
            s.clone_htod(bytes)
                .map_err(|e| device_err("copy to device", e))?
        };
        Ok(GpuBuf::new(slice))
    }

    fn download(&self, buf: &GpuBuf, len: usize) -> Result<Vec<u8>> {
        let s = self.stream()?;
        // Synchronous (the stream is synchronised below), so no use stays in flight.
        let mut v = s
            .clone_dtoh(&buf.slice)
            .map_err(|e| device_err("copy to host", e))?;
        s.synchronize().map_err(|e| device_err("synchronize", e))?;
        v.truncate(len);
        Ok(v)
    }

    fn join(&self, parts: &[(&GpuBuf, usize)]) -> Result<GpuBuf> {
        let total = parts
            .iter()
            .try_fold(0usize, |a, &(_, len)| a.checked_add(len))
            .ok_or_else(|| device_err("join", "the joined length overflows usize"))?;
        let s = self.stream()?;
        let mut out = self.for_kernel_output(total)?;
        let mut at = 0;
        for &(buf, len) in parts {
            if len == 0 {
                continue;
            }
            let src = buf.slice.try_slice(..len).ok_or_else(|| {
                device_err(
                    "join",
                    format!("{len} bytes asked of a buffer of {}", buf.slice.len()),
                )
            })?;
            let mut dst = out.slice_mut(at..at + len);
            s.memcpy_dtod(&src, &mut dst)
                .map_err(|e| device_err("copy on the device", e))?;
            buf.used_on(&s)?;
            at += len;
        }
        Ok(GpuBuf::new(out))
    }

    #[allow(unsafe_code)]
    fn blas_product(
        &self,
        dtype: DType,
        transpose_a: bool,
        (m, k, n): (usize, usize, usize),
        a: &GpuBuf,
        b: &GpuBuf,
    ) -> Result<Option<GpuBuf>> {
        // cuBLAS takes f32/f64, non-empty products, and dimensions that fit its `int`.
        let fits = [m, k, n].iter().all(|&v| v > 0 && i32::try_from(v).is_ok());
        if !matches!(dtype, DType::F32 | DType::F64) || !fits {
            return Ok(None);
        }
        let Some(blas) = self.blas()? else {
            return Ok(None);
        };
        let bytes = m
            .checked_mul(n)
            .and_then(|e| e.checked_mul(dtype.size()))
            .ok_or_else(|| device_err("matmul", format!("{m} x {n} overflows usize")))?;
        let mut out = self.for_kernel_output(bytes)?;
        let dims = (m, k, n);
        match dtype {
            DType::F64 => gemm_into(&blas, transpose_a, dims, (a, b), &mut out, (1.0f64, 0.0))
                .map_err(|e| device_err("cuBLAS dgemm", e))?,
            _ => gemm_into(&blas, transpose_a, dims, (a, b), &mut out, (1.0f32, 0.0))
                .map_err(|e| device_err("cuBLAS sgemm", e))?,
        }
        let s = self.stream()?;
        a.used_on(&s)?;
        b.used_on(&s)?;
        Ok(Some(GpuBuf::new(out)))
    }

    #[allow(unsafe_code)]
    fn launch_grid(
        &self,
        plan: &KernelPlan,
        grid: u32,
        inputs: &[&GpuBuf],
        outputs: &[Output],
    ) -> Result<Vec<GpuBuf>> {
        let s = self.stream()?;
        let mut outs = Vec::with_capacity(outputs.len());
        for o in outputs {
            let mut buf = self.for_kernel_output(o.len())?;
            if let Output::Filled(n, byte) = *o {
                let (dptr, _record) = buf.device_ptr_mut(&s);
                // SAFETY: `buf` was just allocated on `s` with at least `n` bytes (one at
                // least); the fill is ordered on `s` before the kernel that reads it.
                unsafe {
                    cudarc::driver::result::memset_d8_async(dptr, byte, n.max(1), s.cu_stream())
                }
                .map_err(|e| device_err("fill", e))?;
            }
            outs.push(buf);
        }
        let p = self.params(&s, plan)?;
        let f = self.function(plan, 0)?;
        let mut b = s.launch_builder(&f);
        b.arg(&p);
        for i in inputs {
            b.arg(&i.slice);
        }
        for o in outs.iter_mut() {
            b.arg(o);
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.max(1), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the frame kernels take (P, the inputs, the outputs) as `const u64*`,
        // `const u8*` and `u8*` in this order (`frame::kernels` writes each entry so);
        // their row counts and offsets come from `P`, which the backend packed from the
        // buffers' own lengths, and each output was sized by the caller for what the
        // kernel writes (for_kernel_output's contract: every byte read is written first).
        unsafe { b.launch(cfg) }.map_err(|e| device_err("launch", e))?;
        for i in inputs {
            i.used_on(&s)?;
        }
        Ok(outs.into_iter().map(GpuBuf::new).collect())
    }

    #[allow(unsafe_code)]
    fn run(&self, plan: &KernelPlan, inputs: &[&GpuBuf], out_bytes: usize) -> Result<GpuBuf> {
        let s = self.stream()?;
        let mut out = self.for_kernel_output(out_bytes)?;
        let p = self.params(&s, plan)?;
        let normal = plan.entries[0].args.contains(&Arg::ZigguratTables);
        let tables = if normal { Some(self.tables()?) } else { None };
        let cfg = |blocks: u64| LaunchConfig {
            grid_dim: (self.grid(blocks), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        match plan.launch {
            Launch::Elementwise { n } => {
                if n == 0 {
                    return Ok(GpuBuf::new(out));
                }
                let f = self.function(plan, 0)?;
                let mut b = s.launch_builder(&f);
                b.arg(&p);
                for i in inputs {
                    b.arg(&i.slice);
                }
                b.arg(&mut out);
                if let Some(t) = tables {
                    b.arg(&t.wi).arg(&t.ki).arg(&t.fi);
                }
                // SAFETY: the arguments match the entry's signature by construction
                // (`codegen` lists them in this order: P, the inputs, the output, the
                // tables); every buffer holds what the kernel indexes, since the program's
                // maps were checked against the input shapes and the output holds `n`
                // elements; the block size is a power of two.
                unsafe { b.launch(cfg(n.div_ceil(u64::from(BLOCK)))) }
                    .map_err(|e| device_err("launch", e))?;
            }
            Launch::Reduce {
                kept, parts, acc, ..
            } => {
                if kept == 0 {
                    return Ok(GpuBuf::new(out));
                }
                let np = usize::try_from(kept * parts).map_err(|e| device_err("partials", e))?;
                let mut part = self.for_kernel_output(np * acc.size())?;
                let mut idx = self.for_kernel_output(np * 8)?;
                let f = self.function(plan, 0)?;
                let mut b = s.launch_builder(&f);
                b.arg(&p);
                for i in inputs {
                    b.arg(&i.slice);
                }
                b.arg(&mut part).arg(&mut idx);
                if let Some(t) = tables {
                    b.arg(&t.wi).arg(&t.ki).arg(&t.fi);
                }
                // SAFETY: as above; the partial buffers hold `kept * parts` accumulators
                // and positions, which pass one writes at most once each.
                unsafe { b.launch(cfg(kept * parts)) }.map_err(|e| device_err("launch", e))?;
                let fin = self.function(plan, 1)?;
                let mut b = s.launch_builder(&fin);
                b.arg(&p).arg(&part).arg(&idx).arg(&mut out);
                // SAFETY: `_fin` takes (P, partials, positions, output); the output holds
                // `kept` results.
                unsafe { b.launch(cfg(kept.div_ceil(u64::from(BLOCK)))) }
                    .map_err(|e| device_err("launch", e))?;
            }
        }
        // The inputs were read on this stream: their frees must wait for it.
        for i in inputs {
            i.used_on(&s)?;
        }
        Ok(GpuBuf::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Column-major `C = op(A) op(B)` as BLAS defines it.
    fn column_major_gemm(cfg: &GemmConfig<f64>, a: &[f64], b: &[f64]) -> Vec<f64> {
        use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
        let (m, n, k) = (cfg.m as usize, cfg.n as usize, cfg.k as usize);
        let (lda, ldb, ldc) = (cfg.lda as usize, cfg.ldb as usize, cfg.ldc as usize);
        let op_a = |i: usize, l: usize| match cfg.transa {
            CUBLAS_OP_N => a[i + l * lda],
            _ => a[l + i * lda],
        };
        let op_b = |l: usize, j: usize| match cfg.transb {
            CUBLAS_OP_N => b[l + j * ldb],
            _ => b[j + l * ldb],
        };
        let mut c = vec![0.0; ldc * n];
        for j in 0..n {
            for i in 0..m {
                c[i + j * ldc] = (0..k).map(|l| op_a(i, l) * op_b(l, j)).sum();
            }
        }
        c
    }

    /// The arguments handed to cuBLAS give the row-major product, for `a @ b` and for
    /// `aᵀ @ b` with `a` stored transposed: checked against BLAS's column-major
    /// definition, since no GPU is needed to get the layouts right.
    #[test]
    fn gemm_arguments_give_row_major_products() {
        let (m, k, n) = (3usize, 4usize, 2usize);
        let b: Vec<f64> = (0..k * n).map(|v| v as f64 * 0.5 - 1.0).collect();
        for transpose_a in [false, true] {
            let a: Vec<f64> = (0..m * k).map(|v| v as f64 + 1.0).collect();
            let at = |i: usize, l: usize| {
                if transpose_a {
                    a[l * m + i]
                } else {
                    a[i * k + l]
                }
            };
            let want: Vec<f64> = (0..m * n)
                .map(|f| (0..k).map(|l| at(f / n, l) * b[l * n + f % n]).sum())
                .collect();
            let cfg = gemm_config(transpose_a, (3, 4, 2), 1.0, 0.0);
            // cuBLAS's A is the right operand's buffer and its B the left's.
            assert_eq!(
                column_major_gemm(&cfg, &b, &a),
                want,
                "transpose_a {transpose_a}"
            );
        }
    }

    #[test]
    fn architectures_are_named_for_nvrtc() {
        assert_eq!(arch_name(9, 0), "compute_90");
        assert_eq!(arch_name(11, 3), "compute_113");
    }
}

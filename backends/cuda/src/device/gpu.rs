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
//! - **Modules**: a kernel text is compiled once per architecture (NVRTC, cached in memory
//!   and on disk by [`crate::nvrtc`]) and loaded once per device.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use tessera_core::{Error, Result};

use super::memory::{Device, BLOCK};
use crate::codegen::{Arg, KernelPlan, Launch};

thread_local! {
    /// This thread's stream on each device, by context.
    static STREAMS: RefCell<HashMap<usize, Arc<CudaStream>>> = RefCell::new(HashMap::new());
}

/// A device error as a tessera error naming the op.
pub(crate) fn device_err(op: &str, e: impl std::fmt::Display) -> Error {
    Error::Device {
        backend: "cuda".to_string(),
        op: op.to_string(),
        detail: e.to_string(),
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

    /// A zeroed device buffer of `len` bytes (at least one).
    ///
    /// # Errors
    /// [`Error::Device`] (out of memory).
    /// A device buffer of `len` bytes (at least one) that a kernel is about to fill: not
    /// zeroed, since every kernel writes each element of its output and partials (a
    /// memset would be one more pass over the output).
    #[allow(unsafe_code)]
    fn for_kernel_output(&self, len: usize) -> Result<CudaSlice<u8>> {
        let s = self.stream()?;
        // SAFETY: the memory is uninitialised, and nothing reads it before a kernel writes
        // it: an elementwise kernel writes `out[f]` for every `f < n`, pass one writes
        // every partial `b < kept * parts`, pass two every `out[ko]` for `ko < kept`; the
        // positions buffer of a reduction that is not an arg-reduction is never read; the
        // one byte held for an empty output is at most copied and dropped (downloads
        // truncate to the output's length, 0). Any byte pattern is a valid `u8`.
        unsafe { s.alloc::<u8>(len.max(1)) }.map_err(|e| device_err("alloc", e))
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

    fn grid(&self, blocks: u64) -> u32 {
        // Enough blocks to fill every SM several times; the kernels stride over the rest.
        blocks.clamp(1, u64::from(self.sms) * 32) as u32
    }
}

impl Device for Gpu {
    type Buf = CudaSlice<u8>;

    fn sms(&self) -> u32 {
        self.sms
    }

    fn upload(&self, bytes: &[u8]) -> Result<CudaSlice<u8>> {
        let s = self.stream()?;
        // A zero-length allocation is refused by some drivers: hold one byte.
        if bytes.is_empty() {
            return s.alloc_zeros::<u8>(1).map_err(|e| device_err("alloc", e));
        }
        s.clone_htod(bytes)
            .map_err(|e| device_err("copy to device", e))
    }

    fn download(&self, buf: &CudaSlice<u8>, len: usize) -> Result<Vec<u8>> {
        let s = self.stream()?;
        let mut v = s
            .clone_dtoh(buf)
            .map_err(|e| device_err("copy to host", e))?;
        s.synchronize().map_err(|e| device_err("synchronize", e))?;
        v.truncate(len);
        Ok(v)
    }

    #[allow(unsafe_code)]
    fn run(
        &self,
        plan: &KernelPlan,
        inputs: &[&CudaSlice<u8>],
        out_bytes: usize,
    ) -> Result<CudaSlice<u8>> {
        let s = self.stream()?;
        let mut out = self.for_kernel_output(out_bytes)?;
        let params = if plan.params.is_empty() {
            vec![0u64]
        } else {
            plan.params.clone()
        };
        let p = s
            .clone_htod(&params)
            .map_err(|e| device_err("copy parameters", e))?;
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
                    return Ok(out);
                }
                let f = self.function(plan, 0)?;
                let mut b = s.launch_builder(&f);
                b.arg(&p);
                for i in inputs {
                    b.arg(*i);
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
                    return Ok(out);
                }
                let np = usize::try_from(kept * parts).map_err(|e| device_err("partials", e))?;
                let mut part = self.for_kernel_output(np * acc.size())?;
                let mut idx = self.for_kernel_output(np * 8)?;
                let f = self.function(plan, 0)?;
                let mut b = s.launch_builder(&f);
                b.arg(&p);
                for i in inputs {
                    b.arg(*i);
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
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_are_named_for_nvrtc() {
        assert_eq!(arch_name(9, 0), "compute_90");
        assert_eq!(arch_name(11, 3), "compute_113");
    }
}

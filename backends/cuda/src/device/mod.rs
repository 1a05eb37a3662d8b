//! The `cuda` array backend: chunks in device memory, every fused program one generated
//! kernel per output.
//!
//! **Placement (several GPUs on one node).** Every device the process opens gets a
//! [`Gpu`] (all visible ones, or under `scheduler = "mpi"` the one of the rank's local
//! rank: [`ordinals`]). A chunk made from nothing — uploaded from the host, or generated
//! (`full`, `random`, `iota`, a program with no inputs) — goes to the next device in turn
//! (round robin), so the blocks of an array spread evenly. An op runs on the device of its
//! first input; inputs held by another device are copied over through the host first (a
//! copy the scheduler's locality keeps rare, since a chain over one block stays where the
//! block is). Results meet on the host when `compute()` gathers them. The scheduler's
//! workers each use their own stream on every device.
//!
//! **Memory.** The GPUs are [`Tiered`]: each holds at most `device.memory-limit`, and
//! past it the least recently used buffers spill to host memory and on to disk
//! ([`tiers`]), shared with the dataframe backend.
//!
//! **What runs where.** Programs (and through them every elementwise op, cast, strided or
//! transposed read, broadcast, generator and reduction) run as kernels. `matmul` runs
//! through cuBLAS for `f32`/`f64` where the library loads, and as a tiled kernel
//! otherwise (every dtype). `reshape` relabels a buffer. `concatenate` copies the blocks on
//! the device: as consecutive runs when they meet along their leading axis, by a kernel
//! that interleaves them along an inner axis. `qr` and `svd` are declared unsupported, so
//! linear algebra runs them on the host, saying so. The three streamed programs are
//! native: `sketch_program` (`X Ω` and `Xᵀ (X Ω)` with the block read in place, stacked on
//! the device), `matmul_program` (the program evaluated inside the product's tiles when
//! the other operand is at most [`FUSED_WIDTH`] wide, so `svd_compressed`'s generated
//! block never reaches memory; materialised and multiplied by the library otherwise) and
//! `moments_program` (the block evaluated once, its sum and `M2` read from memory).

mod gpu;
mod memory;
pub mod ordinals;
pub mod tiers;

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tessera_core::backend::{downcast_chunk, ArrayBackend, Capabilities, Chunk, ChunkData};
use tessera_core::program::{primitives, Program};
use tessera_core::{DType, Error, HostArray, Result, Scalar};

pub use crate::codegen::BLOCK;
pub use gpu::{Gpu, GpuBuf};
pub use memory::{parts_for, Device, Output};
pub use tiers::{TierLimits, Tiered, Tiers};

use crate::codegen::generate;
use crate::host_bytes;

/// The backend's name.
pub const NAME: &str = "cuda";

/// The widest other operand `matmul_program` fuses the program into (columns of `P @ b`,
/// rows of `a @ P`): up to this, re-evaluating the program per tile of 16 costs less than
/// writing and reading the block; past it the block is materialised and multiplied by the
/// library.
pub const FUSED_WIDTH: usize = 64;

/// A chunk in one device's memory: a C-order buffer of its elements.
pub struct DeviceChunk<B> {
    buf: Arc<B>,
    dtype: DType,
    shape: Vec<usize>,
    device: usize,
    repr: String,
    backend: String,
}

impl<B> std::fmt::Debug for DeviceChunk<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr)
    }
}

impl<B> DeviceChunk<B> {
    fn new(
        buf: Arc<B>,
        dtype: DType,
        shape: Vec<usize>,
        device: usize,
        backend: &str,
    ) -> DeviceChunk<B> {
        let repr = format!("DeviceChunk({backend}:{device}, {dtype}{shape:?})");
        DeviceChunk {
            buf,
            dtype,
            shape,
            device,
            repr,
            backend: backend.to_string(),
        }
    }

    /// The device holding it.
    pub fn device(&self) -> usize {
        self.device
    }

    fn nbytes_exact(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.size()
    }
}

impl<B: Send + Sync + 'static> ChunkData for DeviceChunk<B> {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn backend(&self) -> &str {
        &self.backend
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The CUDA backend over a set of devices: every visible GPU ([`Gpu`]) in the registered
/// `cuda` backend; tests run the same backend over host devices that execute the same
/// kernel texts.
#[derive(Debug)]
pub struct CudaBackend<D: Device = Tiered<Gpu>> {
    name: String,
    gpus: Vec<D>,
    next: AtomicUsize,
    caps: Capabilities,
}

/// The process's GPUs out of the `count` visible: those [`ordinals::choose`] picks
/// (`device.ordinal`; under `scheduler = "mpi"` the device of the rank's local rank),
/// opened once under the configured memory tiers (`device.memory-limit`,
/// `device.host-limit`, `spill-dir`) and shared by the array and dataframe backends, so
/// that both count against one budget per card.
///
/// # Errors
/// [`Error::Device`] when a device cannot be opened; a bad value of those keys.
pub fn open_gpus(count: usize) -> Result<Arc<Tiers<Gpu>>> {
    static GPUS: std::sync::Mutex<Option<Arc<Tiers<Gpu>>>> = std::sync::Mutex::new(None);
    let mut held = GPUS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = held.as_ref() {
        return Ok(t.clone());
    }
    let chosen = ordinals::choose(
        count,
        tessera_core::config::device_ordinal()?,
        tessera_core::config::scheduler()?.is_distributed(),
        ordinals::local_rank(),
    )?;
    let gpus = chosen
        .into_iter()
        .map(Gpu::open)
        .collect::<Result<Vec<_>>>()?;
    let tiers = Tiers::configured(NAME, gpus)?;
    *held = Some(tiers.clone());
    Ok(tiers)
}

impl CudaBackend<Tiered<Gpu>> {
    /// Opens `count` GPUs as the `cuda` backend, their memory in tiers ([`open_gpus`]).
    ///
    /// # Errors
    /// [`Error::Device`] when a device cannot be opened; a bad memory setting.
    pub fn open(count: usize) -> Result<CudaBackend<Tiered<Gpu>>> {
        CudaBackend::with_devices(NAME, open_gpus(count)?.devices())
    }
}

impl<D: Device> CudaBackend<D> {
    /// The backend `name` over `devices` (at least one).
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty device list.
    pub fn with_devices(name: &str, devices: Vec<D>) -> Result<CudaBackend<D>> {
        let place = match devices.len() {
            0 => {
                return Err(Error::invalid(
                    name,
                    "a device backend needs at least one device",
                ))
            }
            1 => format!("{name}:0"),
            n => format!("{name}:0..{n}"),
        };
        Ok(CudaBackend {
            name: name.to_string(),
            gpus: devices,
            next: AtomicUsize::new(0),
            caps: Capabilities::all(&place)
                .with_native_programs()
                .without_ops(Capabilities::BLOCK_LINALG),
        })
    }

    /// The devices, in ordinal order.
    pub fn devices(&self) -> &[D] {
        &self.gpus
    }

    fn place(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.gpus.len()
    }

    fn chunk<'a>(&self, c: &'a Chunk, op: &str) -> Result<&'a DeviceChunk<D::Buf>> {
        downcast_chunk::<DeviceChunk<D::Buf>>(c, &self.name, op)
    }

    fn wrap(&self, buf: D::Buf, dtype: DType, shape: Vec<usize>, device: usize) -> Chunk {
        Arc::new(DeviceChunk::new(
            Arc::new(buf),
            dtype,
            shape,
            device,
            &self.name,
        ))
    }

    /// `c`'s buffer on device `to` (a copy through the host when it lives elsewhere).
    fn on(&self, c: &DeviceChunk<D::Buf>, to: usize) -> Result<Arc<D::Buf>> {
        if c.device == to {
            return Ok(c.buf.clone());
        }
        let bytes = self.gpus[c.device].download(&c.buf, c.nbytes_exact())?;
        Ok(Arc::new(self.gpus[to].upload(&bytes)?))
    }
}

impl<D: Device> CudaBackend<D> {
    /// `op(a) @ b` on `a`'s device, `op(a)` being `a` or, with `transpose_a`, `aᵀ` read in
    /// place: the device's BLAS where it serves the dtype, the tiled kernel otherwise.
    fn product(
        &self,
        a: &DeviceChunk<D::Buf>,
        b: &DeviceChunk<D::Buf>,
        transpose_a: bool,
    ) -> Result<Chunk> {
        // `matmul_dims` refuses two dtypes and shapes that do not fit, as every backend does.
        let left = match (transpose_a, a.shape.as_slice()) {
            (true, &[k, m]) => vec![m, k],
            _ => a.shape.clone(),
        };
        let (m, k, n) = tessera_core::backend::matmul_dims((a.dtype, &left), (b.dtype, &b.shape))?;
        let bytes = m
            .checked_mul(n)
            .and_then(|e| e.checked_mul(a.dtype.size()))
            .ok_or_else(|| Error::shape("matmul", format!("{m} x {n} overflows usize")))?;
        let device = a.device;
        let gpu = &self.gpus[device];
        let bufs = [self.on(a, device)?, self.on(b, device)?];
        let buf = match gpu.blas_product(a.dtype, transpose_a, (m, k, n), &bufs[0], &bufs[1])? {
            Some(buf) => buf,
            None => {
                let plan = if transpose_a {
                    crate::codegen::matmul_transposed_a(a.dtype, m, k, n)?
                } else {
                    crate::codegen::matmul(a.dtype, m, k, n)?
                };
                gpu.run(&plan, &[&bufs[0], &bufs[1]], bytes)?
            }
        };
        Ok(self.wrap(buf, a.dtype, vec![m, n], device))
    }
}

impl<D: Device> ArrayBackend for CudaBackend<D> {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        let device = self.place();
        let buf = self.gpus[device].upload(&host_bytes::to_bytes(data))?;
        Ok(self.wrap(buf, data.dtype(), data.shape().to_vec(), device))
    }

    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        let c = self.chunk(chunk, "to_host")?;
        let bytes = self.gpus[c.device].download(&c.buf, c.nbytes_exact())?;
        host_bytes::from_bytes(c.dtype, &c.shape, &bytes)
    }

    tessera_core::program_primitives!();

    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        primitives::run_one(self, primitives::full(shape, value)?, &[])
    }

    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        primitives::run_one(
            self,
            primitives::cast(x.dtype(), x.shape(), to)?,
            std::slice::from_ref(x),
        )
    }

    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        let c = self.chunk(x, "reshape")?;
        if shape.iter().product::<usize>() != c.shape.iter().product::<usize>() {
            return Err(Error::shape(
                "reshape",
                format!("cannot reshape {:?} into {shape:?}", c.shape),
            ));
        }
        // A C-order buffer read in C order under another shape: the same bytes.
        Ok(Arc::new(DeviceChunk::new(
            c.buf.clone(),
            c.dtype,
            shape.to_vec(),
            c.device,
            &self.name,
        )))
    }

    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        let chunks = parts
            .iter()
            .map(|c| self.chunk(c, "concatenate"))
            .collect::<Result<Vec<_>>>()?;
        let shapes: Vec<(DType, &[usize])> = chunks
            .iter()
            .map(|c| (c.dtype, c.shape.as_slice()))
            .collect();
        let shape = tessera_core::backend::concat_shape(&shapes, axis)?;
        let Some(first) = chunks.first() else {
            return Err(Error::invalid("concatenate", "no parts to concatenate"));
        };
        let device = first.device;
        let bufs = chunks
            .iter()
            .map(|c| self.on(c, device))
            .collect::<Result<Vec<_>>>()?;
        let buf = if shape[..axis].iter().all(|&s| s == 1) {
            // Every axis before `axis` of length one: each block is one run of bytes of
            // the result, after the one before it, so the device copies them in turn.
            let runs: Vec<(&D::Buf, usize)> = bufs
                .iter()
                .zip(&chunks)
                .map(|(b, c)| (b.as_ref(), c.nbytes_exact()))
                .collect();
            Arc::new(self.gpus[device].join(&runs)?)
        } else {
            // Interleaved: one kernel writes the result (groups of parts first when there
            // are many).
            let (pre, suf) = (
                shape[..axis].iter().product::<usize>(),
                shape[axis + 1..].iter().product::<usize>(),
            );
            let mut parts: Vec<(Arc<D::Buf>, usize)> = bufs
                .into_iter()
                .zip(&chunks)
                .map(|(b, c)| (b, c.shape[axis]))
                .collect();
            while parts.len() > 1 {
                parts = parts
                    .chunks(crate::codegen::concat::MAX_PARTS)
                    .map(|group| {
                        let lens: Vec<usize> = group.iter().map(|(_, l)| *l).collect();
                        let len: usize = lens.iter().sum();
                        if group.len() == 1 {
                            return Ok(group[0].clone());
                        }
                        let plan =
                            crate::codegen::concat::concatenate(first.dtype, &lens, pre, suf)?;
                        let bytes = [pre, len, suf, first.dtype.size()]
                            .iter()
                            .try_fold(1usize, |a, &b| a.checked_mul(b))
                            .ok_or_else(|| {
                                Error::shape("concatenate", format!("{shape:?} overflows usize"))
                            })?;
                        let refs: Vec<&D::Buf> = group.iter().map(|(b, _)| b.as_ref()).collect();
                        Ok((Arc::new(self.gpus[device].run(&plan, &refs, bytes)?), len))
                    })
                    .collect::<Result<Vec<_>>>()?;
            }
            parts
                .pop()
                .map(|(b, _)| b)
                .ok_or_else(|| Error::Internal("a concatenation made nothing".into()))?
        };
        Ok(Arc::new(DeviceChunk::new(
            buf,
            first.dtype,
            shape,
            device,
            &self.name,
        )))
    }

    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        self.product(self.chunk(a, "matmul")?, self.chunk(b, "matmul")?, false)
    }

    fn sketch_program(&self, program: &Program, inputs: &[Chunk], omega: &Chunk) -> Result<Chunk> {
        let x = self
            .execute(program, inputs)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal("a sketched block's program has no output".into()))?;
        let (cx, co) = (self.chunk(&x, "sketch")?, self.chunk(omega, "sketch")?);
        if cx.shape.len() != 2 || co.shape.len() != 2 || cx.shape[1] != co.shape[0] {
            return Err(Error::shape(
                "sketch",
                format!(
                    "x {:?} and omega {:?}: needs x (rows × n) and omega (n × l)",
                    cx.shape, co.shape
                ),
            ));
        }
        // `Xᵀ Y` reads the block in place (no transposed copy), and the two results are
        // stacked on the device.
        let y = self.product(cx, co, false)?;
        let xty = self.product(cx, self.chunk(&y, "sketch")?, true)?;
        self.concatenate(&[y, xty], 0)
    }

    fn matmul_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        other: &Chunk,
        program_left: bool,
    ) -> Result<Chunk> {
        let o = self.chunk(other, "matmul")?;
        let dtype = program.outputs.first().map(|out| program.dtypes[out.node]);
        let fusable = program.outputs.len() == 1
            && program.outputs[0].reduce.is_none()
            && program.shape.len() == 2
            && o.shape.len() == 2
            && dtype == Some(o.dtype)
            && o.dtype.is_float();
        // The other operand's free dimension: how many column (or row) tiles re-evaluate
        // the program. Past `FUSED_WIDTH` the block is materialised once and multiplied by
        // the library instead.
        let width = if program_left {
            o.shape.get(1)
        } else {
            o.shape.first()
        };
        if !fusable
            || width.is_none_or(|&w| w > FUSED_WIDTH)
            || inputs.len() != program.num_inputs()
        {
            return tessera_core::backend::matmul_program_with_primitives(
                self,
                program,
                inputs,
                other,
                program_left,
            );
        }
        let (left, right) = if program_left {
            (
                (o.dtype, program.shape.as_slice()),
                (o.dtype, o.shape.as_slice()),
            )
        } else {
            (
                (o.dtype, o.shape.as_slice()),
                (o.dtype, program.shape.as_slice()),
            )
        };
        let (m, k, n) = tessera_core::backend::matmul_dims(left, right)?;
        let bytes = m
            .checked_mul(n)
            .and_then(|e| e.checked_mul(o.dtype.size()))
            .ok_or_else(|| Error::shape("matmul", format!("{m} x {n} overflows usize")))?;
        let device = o.device;
        let mut bufs = inputs
            .iter()
            .map(|c| self.on(self.chunk(c, "matmul")?, device))
            .collect::<Result<Vec<_>>>()?;
        bufs.push(o.buf.clone());
        let refs: Vec<&D::Buf> = bufs.iter().map(|b| b.as_ref()).collect();
        let plan = crate::codegen::program_product(program, program_left, (m, k, n))?;
        let buf = self.gpus[device].run(&plan, &refs, bytes)?;
        Ok(self.wrap(buf, o.dtype, vec![m, n], device))
    }

    fn moments_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        axes: &[usize],
    ) -> Result<Chunk> {
        // The block is evaluated once and its sum and `M2` read from memory: its
        // generators and reads run once instead of twice (the protocol's default fuses the
        // program into each pass). Both passes are the default's reduction kernels over
        // the same values, so the bits are the default's; the two results are stacked on
        // the device.
        tessera_core::program::check_moments(program, axes)?;
        let x = self
            .execute(program, inputs)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal("a moments program has no output".into()))?;
        let read = primitives::cast(x.dtype(), x.shape(), x.dtype())?;
        tessera_core::backend::moments_with_primitives(self, &read, &[x], axes)
    }

    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        if inputs.len() != program.num_inputs() {
            return Err(Error::Internal(format!(
                "program reads {} inputs, {} were given",
                program.num_inputs(),
                inputs.len()
            )));
        }
        let chunks = inputs
            .iter()
            .map(|c| self.chunk(c, "execute"))
            .collect::<Result<Vec<_>>>()?;
        for (slot, (c, &d)) in chunks.iter().zip(&program.input_dtypes).enumerate() {
            if c.dtype != d {
                return Err(Error::Internal(format!(
                    "program input {slot} is {d}, the chunk is {}",
                    c.dtype
                )));
            }
        }
        let device = chunks.first().map_or_else(|| self.place(), |c| c.device);
        let gpu = &self.gpus[device];
        let bufs = chunks
            .iter()
            .map(|c| self.on(c, device))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&D::Buf> = bufs.iter().map(|b| b.as_ref()).collect();
        let mut out = Vec::with_capacity(program.outputs.len());
        for (o, output) in program.outputs.iter().enumerate() {
            let shape = program.output_shape(o);
            let parts = match &output.reduce {
                Some(r) => {
                    r.op.check_identity(&program.shape, &r.axes)?;
                    let reduced: u64 = r.axes.iter().map(|&a| program.shape[a] as u64).product();
                    let kept: u64 = shape.iter().map(|&s| s as u64).product();
                    parts_for(kept, reduced, gpu.sms())
                }
                None => 1,
            };
            let plan = generate(program, o, parts)?;
            let bytes = shape
                .iter()
                .try_fold(plan.out_dtype.size(), |a, &b| a.checked_mul(b))
                .ok_or_else(|| Error::shape("execute", format!("{shape:?} overflows usize")))?;
            let buf = gpu.run(&plan, &refs, bytes)?;
            out.push(self.wrap(buf, plan.out_dtype, shape, device));
        }
        Ok(out)
    }
}

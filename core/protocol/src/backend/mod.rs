//! The array backend protocol: type-erased chunks, capabilities and the backend trait.
//!
//! A backend owns its chunks (`Arc<dyn ChunkData>`; it downcasts its own with
//! [`downcast_chunk`]) and implements a small set of **required** primitives: moving data
//! to and from the host, generating (fill, counter-based random, coordinates), per-op
//! elementwise kernels on same-shape operands, slicing with steps, transpose, reshape,
//! broadcast, reduction over axes, concatenation and matmul. Everything else has a
//! default in core: most importantly [`ArrayBackend::execute`], which runs a fused
//! [`Program`] by calling the primitives one op at a time. A backend that executes programs
//! natively (one pass over tiles on CPU, one kernel on a GPU) overrides it and gets fusion.
//!
//! What a backend cannot do it declares in its [`Capabilities`]; asking for it yields
//! [`Error::Unsupported`] naming backend, op and dtype — never a silent conversion.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::program::{BinaryOp, IndexMap, Program, ReduceOp, ScanOp, UnaryOp};
use crate::random::RandomSpec;

mod by_primitives;
mod capabilities;

pub use by_primitives::{check_packed, evaluate_with_primitives, moments_with_primitives};
pub use capabilities::Capabilities;

/// A chunk of array data owned by one backend.
pub trait ChunkData: Any + Send + Sync + fmt::Debug {
    /// Element dtype.
    fn dtype(&self) -> DType;
    /// Shape.
    fn shape(&self) -> &[usize];
    /// Name of the owning backend.
    fn backend(&self) -> &str;
    /// Bytes held (by default, dense size).
    fn nbytes(&self) -> usize {
        self.shape().iter().product::<usize>() * self.dtype().size()
    }
    /// For downcasting by the owning backend.
    fn as_any(&self) -> &dyn Any;
}

/// A shared, type-erased chunk.
pub type Chunk = Arc<dyn ChunkData>;

/// Downcasts a chunk to the backend's own type, or names the owner in the error.
pub fn downcast_chunk<'a, T: ChunkData>(
    chunk: &'a Chunk,
    backend: &str,
    op: &str,
) -> Result<&'a T> {
    chunk
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| Error::ForeignChunk {
            op: op.to_string(),
            backend: backend.to_string(),
            owner: chunk.backend().to_string(),
        })
}

/// One axis of a strided slice: elements `start + i * step` for `i < len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AxisSlice {
    /// First element.
    pub start: usize,
    /// Step (negative walks backwards; never 0).
    pub step: isize,
    /// Number of elements.
    pub len: usize,
}

impl AxisSlice {
    /// The index map reading `slices` (one per axis) out of a chunk of `src_shape`, and
    /// the sliced shape; an [`Error::Invalid`] names a wrong count or an out-of-bounds
    /// slice. Backends share it so they validate slices identically.
    pub fn map(src_shape: &[usize], slices: &[AxisSlice]) -> Result<(IndexMap, Vec<usize>)> {
        if slices.len() != src_shape.len() {
            return Err(Error::invalid(
                "slice",
                format!("{} slices for a {}-d chunk", slices.len(), src_shape.len()),
            ));
        }
        let shape: Vec<usize> = slices.iter().map(|s| s.len).collect();
        let map = IndexMap {
            src_shape: src_shape.to_vec(),
            axes: slices
                .iter()
                .enumerate()
                .map(|(a, s)| crate::program::AxisMap {
                    start: s.start as i64,
                    step: s.step as i64,
                    out_axis: Some(a),
                })
                .collect(),
        };
        map.check(&shape).map_err(|e| Error::invalid("slice", e))?;
        Ok((map, shape))
    }
}

/// Whether a backend can run in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Ready.
    Available,
    /// Registered but unusable here, with the reason (no driver, no device, ...).
    Unavailable(String),
}

/// A compute backend for n-d array chunks. Object-safe: backends are chosen at run time.
// `from_host` takes `&self`: the backend makes the chunk (the name mirrors `to_host`).
#[allow(clippy::wrong_self_convention)]
pub trait ArrayBackend: Send + Sync + fmt::Debug {
    /// The registered name (`cpu`, `cuda`, `sparse`, a plugin's name).
    fn name(&self) -> &str;

    /// What the backend supports.
    fn capabilities(&self) -> &Capabilities;

    /// Whether the backend can run here. Defaults to available.
    fn availability(&self) -> Availability {
        Availability::Available
    }

    // ---- required: data movement -------------------------------------------------------

    /// Copies a host array into a new chunk.
    fn from_host(&self, data: &HostArray) -> Result<Chunk>;

    /// Copies a chunk to the host.
    fn to_host(&self, chunk: &Chunk) -> Result<HostArray>;

    /// Takes a host array over as a new chunk. The default copies through
    /// [`from_host`](ArrayBackend::from_host); a backend whose chunks are host arrays
    /// keeps the buffer, so data read from storage is not copied once more.
    fn from_host_owned(&self, data: HostArray) -> Result<Chunk> {
        self.from_host(&data)
    }

    // ---- required: generators ------------------------------------------------------------

    /// A chunk of `shape` filled with `value` (its dtype is the value's).
    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk>;

    /// Counter-based random values: element `out` is `spec` sampled at the flat index of
    /// `map(out)` in `map.src_shape`.
    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk>;

    /// The `int64` coordinate along source axis `axis` of `map(out)`.
    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk>;

    // ---- required: elementwise on same-shape operands ----------------------------------

    /// `astype`.
    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk>;

    /// A unary op (operand already of the op's operand dtype).
    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk>;

    /// A binary op on two chunks of one shape and dtype.
    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk>;

    /// `where(cond, a, b)` on chunks of one shape.
    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk>;

    // ---- required: structure -----------------------------------------------------------

    /// A strided slice, one [`AxisSlice`] per axis.
    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk>;

    /// Permutes axes: output axis `i` is input axis `perm[i]`.
    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk>;

    /// Reshapes in C order (same number of elements).
    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk>;

    /// Broadcasts size-1 axes to `shape` (same number of dimensions).
    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk>;

    /// Reduces over `axes`, keeping them as size-1 axes.
    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk>;

    /// Concatenates along `axis`.
    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk>;

    /// Matrix product of two 2-d chunks of one dtype.
    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk>;

    // ---- optional ------------------------------------------------------------------------

    /// Runs a fused program; the default evaluates it op by op with the primitives above.
    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        evaluate_with_primitives(self, program, inputs)
    }

    /// The matrix product of a fused program's output `P` with a chunk: `P @ other` when
    /// `program_left`, else `other @ P`. `program` has one output, 2-d, float, not reduced;
    /// `inputs` are its input chunks. The planner uses this when a matmul operand's block
    /// is a program made for that product alone (a random matrix, a transposed or scaled
    /// input), so a backend can stream the operand's rows into the product instead of
    /// materialising the whole block: `svd_compressed` multiplies an 8 GB generated input
    /// twice this way.
    ///
    /// Optional: the default runs the program and then [`ArrayBackend::matmul`], which is
    /// what the plan did before; the result must be the same as that, up to float
    /// reassociation.
    fn matmul_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        other: &Chunk,
        program_left: bool,
    ) -> Result<Chunk> {
        matmul_program_with_primitives(self, program, inputs, other, program_left)
    }

    /// The range sketch of a fused program's output `P` (rows × n) and its projection,
    /// stacked into one (rows + n) × l chunk: `[P Ω ; Pᵀ (P Ω)]`. `program` has one output,
    /// 2-d, float, not reduced; `omega` is n × l. `svd_compressed` asks for it per row
    /// block: with `Y = X Ω` and `Xᵀ Y` from one pass, `Qᵀ X = R⁻ᵀ (Xᵀ Y)ᵀ` needs no second
    /// pass over an input it must regenerate. Both products read each row of `P` once,
    /// so a backend can stream the block as [`ArrayBackend::matmul_program`] does.
    ///
    /// Optional: the default runs the program and then [`sketch_with_primitives`]; the
    /// result must be the same as that, up to float reassociation.
    fn sketch_program(&self, program: &Program, inputs: &[Chunk], omega: &Chunk) -> Result<Chunk> {
        sketch_with_primitives(self, &only_output(self, program, inputs)?, omega)
    }

    /// Per-block moments of a fused program's output over `axes`, packed into one chunk:
    /// the reduced axes have length 1 except the first, of length 2, holding the sum and
    /// then `M2`, the sum of squared deviations from the block's own mean (see
    /// [`moments_with_primitives`]). `program` has one unreduced float
    /// output; `axes` are ascending and not empty. `var` and `std` ask for it per block, so
    /// a backend can compute both in one pass instead of evaluating the block twice.
    ///
    /// Optional: the default runs the program twice (a sum, then `M2` about the block's
    /// mean); a native result must agree with it up to float reassociation.
    fn moments_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        axes: &[usize],
    ) -> Result<Chunk> {
        moments_with_primitives(self, program, inputs, axes)
    }

    /// The chunk's data when it already is a host array in this process (the CPU
    /// backend's chunks), so `compute()` can copy it into the result once instead of
    /// cloning it first. Defaults to `None` (the data is copied with `to_host`).
    fn host_view<'a>(&self, chunk: &'a Chunk) -> Option<&'a HostArray> {
        let _ = chunk;
        None
    }

    /// Reduced QR of a 2-d float chunk `x` (m × n): `Q` (m × min(m, n)) with orthonormal
    /// columns and upper-triangular `R` (min(m, n) × n), `x = Q R`.
    ///
    /// Optional: the default is [`Error::Unsupported`]. A backend that does not override it
    /// declares `qr` unsupported in its capabilities
    /// (`without_ops(Capabilities::BLOCK_LINALG)`); the protocol never converts a chunk to
    /// another backend behind the caller's back. Chunked linear algebra (`tessera-array`)
    /// then runs the block on the host with the `cpu` backend, logged, as an explicit
    /// fallback.
    fn qr(&self, x: &Chunk) -> Result<(Chunk, Chunk)> {
        Err(block_kernel_unsupported(self.name(), "qr", x))
    }

    /// Thin SVD of a 2-d float chunk `x` (m × n): `U` (m × k), singular values `S` (k,
    /// descending, non-negative) and `Vt` (k × n), k = min(m, n), `x = U diag(S) Vt`.
    ///
    /// Optional like [`ArrayBackend::qr`]: the default is [`Error::Unsupported`], and a
    /// backend that does not override it declares `svd` unsupported in its capabilities.
    fn svd(&self, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
        Err(block_kernel_unsupported(self.name(), "svd", x))
    }

    /// The inclusive scan `op` along `axis` of `x`, in `x`'s dtype (the caller casts to
    /// the accumulation dtype first; see [`ScanOp::result_dtype`]), with the bits of
    /// [`HostArray::scan`].
    ///
    /// Optional: the default copies the chunk to the host, scans it there and copies it
    /// back, and [records](crate::fallback::record) that it did, so every backend answers
    /// and the copies are visible (`explain()` names the step through
    /// [`ArrayBackend::primitive_note`]). A backend that scans natively overrides it.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of `x`; those of `to_host` and
    /// `from_host`.
    fn scan(&self, x: &Chunk, op: ScanOp, axis: usize) -> Result<Chunk> {
        let host = self.to_host(x)?;
        let out = host.scan(op, axis)?;
        crate::fallback::record(
            self.name(),
            op.name(),
            "scanned on the host (copied out and back): the backend has no scan kernel",
        );
        self.from_host_owned(out)
    }

    /// `x` sorted along `axis`, ascending in NumPy's order (NaN last, stable) or
    /// descending, with the bits of [`HostArray::sort`]. A chunked sort sorts each block
    /// with it and merges the sorted blocks of a lane rank range by rank range.
    ///
    /// Optional, as [`ArrayBackend::scan`]: the default sorts a host copy and records the
    /// fallback.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of `x`; those of `to_host` and
    /// `from_host`.
    fn sort(&self, x: &Chunk, axis: usize, descending: bool) -> Result<Chunk> {
        let out = self.to_host(x)?.sort(axis, descending)?;
        crate::fallback::record(
            self.name(),
            "sort",
            "sorted on the host (copied out and back): the backend has no sort kernel",
        );
        self.from_host_owned(out)
    }

    /// What `Array::explain` (in `tessera-array`) should say about running `program`
    /// here beyond the program itself — for example that a sparse backend must densify a
    /// generator. Defaults to nothing.
    fn plan_notes(&self, program: &Program) -> Vec<String> {
        let _ = program;
        Vec::new()
    }

    /// What `Array::explain` (in `tessera-array`) should say about a primitive a plan
    /// calls outside fused programs (`matmul`, `concatenate`) when this backend may answer
    /// it through a fallback — for example that a sparse backend densifies a product
    /// whose left operand has a non-zero fill. A fallback taken at run time is also
    /// [recorded](crate::fallback::record). Defaults to nothing.
    fn primitive_note(&self, op: &str) -> Option<String> {
        let _ = op;
        None
    }
}

/// The one output of a streamed operand's program, run with [`ArrayBackend::execute`]:
/// the defaults of the optional `*_program` methods.
/// `P @ other` (or `other @ P`) with `P` the program's output made first: the default of
/// [`ArrayBackend::matmul_program`], for a backend that streams only some products.
///
/// # Errors
/// Those of [`ArrayBackend::execute`] and [`ArrayBackend::matmul`].
pub fn matmul_program_with_primitives<B: ArrayBackend + ?Sized>(
    b: &B,
    program: &Program,
    inputs: &[Chunk],
    other: &Chunk,
    program_left: bool,
) -> Result<Chunk> {
    let p = only_output(b, program, inputs)?;
    if program_left {
        b.matmul(&p, other)
    } else {
        b.matmul(other, &p)
    }
}

fn only_output<B: ArrayBackend + ?Sized>(
    b: &B,
    program: &Program,
    inputs: &[Chunk],
) -> Result<Chunk> {
    b.execute(program, inputs)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("a streamed operand's program produced no output".into()))
}

/// `[x Ω ; xᵀ (x Ω)]` for a 2-d chunk `x` (rows × n) and `omega` (n × l), from the
/// required primitives (`matmul`, `transpose`, `concatenate`): the reference for
/// [`ArrayBackend::sketch_program`] and the sketch of a block that is already stored.
pub fn sketch_with_primitives<B: ArrayBackend + ?Sized>(
    b: &B,
    x: &Chunk,
    omega: &Chunk,
) -> Result<Chunk> {
    let (xs, os) = (x.shape(), omega.shape());
    if xs.len() != 2 || os.len() != 2 || xs[1] != os[0] {
        return Err(Error::shape(
            "sketch",
            format!("x {xs:?} and omega {os:?}: needs x (rows × n) and omega (n × l)"),
        ));
    }
    let y = b.matmul(x, omega)?;
    let xt = b.transpose(x, &[1, 0])?;
    let xty = b.matmul(&xt, &y)?;
    b.concatenate(&[y, xty], 0)
}

/// The dimensions `(m, k, n)` of the product of two 2-d chunks of one dtype, with the
/// errors every backend's [`ArrayBackend::matmul`] gives for operands that do not fit.
///
/// # Errors
/// [`Error::DType`] for two dtypes, [`Error::Shape`] for operands that are not 2-d or
/// whose contraction lengths differ.
pub fn matmul_dims(a: (DType, &[usize]), b: (DType, &[usize])) -> Result<(usize, usize, usize)> {
    if a.0 != b.0 {
        return Err(Error::dtype(
            "matmul",
            b.0,
            format!("operands must share a dtype; left is {}", a.0),
        ));
    }
    let (sa, sb) = (a.1, b.1);
    if sa.len() != 2 || sb.len() != 2 || sa[1] != sb[0] {
        return Err(Error::shape("matmul", format!("{sa:?} @ {sb:?}")));
    }
    Ok((sa[0], sa[1], sb[1]))
}

/// Checks chunks to join along `axis` — one dtype, one rank, equal lengths off the axis
/// — and returns the joined shape: the checks every backend's
/// [`ArrayBackend::concatenate`] makes.
///
/// # Errors
/// [`Error::Invalid`] for no chunks, [`Error::DType`] for two dtypes, [`Error::Shape`] for
/// shapes that do not line up.
pub fn concat_shape(parts: &[(DType, &[usize])], axis: usize) -> Result<Vec<usize>> {
    let Some(&(dtype, first)) = parts.first() else {
        return Err(Error::invalid("concatenate", "no chunks to join"));
    };
    let mut shape = first.to_vec();
    if axis >= shape.len() {
        return Err(Error::shape(
            "concatenate",
            format!("axis {axis} of a {}-d chunk", shape.len()),
        ));
    }
    shape[axis] = 0;
    for &(d, s) in parts {
        if d != dtype {
            return Err(Error::dtype(
                "concatenate",
                d,
                format!("all chunks must be {dtype}"),
            ));
        }
        let off_axis = |x: &[usize]| {
            x.iter()
                .enumerate()
                .filter(|&(a, _)| a != axis)
                .map(|(_, &n)| n)
                .collect::<Vec<_>>()
        };
        if s.len() != first.len() || off_axis(s) != off_axis(first) {
            return Err(Error::shape(
                "concatenate",
                format!("chunks {first:?} and {s:?} along axis {axis}"),
            ));
        }
        shape[axis] += s[axis];
    }
    Ok(shape)
}

/// The error of an optional block kernel (`qr`, `svd`) a backend does not implement.
fn block_kernel_unsupported(backend: &str, op: &str, x: &Chunk) -> Error {
    Error::Unsupported {
        backend: backend.to_string(),
        op: op.to_string(),
        dtype: x.dtype(),
    }
}

impl dyn ArrayBackend {
    /// Checks a program's ops against the capabilities before running it.
    pub fn check_program(&self, program: &Program) -> Result<()> {
        let caps = self.capabilities();
        // Nothing declared missing: skip listing the ops (runs once per task).
        if caps.unsupported().next().is_none() {
            return Ok(());
        }
        for (op, dtype) in program.ops_used() {
            caps.check(self.name(), op, dtype)?;
        }
        Ok(())
    }
}

/// A shared handle to a backend.
pub type BackendRef = Arc<dyn ArrayBackend>;

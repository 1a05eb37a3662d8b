//! CUDA C for fused programs: one kernel text per program output, compiled by NVRTC.
//!
//! **What the text depends on.** Only a program's *structure* — node kinds, ops, dtypes,
//! the number of dimensions, which axes an output reduces, the kind of each random
//! distribution. Every value — the region's shape, each input's and generator's affine
//! map, constants, seeds, distribution parameters — is read at run time from one array of
//! 64-bit words, `P`, packed by [`KernelPlan::params`]. So all chunks of an array, the
//! ragged edge chunks included, share one compiled kernel, and the kernel cache (keyed by
//! the text's hash) stays small.
//!
//! **Two shapes of kernel.** An unreduced output is a grid-stride loop over the output's
//! elements in C order. A reduced output takes two passes, as the design asks: pass one
//! gives each (kept element, part) pair a block whose threads stride over the reduced
//! elements, fold them into an accumulator and combine the block's accumulators in a
//! shared-memory tree; pass two (`<name>_fin`) folds the parts of each kept element in
//! order and writes the result. The block size must be a power of two up to
//! [`MAX_BLOCK`].
//!
//! **Why one text can be checked without a GPU.** The text includes no header: the
//! [`PRELUDE`] spells out every scalar definition (wrapping integer ops, Python's floor
//! division, saturating casts, Philox and the ziggurat with tessera-core's portable
//! `ln`/`exp`) and uses only NVRTC's built-in math and intrinsics, which the host shim
//! ([`crate::host::shim`]) provides under the same names. The same text compiled as C++ on the
//! host is compared bit for bit with the CPU backend; NVRTC compiles it with
//! `--fmad=false` so that the device does not contract `a * b + c` either.

pub mod concat;
mod emit;
mod fused_product;
mod matmul;
pub(crate) mod names;
mod reduce;

use tessera_core::program::{Node, Program, ReduceOp};
use tessera_core::random::Distribution;
use tessera_core::{DType, Error, Result};

pub use fused_product::program_product;
pub use matmul::{matmul, matmul_transposed_a};
pub use names::ctype;

/// The scalar definitions every kernel starts with (see the module docs).
pub const PRELUDE: &str = include_str!("prelude.cu");

/// The largest block size a reduction kernel's shared-memory tree holds.
pub const MAX_BLOCK: u32 = 256;

/// What one kernel argument is, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// `const u64* P`: the packed run-time values.
    Params,
    /// `const T* inN`: input slot `N`, of the dtype.
    Input(usize, DType),
    /// `T* out`: the output, of the dtype.
    Output(DType),
    /// `Acc* part`: pass one's partial accumulators, one per (kept element, part).
    Partials(DType),
    /// `i64* part_idx`: the positions that go with the partials of an arg-reduction.
    PartialIndex,
    /// The ziggurat's three tables (`f64 wi[1024]`, `u64 ki[1024]`, `f64 fi[1024]`), for
    /// programs that draw normal numbers.
    ZigguratTables,
}

/// One `extern "C" __global__` entry point of a kernel text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its symbol.
    pub name: String,
    /// Its arguments, in order.
    pub args: Vec<Arg>,
}

/// How an output's kernel is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// One grid-stride loop over `n` output elements.
    Elementwise {
        /// Output elements.
        n: u64,
    },
    /// Pass one over `kept * parts` blocks, pass two over `kept` elements.
    Reduce {
        /// Output (kept) elements.
        kept: u64,
        /// Elements reduced into each output element.
        reduced: u64,
        /// Blocks per output element in pass one (at least 1).
        parts: u64,
        /// The accumulator's dtype (the partials buffer's).
        acc: DType,
    },
}

/// The kernel text for one output of a program, and the run-time values it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPlan {
    /// The kernels' own CUDA C text, without the [`PRELUDE`] every kernel shares (so a
    /// plan, built for every task, does not copy it; [`Self::source`] adds it).
    pub body: String,
    /// A stable 64-bit hash of the body before naming (FNV-1a): the name and the cache key.
    pub hash: u64,
    /// Pass one (or the only pass), then `<name>_fin` for reductions.
    pub entries: Vec<Entry>,
    /// The packed run-time values (`P`).
    pub params: Vec<u64>,
    /// How to launch it.
    pub launch: Launch,
    /// The output's dtype.
    pub out_dtype: DType,
}

/// FNV-1a over bytes: a hash that is the same in every build and on every machine, so it
/// can name kernels in the on-disk cache.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Whether the program draws normal numbers (its kernels take the ziggurat tables).
pub fn uses_normal(program: &Program) -> bool {
    program.nodes.iter().any(|n| {
        matches!(
            n,
            Node::Random {
                spec: tessera_core::random::RandomSpec {
                    dist: Distribution::Normal { .. },
                    ..
                },
                ..
            }
        )
    })
}

/// The kernel for output `output` of `program`, with `parts` blocks per output element in
/// a reduction's first pass (ignored for unreduced outputs; the device backend picks it
/// from the sizes, tests pass small values to exercise the second pass).
///
/// ```
/// use tessera_core::program::{BinaryOp, IndexMap, ProgramBuilder};
/// use tessera_core::{DType, Scalar};
/// use tessera_cuda::codegen::{generate, Launch};
///
/// // x[::2] + 1 over a float32 input of 10 elements, on an output of 5.
/// let mut pb = ProgramBuilder::new(&[5]);
/// let map = IndexMap { src_shape: vec![10], axes: vec![tessera_core::program::AxisMap { start: 0, step: 2, out_axis: Some(0) }] };
/// let x = pb.input(0, DType::F32, map);
/// let one = pb.constant(Scalar::F32(1.0));
/// let y = pb.binary(BinaryOp::Add, x, one)?;
/// let program = pb.finish(vec![(y, None)])?;
/// let plan = generate(&program, 0, 1)?;
/// assert!(plan.body.contains(&format!("__global__ void {}(", plan.entries[0].name)));
/// assert!(plan.source().starts_with(tessera_cuda::codegen::PRELUDE));
/// assert_eq!(plan.launch, Launch::Elementwise { n: 5 });
/// // Another chunk of the same structure shares the kernel; only the values differ.
/// let mut other = program.clone();
/// other.shape = vec![3];
/// let plan3 = generate(&other, 0, 1)?;
/// assert_eq!((plan3.hash, plan3.params.len()), (plan.hash, plan.params.len()));
/// assert_ne!(plan3.params, plan.params);
/// # Ok::<(), tessera_core::Error>(())
/// ```
///
/// # Errors
/// [`Error::Invalid`] for an output index out of range or a program whose nodes do not
/// type-check (an operand of the wrong dtype, an unknown node); [`Error::Unsupported`] is
/// never returned — every node kind and dtype of the protocol has a translation.
pub fn generate(program: &Program, output: usize, parts: u64) -> Result<KernelPlan> {
    let out = program.outputs.get(output).ok_or_else(|| {
        Error::invalid(
            "cuda codegen",
            format!(
                "output {output} of a program with {} outputs",
                program.outputs.len()
            ),
        )
    })?;
    if program.shape.len() > 32 {
        return Err(Error::invalid(
            "cuda codegen",
            format!(
                "{}-d program; kernels take up to 32 dimensions",
                program.shape.len()
            ),
        ));
    }
    let mut e = emit::Emitter::new(program);
    let body = match &out.reduce {
        None => e.elementwise(out.node)?,
        Some(r) => e.reduction(out.node, r.op, &r.axes, parts.max(1))?,
    };
    let out_dtype = program.output_dtype(output);
    let (text, hash, name) = named(&body.text, "tsr");
    let entries = body
        .entries
        .into_iter()
        .map(|(suffix, args)| Entry {
            name: format!("{name}{suffix}"),
            args,
        })
        .collect();
    Ok(KernelPlan {
        body: text,
        hash,
        entries,
        params: e.into_params(),
        launch: body.launch,
        out_dtype,
    })
}

impl KernelPlan {
    /// The full text NVRTC compiles: the prelude, then the body.
    pub fn source(&self) -> String {
        let mut s = String::with_capacity(PRELUDE.len() + self.body.len() + 1);
        s.push_str(PRELUDE);
        s.push('\n');
        s.push_str(&self.body);
        s
    }
}

/// Names the kernels of a body by its hash: the body with its entries named
/// `<prefix>_<hash>`, the hash, and that name.
pub(crate) fn named(body: &str, prefix: &str) -> (String, u64, String) {
    let hash = stable_hash(body.as_bytes());
    let name = format!("{prefix}_{hash:016x}");
    (body.replace(names::NAME, &name), hash, name)
}

/// The accumulator dtype of a reduction of `x` by `op` (what pass one's partials hold).
pub fn accumulator(op: ReduceOp, x: DType) -> DType {
    reduce::acc_dtype(op, x)
}

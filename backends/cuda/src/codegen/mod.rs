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
pub mod names;
mod plan;
mod reduce;

use tessera_core::program::{Program, ReduceOp};
use tessera_core::{DType, Error, Result};

pub use fused_product::program_product;
pub use matmul::{matmul, matmul_transposed_a};
pub use names::ctype;
pub use plan::{
    stable_hash, uses_normal, Arg, Entry, KernelPlan, Launch, BLOCK, MAX_BLOCK, PRELUDE,
};

pub use plan::named;

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

/// The accumulator dtype of a reduction of `x` by `op` (what pass one's partials hold).
pub fn accumulator(op: ReduceOp, x: DType) -> DType {
    reduce::acc_dtype(op, x)
}

//! The product of a fused program's output with a matrix, the program evaluated while the
//! product stages its tiles: `P @ b` or `a @ P` with `P` never written to memory.
//!
//! This is how `svd_compressed` streams on the device: its `X Ω` multiplies a generated
//! (or transposed, scaled) block by a narrow matrix, so the tiled product kernel computes
//! each element of `X` where it would have read it — the generator runs once per column
//! tile of the result (once for `Ω` up to 16 columns wide) and the block's bytes never
//! cross device memory. Each output element folds its products in order along the shared
//! axis, exactly as [`super::matmul`] does over a materialised `P`, so the bits are the
//! materialised product's. The backend uses it only when the other operand is narrow
//! (the recomputation grows with its width; wide products go through the library).

use tessera_core::program::Program;
use tessera_core::{Error, Result};

use super::emit::Emitter;
use super::matmul::{refuse_bool, tiled, tiles_launch, LOAD_B};
use super::names::ctype;
use super::{Entry, KernelPlan};

/// The kernel for `P @ b` (`program_left`, `P` m x k, `b` k x n) or `a @ P` (`a` m x k,
/// `P` k x n), `P` the program's one 2-d unreduced output. Its inputs are the program's
/// input slots, then the other operand.
///
/// # Errors
/// [`Error::Invalid`] for a program that is not one unreduced 2-d output of `m x k` (or
/// `k x n`); [`Error::DType`] for `bool`; the program's own translation errors.
pub fn program_product(
    program: &Program,
    program_left: bool,
    (m, k, n): (usize, usize, usize),
) -> Result<KernelPlan> {
    let [out] = program.outputs.as_slice() else {
        return Err(bad("a product program has one output"));
    };
    let want = if program_left { [m, k] } else { [k, n] };
    if out.reduce.is_some() || program.shape != want {
        return Err(bad(&format!(
            "a product program's output must be unreduced and {want:?}, not {:?}{}",
            program.shape,
            if out.reduce.is_some() { " reduced" } else { "" }
        )));
    }
    let dtype = program.dtypes[out.node];
    refuse_bool(dtype)?;
    let t = ctype(dtype);
    let mut e = Emitter::new(program);
    // The tiled kernel reads m, k, n from the first three words.
    for v in [m, k, n] {
        e.param(v as u64);
    }
    let nodes = e.nodes(out.node, "                    ")?;
    let (mut head, mut args) = e.head_args();
    let other = program.num_inputs();
    // The program's side of the product: its element at (first, second) staged into
    // `tile`, zero outside the bounds.
    let staged = |(first, start, bound): (&str, &str, &str),
                  (second, second_start, second_bound): (&str, &str, &str),
                  tile: &str| {
        format!(
            "const int r = e / 16, col = e % 16;\n\
             \x20               const i64 {first} = {start} + r, {second} = {second_start} + col;\n\
             \x20               T val = (T)0;\n\
             \x20               if ({first} < {bound} && {second} < {second_bound}) {{\n\
             \x20                   i64 c[2]; c[0] = {first}; c[1] = {second};\n\
             {nodes}\
             \x20                   val = v{};\n\
             \x20               }}\n\
             \x20               {tile}[r][col] = val;",
            out.node
        )
    };
    let (other_name, load_a, load_b) = if program_left {
        let load = staged(("i", "i0", "m"), ("l", "l0", "k"), "as_");
        ("b", load, LOAD_B.to_string())
    } else {
        let load = staged(("l", "l0", "k"), ("j", "j0", "n"), "bs_");
        let load_a = "const int r = e / 16, col = e % 16;\n\
             \x20               const i64 i = i0 + r, l = l0 + col;\n\
             \x20               as_[r][col] = (i < m && l < k) ? a[i * k + l] : (T)0;"
            .to_string();
        ("a", load_a, load)
    };
    head.push_str(&format!(
        ", const {t}* __restrict__ {other_name}, {t}* __restrict__ out"
    ));
    args.push(super::Arg::Input(other, dtype));
    args.push(super::Arg::Output(dtype));
    e.tail_args(&mut head, &mut args);
    let body = tiled(dtype, &head, e.zig_local(), (&load_a, &load_b));
    let (body, hash, name) = super::named(&body, "tsr_mmp");
    Ok(KernelPlan {
        body,
        hash,
        entries: vec![Entry { name, args }],
        params: e.into_params(),
        launch: tiles_launch(m, n),
        out_dtype: dtype,
    })
}

fn bad(what: &str) -> Error {
    Error::invalid("cuda codegen", what.to_string())
}

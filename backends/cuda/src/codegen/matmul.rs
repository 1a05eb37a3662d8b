//! The matrix product as a kernel, `a @ b` or `aᵀ @ b`, tiled through shared memory.
//!
//! Each block computes 16 × 16 tiles of the output (a grid-stride loop over tiles). For
//! each step of 16 along the shared axis it stages a tile of `a` and one of `b` in shared
//! memory, then every output element of the tile folds those 16 products into its
//! accumulator **in order**, so each element is still the sum over the shared axis taken
//! from first to last: the same bits as a plain dot product per element (and as the CPU
//! backend's integer products), whatever the block size. Integers wrap in 64 bits and are
//! truncated to their type (NumPy's overflow); floats accumulate in their own type.
//!
//! `aᵀ @ b` reads `a` (k × m) in place, so `svd_compressed`'s `Xᵀ Y` needs no transposed
//! copy of the block. The kernel is the product for every dtype; the GPU device uses
//! cuBLAS for `f32`/`f64` where the library loads, and this kernel otherwise.

use tessera_core::{DType, Error, Result};

use super::names::{ctype, NAME};
use super::{Arg, Entry, KernelPlan, Launch};

/// The side of an output tile and the depth of one step along the shared axis.
pub const TILE: u64 = 16;

/// The kernel for `a (m x k) @ b (k x n)` of `dtype`.
///
/// # Errors
/// [`Error::DType`] for `bool` (NumPy's `matmul` of bools is not a product tessera
/// defines; cast first).
pub fn matmul(dtype: DType, m: usize, k: usize, n: usize) -> Result<KernelPlan> {
    product(dtype, false, m, k, n)
}

/// The kernel for `aᵀ @ b`, with `a` stored as `k x m` and `b` as `k x n` (the result is
/// `m x n`).
///
/// # Errors
/// As [`matmul`].
pub fn matmul_transposed_a(dtype: DType, m: usize, k: usize, n: usize) -> Result<KernelPlan> {
    product(dtype, true, m, k, n)
}

fn product(dtype: DType, transpose_a: bool, m: usize, k: usize, n: usize) -> Result<KernelPlan> {
    refuse_bool(dtype)?;
    let t = ctype(dtype);
    // Staging `a`'s tile: element (row i0 + r, shared l0 + col). Consecutive threads read
    // consecutive addresses: along `col` for `a` (m x k), along `r` for `a` stored k x m.
    let load_a = if transpose_a {
        "const int r = e % 16, col = e / 16;\n\
         \x20               const i64 i = i0 + r, l = l0 + col;\n\
         \x20               as_[r][col] = (i < m && l < k) ? a[l * m + i] : (T)0;"
    } else {
        "const int r = e / 16, col = e % 16;\n\
         \x20               const i64 i = i0 + r, l = l0 + col;\n\
         \x20               as_[r][col] = (i < m && l < k) ? a[i * k + l] : (T)0;"
    };
    let head = format!(
        "const u64* __restrict__ P, const {t}* __restrict__ a, const {t}* __restrict__ b, {t}* __restrict__ out"
    );
    let body = tiled(dtype, &head, "", (load_a, LOAD_B));
    let (body, hash, name) = super::named(&body, if transpose_a { "tsr_mmt" } else { "tsr_mm" });
    Ok(KernelPlan {
        body,
        hash,
        entries: vec![Entry {
            name,
            args: vec![
                Arg::Params,
                Arg::Input(0, dtype),
                Arg::Input(1, dtype),
                Arg::Output(dtype),
            ],
        }],
        params: vec![m as u64, k as u64, n as u64],
        launch: tiles_launch(m, n),
        out_dtype: dtype,
    })
}

/// Staging `b`'s tile (k x n, C order): element (shared l0 + r, column j0 + col).
pub(super) const LOAD_B: &str = "const int r = e / 16, col = e % 16;\n\
     \x20               const i64 l = l0 + r, j = j0 + col;\n\
     \x20               bs_[r][col] = (l < k && j < n) ? b[l * n + j] : (T)0;";

/// NumPy's `matmul` of bools is not a product tessera defines.
pub(super) fn refuse_bool(dtype: DType) -> Result<()> {
    if dtype == DType::Bool {
        return Err(Error::dtype(
            "matmul",
            DType::Bool,
            "cast to a numeric dtype first",
        ));
    }
    Ok(())
}

/// One block per 16 x 16 output tile.
pub(super) fn tiles_launch(m: usize, n: usize) -> Launch {
    let tiles = (m as u64)
        .div_ceil(TILE)
        .saturating_mul((n as u64).div_ceil(TILE));
    Launch::Elementwise {
        n: tiles.saturating_mul(u64::from(super::BLOCK)),
    }
}

/// The tiled product kernel: arguments `head` (starting with `P`, whose first three words
/// are m, k, n), `setup` statements before the tile loop, and the statements staging one
/// element `e` of `a`'s and of `b`'s tile (`as_[r][col]`, `bs_[r][col]`, zero outside).
pub(super) fn tiled(
    dtype: DType,
    head: &str,
    setup: &str,
    (load_a, load_b): (&str, &str),
) -> String {
    let t = ctype(dtype);
    let (acc, fold) = if dtype.is_float() {
        (t, "acc = acc + as_[r][l] * bs_[l][col];")
    } else {
        ("u64", "acc = acc + (u64)as_[r][l] * (u64)bs_[l][col];")
    };
    format!(
        "extern \"C\" __global__ void {NAME}({head}) {{\n\
         \x20   typedef {t} T;\n\
         \x20   typedef {acc} Acc;\n\
         \x20   const i64 m = (i64)P[0], k = (i64)P[1], n = (i64)P[2];\n\
         {setup}\
         \x20   __shared__ T as_[16][17];\n\
         \x20   __shared__ T bs_[16][17];\n\
         \x20   __shared__ Acc cs_[16][16];\n\
         \x20   const i64 tn = (n + 15) / 16, tiles = ((m + 15) / 16) * tn;\n\
         \x20   for (i64 t = (i64)blockIdx.x; t < tiles; t += (i64)gridDim.x) {{\n\
         \x20       const i64 i0 = (t / tn) * 16, j0 = (t % tn) * 16;\n\
         \x20       for (int e = (int)threadIdx.x; e < 256; e += (int)blockDim.x) cs_[e / 16][e % 16] = (Acc)0;\n\
         \x20       for (i64 l0 = 0; l0 < k; l0 += 16) {{\n\
         \x20           __syncthreads();\n\
         \x20           for (int e = (int)threadIdx.x; e < 256; e += (int)blockDim.x) {{\n\
         \x20               {load_a}\n\
         \x20           }}\n\
         \x20           for (int e = (int)threadIdx.x; e < 256; e += (int)blockDim.x) {{\n\
         \x20               {load_b}\n\
         \x20           }}\n\
         \x20           __syncthreads();\n\
         \x20           const int depth = (k - l0 < 16) ? (int)(k - l0) : 16;\n\
         \x20           for (int e = (int)threadIdx.x; e < 256; e += (int)blockDim.x) {{\n\
         \x20               const int r = e / 16, col = e % 16;\n\
         \x20               Acc acc = cs_[r][col];\n\
         \x20               for (int l = 0; l < depth; ++l) {{ {fold} }}\n\
         \x20               cs_[r][col] = acc;\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20       for (int e = (int)threadIdx.x; e < 256; e += (int)blockDim.x) {{\n\
         \x20           const i64 i = i0 + e / 16, j = j0 + e % 16;\n\
         \x20           if (i < m && j < n) out[i * n + j] = (T)cs_[e / 16][e % 16];\n\
         \x20       }}\n\
         \x20       __syncthreads();\n\
         \x20   }}\n}}\n"
    )
}

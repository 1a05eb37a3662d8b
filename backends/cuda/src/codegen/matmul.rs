//! The matrix product as a kernel: one thread per output element, a dot product over the
//! shared axis in order. Integers wrap in 64 bits and are truncated to their type (NumPy's
//! overflow, the CPU backend's result); floats accumulate in their own type.
//!
//! This is the plain form, correct for every dtype and checked on the host like every
//! other kernel; a tiled or cuBLAS product is the faster form still to come.

use tessera_core::{DType, Error, Result};

use super::emit::{ctype, NAME};
use super::{Arg, Entry, KernelPlan, Launch};

/// The kernel for `a (m x k) @ b (k x n)` of `dtype`.
///
/// # Errors
/// [`Error::DType`] for `bool` (NumPy's `matmul` of bools is not a product tessera
/// defines; cast first).
pub fn matmul(dtype: DType, m: usize, k: usize, n: usize) -> Result<KernelPlan> {
    if dtype == DType::Bool {
        return Err(Error::dtype(
            "matmul",
            DType::Bool,
            "cast to a numeric dtype first",
        ));
    }
    let t = ctype(dtype);
    let fold = if dtype.is_float() {
        "acc = acc + a[i * k + l] * b[l * n + j];".to_string()
    } else {
        "acc = acc + (u64)a[i * k + l] * (u64)b[l * n + j];".to_string()
    };
    let acc = if dtype.is_float() { t } else { "u64" };
    let body = format!(
        "extern \"C\" __global__ void {NAME}(const u64* __restrict__ P, const {t}* __restrict__ a, const {t}* __restrict__ b, {t}* __restrict__ out) {{\n\
         \x20   const i64 m = (i64)P[0], k = (i64)P[1], n = (i64)P[2];\n\
         \x20   for (i64 f = (i64)blockIdx.x * blockDim.x + threadIdx.x; f < m * n; f += (i64)gridDim.x * blockDim.x) {{\n\
         \x20       const i64 i = f / n, j = f % n;\n\
         \x20       {acc} acc = ({acc})0;\n\
         \x20       for (i64 l = 0; l < k; ++l) {{ {fold} }}\n\
         \x20       out[f] = ({t})acc;\n\
         \x20   }}\n}}\n"
    );
    let (body, hash, name) = super::named(&body, "tsr_mm");
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
        launch: Launch::Elementwise {
            n: (m as u64).saturating_mul(n as u64),
        },
        out_dtype: dtype,
    })
}

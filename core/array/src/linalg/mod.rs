//! Chunked linear algebra: TSQR, exact SVD of tall-and-skinny / short-and-fat arrays,
//! randomized `svd_compressed` for arrays large in both dimensions, least squares, norms.
//!
//! The block kernels — reduced QR and thin SVD of one chunk — are backend primitives
//! ([`tessera_core::ArrayBackend::qr`], [`tessera_core::ArrayBackend::svd`]);
//! this module arranges them over chunks, as in Dask and the seed's story:
//!
//! * **TSQR** (Demmel et al., Benson et al.): QR of every row block in parallel, the R
//!   factors stacked and factored again — in a tree whose fan-in is `array.split-every`
//!   when there are many blocks — and each block's Q multiplied by its slice of the
//!   second-level Q. One pass over the input.
//! * **SVD** of a tall-and-skinny array: TSQR, the small SVD of R, `U = Q U_R`. A
//!   short-and-fat array is handled through its transpose. An array chunked in both
//!   dimensions is refused with a pointer to `svd_compressed`.
//! * **svd_compressed** (Halko, Martinsson & Tropp): a Gaussian test matrix drawn on the
//!   input's own backend, `Y = X Ω`, optional QR-normalised power iterations, `B = Qᵀ X`,
//!   the small SVD of B. Every pass multiplies the *lazy* input, so a generated input is
//!   regenerated and a stored one re-read: memory is that of one pass, whatever the
//!   number of passes — the fix the seed needed for Dask running out of memory. The last
//!   range step takes one pass, not two, when the input has whole rows per chunk: a
//!   [`sketch`] gives `Y` and `Xᵀ Y` together and `Bᵀ = (Xᵀ Y) R⁻¹`, used when `R` is well
//!   conditioned (otherwise `Qᵀ X` is formed in a second pass).
//!
//! Factors are computed when the function is called (the passes over the input happen
//! then); the returned arrays are ordinary lazy arrays over the stored factors, so `U` of
//! `svd_compressed`, for example, is the product `Q U_B`, formed chunk by chunk on demand.

mod block;
mod factors;
mod input;
mod sketch;
mod tsqr;

use crate::array::{Array, RandomState};
use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::chunks::{ChunkSpec, Chunks};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::Index;

pub use factors::{Lstsq, Qr, Svd};
pub(crate) use input::as_float;
pub use sketch::{sketch, Sketch};

use input::{one_chunk, require_2d, require_whole_rows, single};
pub use tsqr::tsqr;

/// QR of a tall-and-skinny array (one chunk along axis 1) by TSQR, or of a short-and-fat
/// one (one chunk along axis 0) directly.
pub fn qr(x: &Array) -> Result<Qr> {
    let (_, _) = require_2d(x, "qr")?;
    if x.chunks().axis(1).len() == 1 {
        return tsqr(x);
    }
    if x.chunks().axis(0).len() == 1 {
        let x = as_float(x);
        let (q, r) = block::qr(x.backend().as_ref(), &one_chunk(&x)?)?;
        return Ok(Qr {
            q: single(&x, q)?,
            r: single(&x, r)?,
        });
    }
    Err(not_skinny(x, "qr"))
}

fn not_skinny(x: &Array, op: &str) -> Error {
    Error::invalid(
        op,
        format!(
            "the array {:?} has {} x {} chunks; the exact algorithm needs one chunk along axis 1 (tall-and-skinny) or along axis 0 (short-and-fat). Rechunk one axis into a single chunk, or for an array large in both dimensions use linalg::svd_compressed(x, k, ...)",
            x.shape(),
            x.chunks().axis(0).len(),
            x.chunks().axis(1).len()
        ),
    )
}

/// Exact thin SVD of a tall-and-skinny or short-and-fat array.
///
/// ```
/// # use tessera_cpu as _; // links the `cpu` backend
/// use tessera_array::{linalg::svd, RandomState};
/// # fn main() -> tessera_core::Result<()> {
/// let x = RandomState::new(0).uniform(0.0, 1.0, &[1_000, 5], &[250usize, 5][..], None)?;
/// let d = svd(&x)?; // TSQR over the four row blocks
/// let s = d.s.compute()?.to_f64_vec();
/// assert_eq!(s.len(), 5);
/// assert!(s.windows(2).all(|w| w[0] >= w[1]));
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Invalid`] for an array that is not 2-d, chunked in both dimensions (use
/// [`svd_compressed`]), or not of a float dtype.
pub fn svd(x: &Array) -> Result<Svd> {
    let (_, _) = require_2d(x, "svd")?;
    if x.chunks().axis(1).len() == 1 {
        let f = tsqr::factorize(x)?;
        let (ur, s, vt) = block::svd(f.x.backend().as_ref(), &f.r)?;
        let (s, vt) = (single(&f.x, s)?, single(&f.x, vt)?);
        // U = Q U_R, folded into TSQR's last multiplication.
        let u = f.q_times(Some(&ur))?;
        return Ok(Svd { u, s, vt });
    }
    if x.chunks().axis(0).len() == 1 {
        // x = (x^T)^T = (U S V^T)^T = V S U^T.
        let t = svd(&x.transpose()?)?;
        return Ok(Svd {
            u: t.vt.transpose()?,
            s: t.s,
            vt: t.u.transpose()?,
        });
    }
    Err(not_skinny(x, "svd"))
}

/// Randomized SVD of rank `k` (Halko, Martinsson & Tropp): `n_oversamples` extra
/// directions, `n_power_iter` QR-normalised power iterations, the Gaussian test matrix
/// drawn with `seed` on the input's backend. The input is multiplied lazily in each of the
/// `2 + 2 n_power_iter` passes, never pinned — `1 + 2 n_power_iter` when `x` has one
/// chunk along axis 1 and the sketch `Y = x Ω` has `cond(R) <= ε^(-1/4)` (see [`sketch`]).
pub fn svd_compressed(
    x: &Array,
    k: usize,
    n_power_iter: usize,
    n_oversamples: usize,
    seed: u64,
) -> Result<Svd> {
    let (m, n) = require_2d(x, "svd_compressed")?;
    let l = k + n_oversamples;
    if k == 0 || l > m.min(n) {
        return Err(Error::invalid(
            "svd_compressed",
            format!(
                "k = {k} with {n_oversamples} oversamples needs 1 <= k + oversamples <= min(m, n) = {}",
                m.min(n)
            ),
        ));
    }
    let x = as_float(x);
    // The test matrix lives where the data lives, chunked to match x's columns.
    let omega_chunks = Chunks::new(&[n, l], vec![x.chunks().axis(1).to_vec(), vec![l]])?;
    let omega = RandomState::new(seed).normal_typed(
        0.0,
        1.0,
        x.dtype(),
        &[n, l],
        ChunkSpec::Exact(omega_chunks),
        Some(x.backend_name()),
    )?;
    // Power iterations: q = orth(x Ω), then Ω = orth(xᵀ q); two passes each.
    let mut test = omega;
    for _ in 0..n_power_iter {
        let q = tsqr(&x.matmul(&test)?.persist()?)?.q.persist()?;
        test = tsqr(&x.transpose()?.matmul(&q)?.persist()?)?.q.persist()?;
    }
    let b = x.backend().clone();
    // The range step: Y = x Ω = Q R and B = Qᵀ x. With whole rows per chunk, one pass
    // gives Y and xᵀ Y, and Bᵀ = xᵀ Q = (xᵀ Y) R⁻¹ when R is well conditioned.
    if x.chunks().axis(1).len() == 1 {
        let (y, xty) = sketch(&x, &test)?.persist()?;
        let f = tsqr::factorize(&y)?;
        if let Some(bt) = projection_from_sketch(b.as_ref(), &f.r, &one_chunk(&xty)?)? {
            let (ub, s, vt) = block::svd(b.as_ref(), &b.transpose(&bt, &[1, 0])?)?;
            let l = ub.shape()[1];
            let whole = |len| AxisSlice {
                start: 0,
                step: 1,
                len,
            };
            let ub_k = b.slice(&ub, &[whole(l), whole(k.min(l))])?;
            // U = Q U_B, folded into TSQR's last multiplication: Q is never formed.
            return top_k(&x, f.q_times(Some(&ub_k))?, s, vt, k);
        }
        // Ill-conditioned: the second pass below, from the same Y.
        return two_pass(&x, f.q_times(None)?.persist()?, k);
    }
    two_pass(&x, tsqr(&x.matmul(&test)?.persist()?)?.q.persist()?, k)
}

/// `svd_compressed`'s last step from an orthonormal `q`: `B = qᵀ x` (a pass over `x`),
/// the small SVD of `B`, `U = q U_B`.
fn two_pass(x: &Array, q: Array, k: usize) -> Result<Svd> {
    let b = q.transpose()?.matmul(x)?;
    let (ub, s, vt) = block::svd(x.backend().as_ref(), &one_chunk(&b)?)?;
    let keep = Index::range(0, k as i64);
    let u = q.matmul(&single(x, ub)?.slice(&[Index::FULL, keep])?)?;
    top_k(x, u, s, vt, k)
}

/// The rank-`k` decomposition from `u` (already `k` columns) and the small SVD's `s` and
/// `vt` chunks.
fn top_k(x: &Array, u: Array, s: Chunk, vt: Chunk, k: usize) -> Result<Svd> {
    let keep = Index::range(0, k as i64);
    Ok(Svd {
        u,
        s: single(x, s)?.slice(&[keep])?,
        vt: single(x, vt)?.slice(&[keep, Index::FULL])?,
    })
}

/// The largest `cond(R)` for which `Bᵀ = (xᵀ Y) R⁻¹` is used: `ε^(-1/4)` of the dtype
/// (8192 for `float64`, 54 for `float32`). The error of that product grows like
/// `cond(R) · ε · |x|` where `Qᵀ x` formed directly has `ε · |x|`; this bound keeps at
/// least three quarters of the digits. A random test matrix on data whose spectrum does
/// not fall steeply stays far below it (about 100 on the seed's uniform matrix).
fn sketch_cond_limit(dtype: DType) -> f64 {
    let eps = if dtype == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    eps.powf(-0.25)
}

/// `Bᵀ = xty R⁻¹` (n × l) for the upper-triangular `r` (l × l) of `Y = Q R`, or `None`
/// when `cond(R)` is above [`sketch_cond_limit`] (or R is singular), in which case the
/// caller forms `Qᵀ x` directly.
fn projection_from_sketch(b: &dyn ArrayBackend, r: &Chunk, xty: &Chunk) -> Result<Option<Chunk>> {
    let (_, sv, _) = block::svd(b, r)?;
    let sv = b.to_host(&sv)?.to_f64_vec();
    let (Some(&top), Some(&bottom)) = (sv.first(), sv.last()) else {
        return Ok(None);
    };
    if !(bottom > 0.0 && top / bottom <= sketch_cond_limit(r.dtype())) {
        return Ok(None);
    }
    let l = r.shape()[0];
    let rv = b.to_host(r)?.to_f64_vec();
    // R⁻¹ by back substitution, column by column (upper triangular, l × l).
    let mut inv = vec![0.0; l * l];
    for j in 0..l {
        for i in (0..=j).rev() {
            let mut acc = if i == j { 1.0 } else { 0.0 };
            for t in i + 1..=j {
                acc -= rv[i * l + t] * inv[t * l + j];
            }
            inv[i * l + j] = acc / rv[i * l + i];
        }
    }
    let inv = HostArray::F64(
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[l, l]), inv)
            .map_err(|e| Error::Internal(format!("R inverse: {e}")))?,
    )
    .cast(r.dtype());
    Ok(Some(b.matmul(xty, &b.from_host(&inv)?)?))
}

/// Least squares `a x ≈ b` for a tall-and-skinny `a` (one chunk along axis 1) via TSQR:
/// `x = R⁻¹ Qᵀ b`. `b` is `m` or `m × r`, chunked like `a`'s rows.
pub fn lstsq(a: &Array, b: &Array) -> Result<Lstsq> {
    let (m, n) = require_2d(a, "lstsq")?;
    let vector = b.ndim() == 1;
    let b2 = if vector {
        b.reshape(&[m as i64, 1])?
    } else {
        b.clone()
    };
    if b2.shape()[0] != m {
        return Err(Error::shape(
            "lstsq",
            format!(
                "a is {:?} but b is {:?}: they need the same rows",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let a = as_float(a);
    let b2 = as_float(&b2).astype(a.dtype());
    let Qr { q, r } = tsqr(&a)?;
    let qtb = q.transpose()?.matmul(&b2)?.compute()?;
    let rh = r.compute()?;
    let rows = r.shape()[0];
    if rows < n {
        return Err(Error::invalid(
            "lstsq",
            format!("a has {m} rows for {n} unknowns: the system is underdetermined"),
        ));
    }
    let (rv, cv) = (rh.to_f64_vec(), qtb.to_f64_vec());
    let cols = b2.shape()[1];
    let diag_max = (0..n).map(|i| rv[i * n + i].abs()).fold(0.0, f64::max);
    let eps = if a.dtype() == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let cutoff = diag_max * eps * m.max(n) as f64;
    let rank = (0..n).filter(|&i| rv[i * n + i].abs() > cutoff).count();
    if rank < n {
        return Err(Error::invalid(
            "lstsq",
            format!("a is rank-deficient (numerical rank {rank} of {n}); the TSQR solution is not unique"),
        ));
    }
    // Back substitution, one right-hand side at a time.
    let mut sol = vec![0.0; n * cols];
    for c in 0..cols {
        for i in (0..n).rev() {
            let mut acc = cv[i * cols + c];
            for j in i + 1..n {
                acc -= rv[i * n + j] * sol[j * cols + c];
            }
            sol[i * cols + c] = acc / rv[i * n + i];
        }
    }
    let shape: Vec<usize> = if vector { vec![n] } else { vec![n, cols] };
    let xh = HostArray::F64(
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), sol)
            .map_err(|e| Error::Internal(e.to_string()))?,
    )
    .cast(a.dtype());
    let x = Array::from_host(
        xh,
        ChunkSpec::Exact(Chunks::single(&shape)),
        Some(a.backend_name()),
    )?;
    let x2 = if vector {
        x.reshape(&[n as i64, 1])?
    } else {
        x.clone()
    };
    let resid = (&b2 - &a.matmul(&x2)?)?;
    let residuals = (&resid * &resid)?.sum(Some(&[0]), false)?;
    let (_, s, _) = block::svd(a.backend().as_ref(), &one_chunk(&r)?)?;
    Ok(Lstsq {
        x,
        residuals,
        rank,
        s: single(&a, s)?,
    })
}

/// The Frobenius norm of `x` (the 2-norm of a vector): `sqrt(sum(x²))`, lazy.
pub fn norm(x: &Array) -> Result<Array> {
    let f = as_float(x);
    (&f * &f)?.sum(None, false)?.sqrt()
}

/// The 2-norm along `axis` (e.g. of every column with `axis = 0`), lazy.
pub fn norm_axis(x: &Array, axis: usize) -> Result<Array> {
    let f = as_float(x);
    (&f * &f)?.sum(Some(&[axis]), false)?.sqrt()
}

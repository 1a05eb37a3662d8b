//! Chunked linear algebra: TSQR, exact SVD of tall-and-skinny / short-and-fat arrays,
//! randomized `svd_compressed` for arrays large in both dimensions, least squares, norms.
//!
//! The block kernels — reduced QR and thin SVD of one chunk — are backend primitives
//! ([`ArrayBackend::qr`](crate::ArrayBackend::qr), [`ArrayBackend::svd`](crate::ArrayBackend::svd));
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
//!   number of passes — the fix the seed needed for Dask running out of memory.
//!
//! Factors are computed when the function is called (the passes over the input happen
//! then); the returned arrays are ordinary lazy arrays over the stored factors, so `U` of
//! `svd_compressed`, for example, is the product `Q U_B`, formed chunk by chunk on demand.

mod tsqr;

use crate::array::{Array, RandomState};
use crate::backend::Chunk;
use crate::chunks::{ChunkSpec, Chunks};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::Index;

pub use tsqr::tsqr;

/// A QR factorisation: `x = q r`.
#[derive(Clone, Debug)]
pub struct Qr {
    /// Orthonormal columns, chunked by rows like the input.
    pub q: Array,
    /// Upper triangular, one chunk.
    pub r: Array,
}

/// A singular value decomposition: `x = u diag(s) vt`.
#[derive(Clone, Debug)]
pub struct Svd {
    /// Left singular vectors (columns).
    pub u: Array,
    /// Singular values, descending.
    pub s: Array,
    /// Right singular vectors (rows).
    pub vt: Array,
}

/// Least-squares solution of `a x ≈ b`.
#[derive(Clone, Debug)]
pub struct Lstsq {
    /// The solution (`n × r`, or `n` for a vector `b`).
    pub x: Array,
    /// Squared 2-norm of each column of `b - a x`.
    pub residuals: Array,
    /// Numerical rank of `a`.
    pub rank: usize,
    /// Singular values of `a`.
    pub s: Array,
}

/// The float dtype linear algebra runs in: floats stay, everything else becomes `float64`.
pub(crate) fn as_float(x: &Array) -> Array {
    match x.dtype() {
        DType::F32 | DType::F64 => x.clone(),
        _ => x.astype(DType::F64),
    }
}

fn require_2d(x: &Array, op: &str) -> Result<(usize, usize)> {
    match x.shape().as_slice() {
        &[m, n] => Ok((m, n)),
        s => Err(Error::shape(
            op,
            format!("needs a 2-d array, got shape {s:?}"),
        )),
    }
}

/// One stored chunk as an array on `x`'s backend.
fn single(x: &Array, c: Chunk) -> Result<Array> {
    let shape = c.shape().to_vec();
    Array::from_chunks(vec![c], Chunks::single(&shape), x.backend().clone())
}

/// The array's data as one chunk (for small arrays: R factors, B of svd_compressed).
fn one_chunk(x: &Array) -> Result<Chunk> {
    let whole = x.rechunk(ChunkSpec::Exact(Chunks::single(&x.shape())))?;
    whole
        .compute_chunks()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("a single-chunk array computed no chunk".into()))
}

/// QR of a tall-and-skinny array (one chunk along axis 1) by TSQR, or of a short-and-fat
/// one (one chunk along axis 0) directly.
pub fn qr(x: &Array) -> Result<Qr> {
    let (_, _) = require_2d(x, "qr")?;
    if x.chunks().axis(1).len() == 1 {
        return tsqr(x);
    }
    if x.chunks().axis(0).len() == 1 {
        let x = as_float(x);
        let (q, r) = x.backend().qr(&one_chunk(&x)?)?;
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
pub fn svd(x: &Array) -> Result<Svd> {
    let (_, _) = require_2d(x, "svd")?;
    if x.chunks().axis(1).len() == 1 {
        let f = tsqr::factorize(x)?;
        let (ur, s, vt) = f.x.backend().svd(&f.r)?;
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
/// `2 + 2 n_power_iter` passes, never pinned.
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
    let mut q = tsqr(&x.matmul(&omega)?.persist()?)?.q.persist()?;
    for _ in 0..n_power_iter {
        let z = tsqr(&x.transpose()?.matmul(&q)?.persist()?)?.q.persist()?;
        q = tsqr(&x.matmul(&z)?.persist()?)?.q.persist()?;
    }
    let b = q.transpose()?.matmul(&x)?;
    let (ub, s, vt) = x.backend().svd(&one_chunk(&b)?)?;
    let (ub, s, vt) = (single(&x, ub)?, single(&x, s)?, single(&x, vt)?);
    let keep = Index::range(0, k as i64);
    Ok(Svd {
        u: q.matmul(&ub.slice(&[Index::FULL, keep])?)?,
        s: s.slice(&[keep])?,
        vt: vt.slice(&[keep, Index::FULL])?,
    })
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
    let (_, s, _) = a.backend().svd(&one_chunk(&r)?)?;
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

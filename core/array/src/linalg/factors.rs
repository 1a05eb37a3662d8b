//! What the decompositions return: [`Qr`], [`Svd`], [`Lstsq`], each a set of lazy arrays
//! over the stored factors.

use crate::array::Array;

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

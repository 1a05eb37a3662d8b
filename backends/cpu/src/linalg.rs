//! Block kernels of linear algebra on one chunk — reduced QR and thin SVD — with faer
//! (pure Rust: no system BLAS/LAPACK to install). Single-threaded per chunk: the chunked
//! algorithms above them (`tessera_core::linalg`) run chunks in parallel.

use faer::{Mat, MatRef};
use ndarray::{Array2, ArrayD, ArrayView2, Ix2};
use tessera_core::{DType, Error, HostArray, Result};

/// Element types faer factorises.
trait Real: faer::traits::RealField + Copy + tessera_core::host::HostElement {}
impl Real for f64 {}
impl Real for f32 {}

fn to_faer<T: Real>(a: ArrayView2<'_, T>) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[[i, j]])
}

fn from_faer<T: Real>(m: MatRef<'_, T>) -> ArrayD<T> {
    Array2::from_shape_fn((m.nrows(), m.ncols()), |(i, j)| m[(i, j)]).into_dyn()
}

/// The 2-d float view of a host array, or the error that says why not.
fn matrix<'a, T: Real>(x: &'a HostArray, op: &str) -> Result<ArrayView2<'a, T>> {
    x.view_typed::<T>()?
        .into_dimensionality::<Ix2>()
        .map_err(|_| Error::shape(op, format!("needs a 2-d chunk, got shape {:?}", x.shape())))
}

fn check_float(x: &HostArray, op: &str) -> Result<()> {
    match x.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        d => Err(Error::dtype(
            op,
            d,
            "QR and SVD need float32 or float64; cast first",
        )),
    }
}

fn qr_typed<T: Real>(x: &HostArray) -> Result<(HostArray, HostArray)> {
    let a = matrix::<T>(x, "qr")?;
    let (m, n) = a.dim();
    let k = m.min(n);
    if k == 0 {
        let q = Array2::<T>::zeros((m, 0)).into_dyn();
        let r = Array2::<T>::zeros((0, n)).into_dyn();
        return Ok((T::wrap(q), T::wrap(r)));
    }
    let f = to_faer(a);
    let qr = f.qr();
    let q = qr.compute_thin_Q();
    let r = qr.thin_R();
    Ok((T::wrap(from_faer(q.as_ref())), T::wrap(from_faer(r))))
}

fn svd_typed<T: Real>(x: &HostArray) -> Result<(HostArray, HostArray, HostArray)> {
    let a = matrix::<T>(x, "svd")?;
    let (m, n) = a.dim();
    let k = m.min(n);
    if k == 0 {
        return Ok((
            T::wrap(Array2::<T>::zeros((m, 0)).into_dyn()),
            T::wrap(ndarray::Array1::<T>::zeros(0).into_dyn()),
            T::wrap(Array2::<T>::zeros((0, n)).into_dyn()),
        ));
    }
    let svd = to_faer(a)
        .thin_svd()
        .map_err(|e| Error::invalid("svd", format!("the SVD did not converge: {e:?}")))?;
    let s = svd.S().column_vector();
    let s = ndarray::Array1::from_shape_fn(k, |i| s[i]).into_dyn();
    let v = svd.V();
    let vt = Array2::from_shape_fn((k, n), |(i, j)| v[(j, i)]).into_dyn();
    Ok((T::wrap(from_faer(svd.U())), T::wrap(s), T::wrap(vt)))
}

/// Reduced QR: `Q` (m × min(m, n)), `R` (min(m, n) × n).
pub fn qr(x: &HostArray) -> Result<(HostArray, HostArray)> {
    check_float(x, "qr")?;
    match x.dtype() {
        DType::F32 => qr_typed::<f32>(x),
        _ => qr_typed::<f64>(x),
    }
}

/// Thin SVD: `U` (m × k), `S` (k), `Vt` (k × n).
pub fn svd(x: &HostArray) -> Result<(HostArray, HostArray, HostArray)> {
    check_float(x, "svd")?;
    match x.dtype() {
        DType::F32 => svd_typed::<f32>(x),
        _ => svd_typed::<f64>(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(rows: usize, cols: usize, v: &[f64]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(ndarray::IxDyn(&[rows, cols]), v.to_vec()).unwrap())
    }

    fn dense(h: &HostArray) -> Array2<f64> {
        h.view_typed::<f64>()
            .unwrap()
            .into_dimensionality::<Ix2>()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn qr_of_a_hand_matrix() {
        // [[3, 1], [4, 2]]: the first column has norm 5.
        let (q, r) = qr(&mat(2, 2, &[3.0, 1.0, 4.0, 2.0])).unwrap();
        let (q, r) = (dense(&q), dense(&r));
        assert!((r[[0, 0]].abs() - 5.0).abs() < 1e-12);
        assert!(r[[1, 0]].abs() < 1e-15);
        let back = q.dot(&r);
        assert!((back[[1, 1]] - 2.0).abs() < 1e-12 && (back[[0, 1]] - 1.0).abs() < 1e-12);
        let qtq = q.t().dot(&q);
        assert!((qtq[[0, 1]]).abs() < 1e-15 && (qtq[[1, 1]] - 1.0).abs() < 1e-15);
    }

    #[test]
    fn svd_of_a_diagonal_and_of_a_rank_one_matrix() {
        let (_, s, _) = svd(&mat(3, 2, &[0.0, 2.0, 3.0, 0.0, 0.0, 0.0])).unwrap();
        assert_eq!(s.shape(), &[2]);
        let s = s.to_f64_vec();
        assert!((s[0] - 3.0).abs() < 1e-12 && (s[1] - 2.0).abs() < 1e-12);
        // u v^T with |u| = |v| = sqrt(2): one singular value 2.
        let (u, s, vt) = svd(&mat(2, 2, &[1.0, 1.0, 1.0, 1.0])).unwrap();
        let s = s.to_f64_vec();
        assert!((s[0] - 2.0).abs() < 1e-12 && s[1].abs() < 1e-12);
        let (u, vt) = (dense(&u), dense(&vt));
        assert!((u[[0, 0]] * 2.0 * vt[[0, 0]] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn integers_and_non_matrices_are_typed_errors() {
        let i = HostArray::I64(ArrayD::zeros(ndarray::IxDyn(&[2, 2])));
        assert!(matches!(qr(&i), Err(Error::DType { .. })));
        let v = HostArray::F64(ArrayD::zeros(ndarray::IxDyn(&[4])));
        assert!(matches!(svd(&v), Err(Error::Shape { .. })));
        let (q, r) = qr(&mat(0, 3, &[])).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[0usize, 0][..], &[0usize, 3][..]));
    }
}

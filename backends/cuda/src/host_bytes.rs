//! Host arrays as the bytes a kernel reads and writes: C order, little-endian, `bool` as one
//! byte holding 0 or 1 (the kernels' `b8`). Safe code: each element goes through its
//! `to_le_bytes`/`from_le_bytes`, which the compiler turns into plain copies.

use tessera_core::{dispatch_host, DType, Error, HostArray, Result};

/// An element that has a kernel byte form.
trait Bytes: Sized {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! numeric {
    ($($t:ty),*) => {$(
        impl Bytes for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
numeric!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl Bytes for bool {
    const SIZE: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn get(b: &[u8]) -> Self {
        b[0] != 0
    }
}

/// The elements of `h` in C order as kernel bytes.
pub fn to_bytes(h: &HostArray) -> Vec<u8> {
    let mut out = Vec::with_capacity(h.nbytes());
    dispatch_host!(h, a => {
        for &v in a.iter() {
            v.put(&mut out);
        }
    });
    out
}

/// A host array of `dtype` and `shape` from kernel bytes in C order.
///
/// # Errors
/// [`Error::Internal`] when `bytes` is not exactly the shape's size in that dtype (a
/// device buffer of the wrong length is a bug in the backend).
pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<HostArray> {
    fn go<T: Bytes + tessera_core::host::HostElement>(
        shape: &[usize],
        bytes: &[u8],
    ) -> Result<HostArray> {
        let v: Vec<T> = bytes.chunks_exact(T::SIZE).map(T::get).collect();
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v)
            .map(T::wrap)
            .map_err(|e| Error::Internal(format!("device bytes for {shape:?}: {e}")))
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| Error::Internal(format!("{shape:?} of {dtype} overflows usize")))?;
    if n != bytes.len() {
        return Err(Error::Internal(format!(
            "{} device bytes for {dtype} {shape:?}, which needs {n}",
            bytes.len()
        )));
    }
    tessera_core::dispatch_dtype!(dtype, T => go::<T>(shape, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::Scalar;

    #[test]
    fn every_dtype_round_trips() {
        for d in DType::ALL {
            let vals: Vec<Scalar> = (0..6).map(|i| Scalar::I64(i * 37 - 90).cast(d)).collect();
            let h = HostArray::from_scalars(&[2, 3], d, &vals).unwrap();
            let b = to_bytes(&h);
            assert_eq!(b.len(), 6 * d.size());
            assert_eq!(from_bytes(d, &[2, 3], &b).unwrap(), h, "{d}");
        }
        assert!(from_bytes(DType::F64, &[2], &[0u8; 15]).is_err());
        let t = HostArray::from_scalars(
            &[2],
            DType::Bool,
            &[Scalar::Bool(true), Scalar::Bool(false)],
        )
        .unwrap();
        assert_eq!(to_bytes(&t), vec![1, 0]);
    }
}

//! Host interchange for n-d data: a dtype-tagged `ndarray::ArrayD`.
//!
//! Every backend converts its chunks to and from [`HostArray`]; it is also what
//! `compute()` returns. Typed access goes through [`HostArray::into_typed`] /
//! [`HostArray::view_typed`], which check the dtype instead of converting silently.

pub mod arrow;
mod gather;
mod scan;
mod search;
mod sort;

use ndarray::{ArrayD, ArrayViewD, IxDyn};

use crate::dtype::{DType, Element, Scalar};
use crate::error::{Error, Result};

/// An n-d host array of any supported dtype.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum HostArray {
    Bool(ArrayD<bool>),
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
}

/// Runs `$body` with `$a` bound to the typed array inside a [`HostArray`].
#[macro_export]
macro_rules! dispatch_host {
    ($h:expr, $a:ident => $body:expr) => {
        match $h {
            $crate::HostArray::Bool($a) => $body,
            $crate::HostArray::I8($a) => $body,
            $crate::HostArray::I16($a) => $body,
            $crate::HostArray::I32($a) => $body,
            $crate::HostArray::I64($a) => $body,
            $crate::HostArray::U8($a) => $body,
            $crate::HostArray::U16($a) => $body,
            $crate::HostArray::U32($a) => $body,
            $crate::HostArray::U64($a) => $body,
            $crate::HostArray::F32($a) => $body,
            $crate::HostArray::F64($a) => $body,
        }
    };
}

/// Runs `$body` with the type `$t` bound to the Rust element type of the [`DType`] `$d`
/// (`bool`, `i8`, ..., `f64`): one generic body instead of a match arm per dtype.
#[macro_export]
macro_rules! dispatch_dtype {
    ($d:expr, $t:ident => $body:expr) => {
        match $d {
            $crate::DType::Bool => {
                type $t = bool;
                $body
            }
            $crate::DType::I8 => {
                type $t = i8;
                $body
            }
            $crate::DType::I16 => {
                type $t = i16;
                $body
            }
            $crate::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::DType::U16 => {
                type $t = u16;
                $body
            }
            $crate::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::DType::U64 => {
                type $t = u64;
                $body
            }
            $crate::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::DType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

/// Types that can be wrapped in a [`HostArray`] (every [`Element`]).
pub trait HostElement: Element {
    /// Wraps a typed array.
    fn wrap(a: ArrayD<Self>) -> HostArray;
    /// Unwraps, if the dtype matches.
    fn unwrap(h: HostArray) -> std::result::Result<ArrayD<Self>, HostArray>;
    /// Borrows, if the dtype matches.
    fn view(h: &HostArray) -> Option<ArrayViewD<'_, Self>>;
}

macro_rules! host_element {
    ($t:ty, $v:ident) => {
        impl HostElement for $t {
            fn wrap(a: ArrayD<Self>) -> HostArray {
                HostArray::$v(a)
            }
            fn unwrap(h: HostArray) -> std::result::Result<ArrayD<Self>, HostArray> {
                match h {
                    HostArray::$v(a) => Ok(a),
                    other => Err(other),
                }
            }
            fn view(h: &HostArray) -> Option<ArrayViewD<'_, Self>> {
                match h {
                    HostArray::$v(a) => Some(a.view()),
                    _ => None,
                }
            }
        }
        impl From<ArrayD<$t>> for HostArray {
            fn from(a: ArrayD<$t>) -> HostArray {
                HostArray::$v(a)
            }
        }
    };
}
host_element!(bool, Bool);
host_element!(i8, I8);
host_element!(i16, I16);
host_element!(i32, I32);
host_element!(i64, I64);
host_element!(u8, U8);
host_element!(u16, U16);
host_element!(u32, U32);
host_element!(u64, U64);
host_element!(f32, F32);
host_element!(f64, F64);

impl HostArray {
    /// The dtype.
    pub fn dtype(&self) -> DType {
        match self {
            HostArray::Bool(_) => DType::Bool,
            HostArray::I8(_) => DType::I8,
            HostArray::I16(_) => DType::I16,
            HostArray::I32(_) => DType::I32,
            HostArray::I64(_) => DType::I64,
            HostArray::U8(_) => DType::U8,
            HostArray::U16(_) => DType::U16,
            HostArray::U32(_) => DType::U32,
            HostArray::U64(_) => DType::U64,
            HostArray::F32(_) => DType::F32,
            HostArray::F64(_) => DType::F64,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        dispatch_host!(self, a => a.shape())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        dispatch_host!(self, a => a.len())
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of element data.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// An array of `shape` filled with `value` (cast to `dtype`).
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> HostArray {
        dispatch_dtype!(dtype, T => T::wrap(ArrayD::from_elem(IxDyn(shape), T::from_scalar(value))))
    }

    /// A C-contiguous copy (or `self` when already contiguous).
    pub fn into_standard_layout(self) -> HostArray {
        fn std<T: HostElement>(a: ArrayD<T>) -> HostArray {
            if a.is_standard_layout() {
                T::wrap(a)
            } else {
                T::wrap(a.as_standard_layout().into_owned())
            }
        }
        dispatch_host!(self, a => std(a))
    }

    /// Takes the typed array out, failing with a dtype error naming both dtypes.
    pub fn into_typed<T: HostElement>(self) -> Result<ArrayD<T>> {
        let have = self.dtype();
        T::unwrap(self).map_err(|_| {
            Error::dtype(
                "into_typed",
                have,
                format!(
                    "the array holds {have}; asked for {} (use astype first)",
                    T::DTYPE
                ),
            )
        })
    }

    /// Borrows the typed array, failing with a dtype error naming both dtypes.
    pub fn view_typed<T: HostElement>(&self) -> Result<ArrayViewD<'_, T>> {
        T::view(self).ok_or_else(|| {
            Error::dtype(
                "view_typed",
                self.dtype(),
                format!("the array holds {}; asked for {}", self.dtype(), T::DTYPE),
            )
        })
    }

    /// Element at a flat C-order index as a [`Scalar`].
    pub fn get_flat(&self, i: usize) -> Option<Scalar> {
        dispatch_host!(self, a => a.iter().nth(i).map(|v| v.to_scalar()))
    }

    /// Every element, in C order, converted to `f64` (for checks and printing).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        dispatch_host!(self, a => a.iter().map(|v| v.to_scalar().as_f64()).collect())
    }

    /// Converts to `dtype` with `astype` semantics.
    pub fn cast(&self, dtype: DType) -> HostArray {
        if self.dtype() == dtype {
            return self.clone();
        }
        dispatch_dtype!(dtype, T => T::wrap(dispatch_host!(self, a => a.mapv(|v| T::from_scalar(v.to_scalar())))))
    }

    /// The same elements in C order, laid out as `shape` (any input layout).
    ///
    /// # Errors
    /// [`Error::Shape`] when `shape` holds another number of elements.
    pub fn reshape(&self, shape: &[usize]) -> Result<HostArray> {
        if self.len() != shape.iter().product::<usize>() {
            return Err(Error::shape(
                "reshape",
                format!("cannot reshape {:?} into {:?}", self.shape(), shape),
            ));
        }
        fn go<T: HostElement>(a: &ArrayD<T>, shape: &[usize]) -> HostArray {
            let v: Vec<T> = a.iter().copied().collect();
            T::wrap(ArrayD::from_shape_vec(IxDyn(shape), v).expect("length checked"))
        }
        Ok(dispatch_host!(self, a => go(a, shape)))
    }

    /// An array of `dtype` and `shape` from one scalar per element in C order (each cast
    /// with `astype` semantics).
    ///
    /// # Errors
    /// [`Error::Shape`] when the number of scalars is not the shape's element count.
    pub fn from_scalars(shape: &[usize], dtype: DType, values: &[Scalar]) -> Result<HostArray> {
        dispatch_dtype!(dtype, T => {
            let v: Vec<T> = values.iter().map(|&s| T::from_scalar(s)).collect();
            ArrayD::from_shape_vec(IxDyn(shape), v)
                .map(T::wrap)
                .map_err(|e| Error::shape("from_scalars", format!("{} values for {shape:?}: {e}", values.len())))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access_checks_dtype() {
        let h = HostArray::full(&[2, 3], Scalar::F64(1.5), DType::F32);
        assert_eq!(h.dtype(), DType::F32);
        assert_eq!(h.nbytes(), 24);
        assert!(h.view_typed::<f32>().is_ok());
        let err = h.clone().into_typed::<f64>().unwrap_err();
        assert!(err.to_string().contains("holds float32"), "{err}");
        assert_eq!(h.cast(DType::I32).get_flat(5), Some(Scalar::I32(1)));
    }

    #[test]
    fn reshape_keeps_c_order_from_any_layout() {
        let a = ndarray::Array::from_shape_vec((2, 3), (0..6i64).collect()).unwrap();
        // The transpose is not in C order: reshaping reads it logically.
        let t = HostArray::I64(a.reversed_axes().into_dyn());
        let r = t.reshape(&[6]).unwrap();
        assert_eq!(r.to_f64_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(r.shape(), &[6]);
        let e = t.reshape(&[4]).unwrap_err().to_string();
        assert!(e.contains("cannot reshape [3, 2] into [4]"), "{e}");
    }
}

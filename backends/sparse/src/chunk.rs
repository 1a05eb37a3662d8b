//! [`SparseChunk`]: explicit entries at sorted C-order positions, everything else the fill.
//!
//! One representation serves every rank: the explicit entries are kept as strictly
//! increasing flat (C-order) indices with their values. For a 2-d chunk that *is* CSR
//! order — row `r` is the run of indices in `[r * ncols, (r + 1) * ncols)`, found by binary
//! search — and for n-d it is COO with linearised coordinates. Reshape is free, and a
//! merge of two chunks (binary ops) is one linear pass.
//!
//! Every element that is not explicit equals `fill` (as in pydata/sparse): `x + 1` on a
//! chunk of fill 0 is a chunk of fill 1 with the same pattern, not a dense chunk. An
//! explicit entry is never bit-identical to the fill (so `-0.0` stays explicit next to a
//! fill of `0.0`, and NaN always does): [`SparseChunk::prune`] keeps this invariant.

use std::any::Any;

use ndarray::{ArrayD, IxDyn};
use tessera_core::dtype::Element;
use tessera_core::host::HostElement;
use tessera_core::{dispatch_host, ChunkData, DType, HostArray, Scalar};

use crate::NAME;

/// A sparse chunk.
#[derive(Debug, Clone)]
pub struct SparseChunk {
    pub(crate) shape: Vec<usize>,
    pub(crate) fill: Scalar,
    /// Strictly increasing C-order flat indices of the explicit entries.
    pub(crate) idx: Vec<u64>,
    /// Their values: a 1-d array of the chunk's dtype, `idx.len()` long.
    pub(crate) vals: HostArray,
}

impl ChunkData for SparseChunk {
    fn dtype(&self) -> DType {
        self.fill.dtype()
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn backend(&self) -> &str {
        NAME
    }
    /// What is held: indices and values, not the dense size.
    fn nbytes(&self) -> usize {
        self.idx.len() * (8 + self.dtype().size())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Bit patterns of element values, for "is this exactly the fill" tests (`-0.0 != 0.0`,
/// NaN payloads kept).
pub(crate) trait Bits: Element + HostElement {
    fn bits(self) -> u64;
}

macro_rules! bits_int {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
bits_int!(i8, i16, i32, i64, u8, u16, u32, u64);
impl Bits for bool {
    fn bits(self) -> u64 {
        self as u64
    }
}
impl Bits for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Runs `$body` with `$t` bound to the element type of `$dtype`.
macro_rules! with_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            tessera_core::DType::Bool => {
                type $t = bool;
                $body
            }
            tessera_core::DType::I8 => {
                type $t = i8;
                $body
            }
            tessera_core::DType::I16 => {
                type $t = i16;
                $body
            }
            tessera_core::DType::I32 => {
                type $t = i32;
                $body
            }
            tessera_core::DType::I64 => {
                type $t = i64;
                $body
            }
            tessera_core::DType::U8 => {
                type $t = u8;
                $body
            }
            tessera_core::DType::U16 => {
                type $t = u16;
                $body
            }
            tessera_core::DType::U32 => {
                type $t = u32;
                $body
            }
            tessera_core::DType::U64 => {
                type $t = u64;
                $body
            }
            tessera_core::DType::F32 => {
                type $t = f32;
                $body
            }
            tessera_core::DType::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}
pub(crate) use with_type;

/// The zero of a dtype (`false`, `0`, `+0.0`).
pub(crate) fn zero(dtype: DType) -> Scalar {
    Scalar::I64(0).cast(dtype)
}

/// True when `s` is the zero of its dtype, bit for bit (`-0.0` is not).
pub(crate) fn is_zero(s: Scalar) -> bool {
    with_type!(s.dtype(), T => T::from_scalar(s).bits() == T::default().bits())
}

/// True when two scalars have one dtype and the same bits.
pub(crate) fn same_scalar(a: Scalar, b: Scalar) -> bool {
    a.dtype() == b.dtype()
        && with_type!(a.dtype(), T => T::from_scalar(a).bits() == T::from_scalar(b).bits())
}

/// A 1-d host array from a vector.
pub(crate) fn vec1<T: HostElement>(v: Vec<T>) -> HostArray {
    let n = v.len();
    T::wrap(ArrayD::from_shape_vec(IxDyn(&[n]), v).expect("1-d of its own length"))
}

/// The values of a 1-d host array (any layout) as a vector.
pub(crate) fn to_vec<T: HostElement>(h: &HostArray) -> Vec<T> {
    T::view(h)
        .map(|v| v.iter().copied().collect())
        .unwrap_or_default()
}

impl SparseChunk {
    /// A chunk with no explicit entries: every element is `fill`.
    pub fn filled(shape: &[usize], fill: Scalar) -> SparseChunk {
        SparseChunk {
            shape: shape.to_vec(),
            fill,
            idx: Vec::new(),
            vals: with_type!(fill.dtype(), T => vec1::<T>(Vec::new())),
        }
    }

    /// Builds a chunk from entries; `idx` must be strictly increasing and in range.
    pub(crate) fn from_parts(
        shape: &[usize],
        fill: Scalar,
        idx: Vec<u64>,
        vals: HostArray,
    ) -> SparseChunk {
        debug_assert!(idx.windows(2).all(|w| w[0] < w[1]));
        debug_assert_eq!(idx.len(), vals.len());
        SparseChunk {
            shape: shape.to_vec(),
            fill,
            idx,
            vals,
        }
        .prune()
    }

    /// The dense chunk's elements that differ (bitwise) from `fill` become explicit.
    pub fn from_dense(h: &HostArray, fill: Scalar) -> SparseChunk {
        let fill = fill.cast(h.dtype());
        let (idx, vals) = dispatch_host!(h, a => {
            let f = from_scalar_like(a, fill);
            let mut idx = Vec::new();
            let mut vals = Vec::new();
            for (i, &v) in a.iter().enumerate() {
                if v.bits() != f.bits() {
                    idx.push(i as u64);
                    vals.push(v);
                }
            }
            (idx, vec1(vals))
        });
        SparseChunk {
            shape: h.shape().to_vec(),
            fill,
            idx,
            vals,
        }
    }

    /// The element dtype (the fill's).
    pub fn dtype(&self) -> DType {
        self.fill.dtype()
    }

    /// Number of explicit entries.
    pub fn nnz(&self) -> usize {
        self.idx.len()
    }

    /// The fill value.
    pub fn fill(&self) -> Scalar {
        self.fill
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the chunk has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The explicit entries' flat indices.
    pub fn indices(&self) -> &[u64] {
        &self.idx
    }

    /// The explicit entries' values (1-d).
    pub fn values(&self) -> &HostArray {
        &self.vals
    }

    /// The dense equivalent.
    pub fn to_dense(&self) -> HostArray {
        with_type!(self.dtype(), T => {
            let mut out = vec![T::from_scalar(self.fill); self.len()];
            for (&i, v) in self.idx.iter().zip(to_vec::<T>(&self.vals)) {
                out[i as usize] = v;
            }
            T::wrap(ArrayD::from_shape_vec(IxDyn(&self.shape), out).expect("numel matches"))
        })
    }

    /// The values at the sorted flat indices `at` (explicit value, else the fill).
    pub(crate) fn gather(&self, at: &[u64]) -> HostArray {
        with_type!(self.dtype(), T => {
            let vals = to_vec::<T>(&self.vals);
            let fill = T::from_scalar(self.fill);
            let mut out = Vec::with_capacity(at.len());
            let mut k = 0;
            for &i in at {
                while k < self.idx.len() && self.idx[k] < i {
                    k += 1;
                }
                out.push(if k < self.idx.len() && self.idx[k] == i { vals[k] } else { fill });
            }
            vec1(out)
        })
    }

    /// Drops explicit entries that equal the fill bit for bit.
    pub(crate) fn prune(self) -> SparseChunk {
        let SparseChunk {
            shape,
            fill,
            idx,
            vals,
        } = self;
        let (idx, vals) = with_type!(fill.dtype(), T => {
            let f = T::from_scalar(fill).bits();
            let v = to_vec::<T>(&vals);
            if v.iter().all(|x| x.bits() != f) {
                (idx, vals)
            } else {
                let (i2, v2): (Vec<u64>, Vec<T>) =
                    idx.into_iter().zip(v).filter(|(_, x)| x.bits() != f).unzip();
                (i2, vec1(v2))
            }
        });
        SparseChunk {
            shape,
            fill,
            idx,
            vals,
        }
    }

    /// Re-sorts entries given as `(new flat index, position in self.vals)` pairs into a
    /// chunk of `shape` (entries must land on distinct indices).
    pub(crate) fn permuted(&self, shape: &[usize], mut pairs: Vec<(u64, usize)>) -> SparseChunk {
        pairs.sort_unstable_by_key(|p| p.0);
        let vals = with_type!(self.dtype(), T => {
            let v = to_vec::<T>(&self.vals);
            vec1(pairs.iter().map(|&(_, k)| v[k]).collect::<Vec<T>>())
        });
        SparseChunk {
            shape: shape.to_vec(),
            fill: self.fill,
            idx: pairs.into_iter().map(|p| p.0).collect(),
            vals,
        }
    }
}

fn from_scalar_like<T: Element>(_a: &ArrayD<T>, s: Scalar) -> T {
    T::from_scalar(s)
}

/// Sorted union of sorted index lists.
pub(crate) fn union(lists: &[&[u64]]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::with_capacity(lists.iter().map(|l| l.len()).max().unwrap_or(0));
    match lists {
        [] => {}
        [a] => out.extend_from_slice(a),
        [a, b] => {
            let (mut i, mut j) = (0, 0);
            while i < a.len() || j < b.len() {
                let x = match (a.get(i), b.get(j)) {
                    (Some(&x), Some(&y)) if x == y => {
                        i += 1;
                        j += 1;
                        x
                    }
                    (Some(&x), Some(&y)) if x < y => {
                        i += 1;
                        x
                    }
                    (Some(_), Some(&y)) => {
                        j += 1;
                        y
                    }
                    (Some(&x), None) => {
                        i += 1;
                        x
                    }
                    (None, Some(&y)) => {
                        j += 1;
                        y
                    }
                    (None, None) => unreachable!("loop condition"),
                };
                out.push(x);
            }
        }
        [first, rest @ ..] => {
            let tail = union(rest);
            out = union(&[first, &tail]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_round_trip_keeps_negative_zero_and_nan_explicit() {
        let h = HostArray::F64(
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![0.0, -0.0, 1.5, 0.0, f64::NAN, 0.0])
                .unwrap(),
        );
        let s = SparseChunk::from_dense(&h, Scalar::F64(0.0));
        assert_eq!(s.indices(), &[1, 2, 4]);
        let back = s.to_dense().to_f64_vec();
        assert_eq!(back[1].to_bits(), (-0.0f64).to_bits());
        assert!(back[4].is_nan());
        assert_eq!(back[2], 1.5);
    }

    #[test]
    fn gather_prune_and_union() {
        let s =
            SparseChunk::from_parts(&[6], Scalar::I64(7), vec![1, 3, 4], vec1(vec![5i64, 7, 9]));
        // The entry equal to the fill was pruned.
        assert_eq!(s.indices(), &[1, 4]);
        assert_eq!(to_vec::<i64>(&s.gather(&[0, 1, 2, 4])), vec![7, 5, 7, 9]);
        assert_eq!(
            union(&[&[1, 4, 9], &[0, 4, 5], &[9, 10]]),
            vec![0, 1, 4, 5, 9, 10]
        );
        assert!(is_zero(Scalar::F32(0.0)) && !is_zero(Scalar::F32(-0.0)));
    }
}

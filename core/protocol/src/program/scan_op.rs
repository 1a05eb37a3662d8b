//! [`ScanOp`]: the cumulative ops (`cumsum`, `cumprod`, `maximum.accumulate`,
//! `minimum.accumulate`) a backend runs along one axis of a chunk.
//!
//! A chunked scan is three steps in `tessera-array`: each block scanned on its own (this
//! op), the blocks' last elements scanned across blocks (this op again, on a small array),
//! and each block combined with the carry of the blocks before it (an elementwise op with
//! the carry broadcast along the axis). The carry of the first block is the op's identity,
//! chosen so that combining with it changes no bit ([`ScanOp::identity`]).

use std::fmt;

use super::ops::BinaryOp;
use crate::dtype::{DType, DTypeKind, Scalar};

/// A cumulative op along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScanOp {
    /// Running sum (`cumsum`, `cumulative_sum`); integers wrap, as in NumPy.
    Sum,
    /// Running product (`cumprod`, `cumulative_prod`); integers wrap.
    Prod,
    /// Running maximum (`np.maximum.accumulate`); a NaN propagates.
    Max,
    /// Running minimum (`np.minimum.accumulate`); a NaN propagates.
    Min,
}

impl ScanOp {
    /// Every scan.
    pub const ALL: [ScanOp; 4] = [ScanOp::Sum, ScanOp::Prod, ScanOp::Max, ScanOp::Min];

    /// The op's name, as listings, errors and the plugin ABI carry it.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Max => "cummax",
            ScanOp::Min => "cummin",
        }
    }

    /// The elementwise op that combines a block with the carry of the blocks before it.
    pub fn combine(self) -> BinaryOp {
        match self {
            ScanOp::Sum => BinaryOp::Add,
            ScanOp::Prod => BinaryOp::Mul,
            ScanOp::Max => BinaryOp::Maximum,
            ScanOp::Min => BinaryOp::Minimum,
        }
    }

    /// The dtype the scan runs in and returns for an input of dtype `x` when the caller
    /// names none: NumPy's and the Array API's rule for sums and products (bool and signed
    /// integers in `int64`, unsigned in `uint64`, floats as they are); the input dtype for
    /// max and min.
    pub fn result_dtype(self, x: DType) -> DType {
        match self {
            ScanOp::Sum | ScanOp::Prod => x.sum_result(),
            ScanOp::Max | ScanOp::Min => x,
        }
    }

    /// The value whose combination with any `x` of `dtype` is `x`, bit for bit: `-0.0`
    /// for float sums (`-0.0 + -0.0` is `-0.0`, where `0.0 + -0.0` is `0.0`), `1` for
    /// products, the lowest value for max (`-inf` for floats) and the highest for min.
    pub fn identity(self, dtype: DType) -> Scalar {
        let float = dtype.kind() == DTypeKind::Float;
        let s = match self {
            ScanOp::Sum if float => Scalar::F64(-0.0),
            ScanOp::Sum => Scalar::I64(0),
            ScanOp::Prod => Scalar::I64(1),
            ScanOp::Max if float => Scalar::F64(f64::NEG_INFINITY),
            ScanOp::Min if float => Scalar::F64(f64::INFINITY),
            ScanOp::Max => return min_of(dtype),
            ScanOp::Min => return max_of(dtype),
        };
        s.cast(dtype)
    }
}

fn min_of(d: DType) -> Scalar {
    match d {
        DType::Bool => Scalar::Bool(false),
        DType::I8 => Scalar::I8(i8::MIN),
        DType::I16 => Scalar::I16(i16::MIN),
        DType::I32 => Scalar::I32(i32::MIN),
        DType::I64 => Scalar::I64(i64::MIN),
        DType::U8 => Scalar::U8(0),
        DType::U16 => Scalar::U16(0),
        DType::U32 => Scalar::U32(0),
        DType::U64 => Scalar::U64(0),
        DType::F32 => Scalar::F32(f32::NEG_INFINITY),
        DType::F64 => Scalar::F64(f64::NEG_INFINITY),
    }
}

fn max_of(d: DType) -> Scalar {
    match d {
        DType::Bool => Scalar::Bool(true),
        DType::I8 => Scalar::I8(i8::MAX),
        DType::I16 => Scalar::I16(i16::MAX),
        DType::I32 => Scalar::I32(i32::MAX),
        DType::I64 => Scalar::I64(i64::MAX),
        DType::U8 => Scalar::U8(u8::MAX),
        DType::U16 => Scalar::U16(u16::MAX),
        DType::U32 => Scalar::U32(u32::MAX),
        DType::U64 => Scalar::U64(u64::MAX),
        DType::F32 => Scalar::F32(f32::INFINITY),
        DType::F64 => Scalar::F64(f64::INFINITY),
    }
}

impl fmt::Display for ScanOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_what_numpy_would_start_from() {
        assert_eq!(ScanOp::Sum.identity(DType::F32), Scalar::F32(-0.0));
        assert!(
            matches!(ScanOp::Sum.identity(DType::F64), Scalar::F64(z) if z == 0.0 && z.is_sign_negative())
        );
        assert_eq!(ScanOp::Prod.identity(DType::U8), Scalar::U8(1));
        assert_eq!(ScanOp::Max.identity(DType::I16), Scalar::I16(i16::MIN));
        assert_eq!(ScanOp::Min.identity(DType::U32), Scalar::U32(u32::MAX));
        assert_eq!(ScanOp::Min.identity(DType::F64), Scalar::F64(f64::INFINITY));
        assert_eq!(ScanOp::Sum.result_dtype(DType::Bool), DType::I64);
        assert_eq!(ScanOp::Prod.result_dtype(DType::U16), DType::U64);
        assert_eq!(ScanOp::Max.result_dtype(DType::U16), DType::U16);
    }
}

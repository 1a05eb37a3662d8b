//! Conversions between tessera's types and their `#[repr(C)]` forms in the plugin ABI.
//!
//! Both sides of the boundary use these: the host (`tessera-plugin-host`'s `ForeignBackend`) to encode calls
//! and decode results, the plugin SDK (`tessera-plugin`) to decode calls and encode
//! results. Decoding never trusts its input: unknown codes, over-long shapes and invalid
//! UTF-8 become errors, not panics.

use std::ffi::{c_char, CStr};

use tessera_plugin_abi as abi;

use tessera_core::backend::AxisSlice;
use tessera_core::dtype::{DType, Scalar};
use tessera_core::error::{Error, Result};
use tessera_core::program::{AxisMap, BinaryOp, IndexMap, ReduceOp, UnaryOp};
use tessera_core::random::{Distribution, RandomSpec};

/// The stable ABI code of a dtype.
pub fn dtype_code(d: DType) -> u32 {
    use abi::dtype::*;
    match d {
        DType::Bool => BOOL,
        DType::I8 => I8,
        DType::I16 => I16,
        DType::I32 => I32,
        DType::I64 => I64,
        DType::U8 => U8,
        DType::U16 => U16,
        DType::U32 => U32,
        DType::U64 => U64,
        DType::F32 => F32,
        DType::F64 => F64,
    }
}

/// The dtype of an ABI code, if it is one.
pub fn dtype_from_code(code: u32) -> Option<DType> {
    DType::ALL.into_iter().find(|&d| dtype_code(d) == code)
}

/// Decodes a dtype code or says which codes are valid.
pub fn decode_dtype(code: u32, what: &str) -> Result<DType> {
    dtype_from_code(code).ok_or_else(|| {
        Error::invalid(
            what,
            format!("unknown dtype code {code}; valid codes are 1 (bool) to 11 (float64)"),
        )
    })
}

/// Encodes a scalar.
pub fn scalar_to_raw(s: Scalar) -> abi::RawScalar {
    let bits = match s {
        Scalar::Bool(v) => v as u64,
        Scalar::I8(v) => v as i64 as u64,
        Scalar::I16(v) => v as i64 as u64,
        Scalar::I32(v) => v as i64 as u64,
        Scalar::I64(v) => v as u64,
        Scalar::U8(v) => v as u64,
        Scalar::U16(v) => v as u64,
        Scalar::U32(v) => v as u64,
        Scalar::U64(v) => v,
        Scalar::F32(v) => v.to_bits() as u64,
        Scalar::F64(v) => v.to_bits(),
    };
    abi::RawScalar {
        dtype: dtype_code(s.dtype()),
        bits,
    }
}

/// Decodes a scalar.
pub fn scalar_from_raw(r: abi::RawScalar) -> Result<Scalar> {
    let b = r.bits;
    Ok(match decode_dtype(r.dtype, "scalar")? {
        DType::Bool => Scalar::Bool(b != 0),
        DType::I8 => Scalar::I8(b as i8),
        DType::I16 => Scalar::I16(b as i16),
        DType::I32 => Scalar::I32(b as i32),
        DType::I64 => Scalar::I64(b as i64),
        DType::U8 => Scalar::U8(b as u8),
        DType::U16 => Scalar::U16(b as u16),
        DType::U32 => Scalar::U32(b as u32),
        DType::U64 => Scalar::U64(b),
        DType::F32 => Scalar::F32(f32::from_bits(b as u32)),
        DType::F64 => Scalar::F64(f64::from_bits(b)),
    })
}

/// Encodes a random spec.
pub fn random_to_raw(s: &RandomSpec) -> abi::RawRandomSpec {
    let (dist, a, b, ia, ib) = match s.dist {
        Distribution::Uniform { low, high } => (abi::DIST_UNIFORM, low, high, 0, 0),
        Distribution::Normal { mean, std } => (abi::DIST_NORMAL, mean, std, 0, 0),
        Distribution::RandInt { low, high } => (abi::DIST_RANDINT, 0.0, 0.0, low, high),
    };
    abi::RawRandomSpec {
        seed: s.seed,
        stream: s.stream,
        dist,
        dtype: dtype_code(s.dtype),
        a,
        b,
        ia,
        ib,
    }
}

/// Decodes a random spec.
pub fn random_from_raw(r: &abi::RawRandomSpec) -> Result<RandomSpec> {
    let dist = match r.dist {
        abi::DIST_UNIFORM => Distribution::Uniform {
            low: r.a,
            high: r.b,
        },
        abi::DIST_NORMAL => Distribution::Normal {
            mean: r.a,
            std: r.b,
        },
        abi::DIST_RANDINT => Distribution::RandInt {
            low: r.ia,
            high: r.ib,
        },
        other => {
            return Err(Error::invalid(
                "random",
                format!("unknown distribution code {other}; expected 1, 2 or 3"),
            ))
        }
    };
    Ok(RandomSpec {
        seed: r.seed,
        stream: r.stream,
        dist,
        dtype: decode_dtype(r.dtype, "random")?,
    })
}

/// Shape as ABI integers.
pub fn shape_to_raw(shape: &[usize]) -> Vec<u64> {
    shape.iter().map(|&d| d as u64).collect()
}

/// Owned storage behind a [`abi::RawIndexMap`] (the raw struct borrows from it).
#[derive(Debug)]
pub struct RawIndexMapBuf {
    src_shape: Vec<u64>,
    axes: Vec<abi::RawAxisMap>,
}

impl RawIndexMapBuf {
    /// Encodes `map`.
    pub fn new(map: &IndexMap) -> RawIndexMapBuf {
        RawIndexMapBuf {
            src_shape: shape_to_raw(&map.src_shape),
            axes: map
                .axes
                .iter()
                .map(|a| abi::RawAxisMap {
                    start: a.start,
                    step: a.step,
                    out_axis: a.out_axis.map_or(-1, |x| x as i64),
                })
                .collect(),
        }
    }

    /// The raw view, valid while `self` lives.
    pub fn raw(&self) -> abi::RawIndexMap {
        abi::RawIndexMap {
            ndim: self.src_shape.len() as u32,
            src_shape: self.src_shape.as_ptr(),
            axes: self.axes.as_ptr(),
        }
    }
}

/// Reads `n` values from a pointer that may be null when `n == 0`.
///
/// # Safety
/// When `n > 0`, `ptr` must point to `n` initialised values that stay valid for `'a`.
pub unsafe fn raw_slice<'a, T>(ptr: *const T, n: usize) -> &'a [T] {
    if n == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: non-null and `n` valid elements, guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(ptr, n) }
    }
}

/// Decodes a shape argument.
///
/// # Safety
/// As for [`raw_slice`].
pub unsafe fn shape_from_raw(ptr: *const u64, ndim: u32, what: &str) -> Result<Vec<usize>> {
    if ndim as usize > abi::MAX_NDIM {
        return Err(Error::invalid(
            what,
            format!(
                "{ndim} dimensions; at most {} cross the plugin ABI",
                abi::MAX_NDIM
            ),
        ));
    }
    // SAFETY: forwarded contract.
    let dims = unsafe { raw_slice(ptr, ndim as usize) };
    dims.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| Error::invalid(what, format!("extent {d} does not fit in usize")))
        })
        .collect()
}

/// Decodes an index map.
///
/// # Safety
/// `map` must point to a valid [`abi::RawIndexMap`] whose arrays hold `ndim` entries.
pub unsafe fn index_map_from_raw(map: *const abi::RawIndexMap) -> Result<IndexMap> {
    if map.is_null() {
        return Err(Error::invalid("index map", "null pointer"));
    }
    // SAFETY: non-null and valid by the caller's contract.
    let m = unsafe { &*map };
    // SAFETY: `src_shape` holds `ndim` entries by the caller's contract.
    let src_shape = unsafe { shape_from_raw(m.src_shape, m.ndim, "index map")? };
    // SAFETY: `axes` holds `ndim` entries by the caller's contract.
    let axes = unsafe { raw_slice(m.axes, m.ndim as usize) }
        .iter()
        .map(|a| AxisMap {
            start: a.start,
            step: a.step,
            out_axis: usize::try_from(a.out_axis).ok(),
        })
        .collect();
    Ok(IndexMap { src_shape, axes })
}

/// Encodes slices.
pub fn slices_to_raw(slices: &[AxisSlice]) -> Vec<abi::RawAxisSlice> {
    slices
        .iter()
        .map(|s| abi::RawAxisSlice {
            start: s.start as u64,
            step: s.step as i64,
            len: s.len as u64,
        })
        .collect()
}

/// Decodes slices.
///
/// # Safety
/// As for [`raw_slice`].
pub unsafe fn slices_from_raw(ptr: *const abi::RawAxisSlice, n: u32) -> Result<Vec<AxisSlice>> {
    // SAFETY: forwarded contract.
    let raw = unsafe { raw_slice(ptr, n as usize) };
    raw.iter()
        .map(|s| {
            let bad = || Error::invalid("slice", format!("slice {s:?} does not fit this machine"));
            Ok(AxisSlice {
                start: usize::try_from(s.start).map_err(|_| bad())?,
                step: isize::try_from(s.step).map_err(|_| bad())?,
                len: usize::try_from(s.len).map_err(|_| bad())?,
            })
        })
        .collect()
}

/// Reads a NUL-terminated UTF-8 string.
///
/// # Safety
/// `ptr` must be null or point to a NUL-terminated string valid for `'a`.
pub unsafe fn str_from_raw<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::invalid(what, "null string"));
    }
    // SAFETY: non-null, NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| Error::invalid(what, "string is not UTF-8"))
}

/// A unary op by its protocol name.
pub fn unary_from_name(name: &str) -> Result<UnaryOp> {
    UnaryOp::ALL
        .into_iter()
        .find(|o| o.name() == name)
        .ok_or_else(|| Error::invalid("unary", format!("unknown unary op '{name}'")))
}

/// A binary op by its protocol name.
pub fn binary_from_name(name: &str) -> Result<BinaryOp> {
    BinaryOp::ALL
        .into_iter()
        .find(|o| o.name() == name)
        .ok_or_else(|| Error::invalid("binary", format!("unknown binary op '{name}'")))
}

/// A reduction by its protocol name.
pub fn reduce_from_name(name: &str) -> Result<ReduceOp> {
    ReduceOp::ALL
        .into_iter()
        .find(|o| o.name() == name)
        .ok_or_else(|| Error::invalid("reduce", format!("unknown reduction '{name}'")))
}

/// The ABI error kind of an error, with its op and dtype where it has them.
pub fn error_parts(e: &Error) -> (u32, Option<&str>, Option<DType>) {
    use abi::error_kind::*;
    match e {
        Error::Shape { op, .. } => (SHAPE, Some(op), None),
        Error::DType { op, dtype, .. } => (DTYPE, Some(op), Some(*dtype)),
        Error::Unsupported { op, dtype, .. } => (UNSUPPORTED, Some(op), Some(*dtype)),
        Error::FrameUnsupported { op, .. } => (UNSUPPORTED, Some(op), None),
        Error::Invalid { op, .. } => (INVALID, Some(op), None),
        Error::Internal(_) => (INTERNAL, None, None),
        _ => (OTHER, None, None),
    }
}

/// The detail text of an error (without the op prefix where the variant has one).
pub fn error_detail(e: &Error) -> String {
    match e {
        Error::Shape { detail, .. } | Error::DType { detail, .. } => detail.clone(),
        Error::Invalid { detail, .. } => detail.clone(),
        Error::Internal(m) => m.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_codes_round_trip_and_are_stable() {
        for d in DType::ALL {
            assert_eq!(dtype_from_code(dtype_code(d)), Some(d));
        }
        assert_eq!(dtype_code(DType::Bool), 1);
        assert_eq!(dtype_code(DType::F64), 11);
        assert!(dtype_from_code(0).is_none());
        assert!(decode_dtype(99, "x")
            .unwrap_err()
            .to_string()
            .contains("99"));
    }

    #[test]
    fn scalars_round_trip_bit_exactly() {
        let values = [
            Scalar::Bool(true),
            Scalar::I8(-5),
            Scalar::I16(i16::MIN),
            Scalar::I32(-1),
            Scalar::I64(i64::MIN),
            Scalar::U8(255),
            Scalar::U16(65535),
            Scalar::U32(u32::MAX),
            Scalar::U64(u64::MAX),
            Scalar::F32(-0.0),
            Scalar::F64(f64::NAN),
        ];
        for v in values {
            let back = scalar_from_raw(scalar_to_raw(v)).unwrap();
            assert_eq!(back.dtype(), v.dtype());
            assert_eq!(scalar_to_raw(back).bits, scalar_to_raw(v).bits, "{v:?}");
        }
    }

    #[test]
    fn random_specs_and_maps_round_trip() {
        for dist in [
            Distribution::Uniform {
                low: -1.0,
                high: 2.0,
            },
            Distribution::Normal {
                mean: 3.0,
                std: 0.5,
            },
            Distribution::RandInt { low: -7, high: 9 },
        ] {
            let s = RandomSpec {
                seed: u64::MAX - 3,
                stream: 17,
                dist,
                dtype: if matches!(dist, Distribution::RandInt { .. }) {
                    DType::I32
                } else {
                    DType::F32
                },
            };
            assert_eq!(random_from_raw(&random_to_raw(&s)).unwrap(), s);
        }
        let map = IndexMap {
            src_shape: vec![7, 5, 3],
            axes: vec![
                AxisMap {
                    start: 6,
                    step: -2,
                    out_axis: Some(1),
                },
                AxisMap {
                    start: 2,
                    step: 0,
                    out_axis: None,
                },
                AxisMap {
                    start: 0,
                    step: 1,
                    out_axis: Some(0),
                },
            ],
        };
        let buf = RawIndexMapBuf::new(&map);
        let raw = buf.raw();
        // SAFETY: `raw` borrows from `buf`, alive here.
        let back = unsafe { index_map_from_raw(&raw) }.unwrap();
        assert_eq!(back, map);
    }

    #[test]
    fn bad_raw_input_is_an_error_not_a_panic() {
        let too_many = [1u64; abi::MAX_NDIM + 1];
        // SAFETY: the array holds MAX_NDIM + 1 entries.
        let e = unsafe { shape_from_raw(too_many.as_ptr(), too_many.len() as u32, "full") };
        assert!(e.unwrap_err().to_string().contains("at most 32"));
        // SAFETY: a null pointer is accepted and reported.
        assert!(unsafe { index_map_from_raw(std::ptr::null()) }.is_err());
        assert!(unary_from_name("frobnicate").is_err());
        assert_eq!(binary_from_name("add").unwrap(), BinaryOp::Add);
        assert_eq!(reduce_from_name("argmax").unwrap(), ReduceOp::ArgMax);
        let bad = abi::RawRandomSpec {
            seed: 0,
            stream: 0,
            dist: 9,
            dtype: 11,
            a: 0.0,
            b: 1.0,
            ia: 0,
            ib: 0,
        };
        assert!(random_from_raw(&bad).is_err());
    }
}

//! n-d chunks as Arrow C Data Interface arrays, and back, validated.
//!
//! A chunk crosses the plugin boundary as one flat, null-free Arrow array in C order
//! (primitive types; `bool` as Arrow's bit-packed boolean) with its shape in the field
//! metadata under [`SHAPE_METADATA_KEY`]. Export shares nothing with the caller: the
//! receiver frees through the release callback, which runs in the exporting library.
//!
//! Import trusts nothing: before any buffer is read it checks that the struct is not
//! released, has no children or dictionary, has exactly the buffers of its type, a
//! non-null and aligned data buffer, no nulls, and that its format, length and shape
//! metadata agree with the chunk it claims to be; then arrow's full validation runs.
//! What the C Data Interface cannot express — the true size of a buffer — is the one
//! thing a receiver must take on faith, as with any C ABI.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_schema::Field;
use ndarray::{ArrayD, IxDyn};
use tessera_plugin_abi::{FFI_ArrowArray, FFI_ArrowSchema, SHAPE_METADATA_KEY};

use tessera_core::dtype::DType;
use tessera_core::error::{Error, Result};
use tessera_core::host::arrow::{arrow_type, format_of, host_array_data};
use tessera_core::host::HostArray;

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(","))
}

/// Exports a host array as a flat Arrow array plus a schema carrying its shape.
pub fn export_host(h: HostArray) -> Result<(FFI_ArrowArray, FFI_ArrowSchema)> {
    let dtype = h.dtype();
    let shape = h.shape().to_vec();
    let data = host_array_data(h);
    let field = Field::new("chunk", arrow_type(dtype), false).with_metadata(HashMap::from([(
        SHAPE_METADATA_KEY.to_string(),
        shape_text(&shape),
    )]));
    let schema = FFI_ArrowSchema::try_from(&field)
        .map_err(|e| Error::Internal(format!("exporting an Arrow schema: {e}")))?;
    Ok((FFI_ArrowArray::new(&data), schema))
}

/// Why an imported array was refused.
fn malformed(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::invalid(what, format!("malformed Arrow C data, refused: {detail}"))
}

/// Checks the raw struct before any buffer is touched.
fn precheck(
    array: &FFI_ArrowArray,
    schema: &FFI_ArrowSchema,
    dtype: DType,
    shape: &[usize],
    what: &str,
) -> Result<()> {
    if array.is_released() {
        return Err(malformed(what, "the array is already released"));
    }
    let format = schema.format();
    if format != format_of(dtype) {
        return Err(malformed(
            what,
            format!(
                "format '{format}' but the chunk is {dtype} (format '{}')",
                format_of(dtype)
            ),
        ));
    }
    let n: usize = shape.iter().product();
    if array.len() != n {
        return Err(malformed(
            what,
            format!(
                "length {} but the chunk of shape {shape:?} has {n} elements",
                array.len()
            ),
        ));
    }
    if array.offset() != 0 {
        return Err(malformed(
            what,
            format!("offset {} (expected 0)", array.offset()),
        ));
    }
    if array.null_count_opt() != Some(0) {
        return Err(malformed(
            what,
            format!(
                "null count {:?}; tessera chunks have no nulls (use NaN)",
                array.null_count_opt()
            ),
        ));
    }
    if array.num_children() != 0 || array.dictionary().is_some() {
        return Err(malformed(
            what,
            "children or a dictionary on a primitive array",
        ));
    }
    if array.num_buffers() != 2 {
        return Err(malformed(
            what,
            format!(
                "{} buffers (expected 2: validity, data)",
                array.num_buffers()
            ),
        ));
    }
    if n > 0 {
        let data = array.buffer(1);
        if data.is_null() {
            return Err(malformed(what, "null data buffer"));
        }
        let align = if dtype == DType::Bool {
            1
        } else {
            dtype.size()
        };
        if !(data as usize).is_multiple_of(align) {
            return Err(malformed(
                what,
                format!("data buffer at {data:p} is not aligned to {align} bytes"),
            ));
        }
    }
    match schema.metadata() {
        Ok(meta) => match meta.get(SHAPE_METADATA_KEY) {
            Some(s) if *s == shape_text(shape) => Ok(()),
            Some(s) => Err(malformed(
                what,
                format!(
                    "shape metadata {s} but the chunk has shape {}",
                    shape_text(shape)
                ),
            )),
            None => Err(malformed(
                what,
                format!("no '{SHAPE_METADATA_KEY}' metadata"),
            )),
        },
        Err(e) => Err(malformed(what, format!("unreadable metadata: {e}"))),
    }
}

fn to_nd<T: Clone>(flat: Vec<T>, shape: &[usize], what: &str) -> Result<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(shape), flat).map_err(|e| malformed(what, e))
}

/// Imports an Arrow array that claims to be a chunk of `dtype` and `shape`, taking
/// ownership of it (its release callback runs when this returns), into a host array.
pub fn import_host(
    array: FFI_ArrowArray,
    schema: &FFI_ArrowSchema,
    dtype: DType,
    shape: &[usize],
    what: &str,
) -> Result<HostArray> {
    precheck(&array, schema, dtype, shape, what)?;
    // SAFETY: the struct passed every structural check above (not released, two
    // buffers, non-null aligned data, no children); its buffers' sizes are the one thing
    // the C Data Interface cannot state and the exporter vouches for.
    #[allow(unsafe_code)]
    let data =
        unsafe { arrow_array::ffi::from_ffi(array, schema) }.map_err(|e| malformed(what, e))?;
    data.validate_full().map_err(|e| malformed(what, e))?;
    if *data.data_type() != arrow_type(dtype) {
        return Err(malformed(
            what,
            format!("type {} but the chunk is {dtype}", data.data_type()),
        ));
    }
    // Arrow's accessors assert invariants that validation has established; a panic here
    // would still be a malformed array, never a crash of the host.
    let convert = || -> Result<HostArray> {
        let arr = arrow_array::make_array(data);
        macro_rules! prim {
            ($t:ty, $v:ident) => {
                HostArray::$v(to_nd(
                    arr.as_primitive::<$t>().values().to_vec(),
                    shape,
                    what,
                )?)
            };
        }
        Ok(match dtype {
            DType::Bool => HostArray::Bool(to_nd(
                arr.as_boolean().values().iter().collect(),
                shape,
                what,
            )?),
            DType::I8 => prim!(Int8Type, I8),
            DType::I16 => prim!(Int16Type, I16),
            DType::I32 => prim!(Int32Type, I32),
            DType::I64 => prim!(Int64Type, I64),
            DType::U8 => prim!(UInt8Type, U8),
            DType::U16 => prim!(UInt16Type, U16),
            DType::U32 => prim!(UInt32Type, U32),
            DType::U64 => prim!(UInt64Type, U64),
            DType::F32 => prim!(Float32Type, F32),
            DType::F64 => prim!(Float64Type, F64),
        })
    };
    catch_unwind(AssertUnwindSafe(convert))
        .unwrap_or_else(|_| Err(malformed(what, "arrow rejected the array while reading it")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array as _, PrimitiveArray};
    use arrow_schema::DataType;
    use tessera_core::dtype::Scalar;

    fn round_trip(h: HostArray) -> Result<HostArray> {
        let dtype = h.dtype();
        let shape = h.shape().to_vec();
        let (a, s) = export_host(h)?;
        import_host(a, &s, dtype, &shape, "test")
    }

    #[test]
    fn every_dtype_round_trips_with_its_shape() {
        for d in DType::ALL {
            let h = HostArray::full(&[2, 3, 1], Scalar::I64(1), d);
            assert_eq!(round_trip(h.clone()).unwrap(), h, "{d}");
            let empty = HostArray::full(&[0, 4], Scalar::I64(0), d);
            assert_eq!(round_trip(empty.clone()).unwrap(), empty, "{d}");
        }
        let v = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![true, false, false, true]).unwrap();
        let b = HostArray::Bool(v);
        assert_eq!(round_trip(b.clone()).unwrap(), b);
        // A transposed (non-standard layout) array is exported in logical C order.
        let m = ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(f64::from).collect())
            .unwrap()
            .reversed_axes();
        let t = HostArray::F64(m);
        assert_eq!(round_trip(t.clone()).unwrap(), t);
    }

    #[test]
    fn lies_about_dtype_or_shape_are_refused() {
        let h = HostArray::full(&[2, 3], Scalar::F64(1.5), DType::F64);
        let (a, s) = export_host(h.clone()).unwrap();
        let e = import_host(a, &s, DType::F32, &[2, 3], "to_host").unwrap_err();
        assert!(e.to_string().contains("format 'g'"), "{e}");
        let (a, s) = export_host(h.clone()).unwrap();
        let e = import_host(a, &s, DType::F64, &[3, 3], "to_host").unwrap_err();
        assert!(e.to_string().contains("length 6"), "{e}");
        let (a, s) = export_host(h).unwrap();
        let e = import_host(a, &s, DType::F64, &[3, 2], "to_host").unwrap_err();
        assert!(e.to_string().contains("shape metadata [2,3]"), "{e}");
    }

    #[test]
    fn nulls_and_released_arrays_are_refused() {
        let data = PrimitiveArray::<Float64Type>::from(vec![Some(1.0), None]).into_data();
        let field = Field::new("chunk", DataType::Float64, true).with_metadata(HashMap::from([(
            SHAPE_METADATA_KEY.to_string(),
            "[2]".to_string(),
        )]));
        let s = FFI_ArrowSchema::try_from(&field).unwrap();
        let e = import_host(FFI_ArrowArray::new(&data), &s, DType::F64, &[2], "x").unwrap_err();
        assert!(e.to_string().contains("no nulls"), "{e}");
        let e = import_host(FFI_ArrowArray::empty(), &s, DType::F64, &[2], "x").unwrap_err();
        assert!(e.to_string().contains("released"), "{e}");
    }
}

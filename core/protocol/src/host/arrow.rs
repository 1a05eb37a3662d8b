//! Host arrays as Arrow data: the Arrow type of each dtype and a host array's elements as
//! one flat Arrow array. Dataframe columns built from arrays (`DataFrame::from_arrays`),
//! sparse chunks' host form and the plugin boundary (`tessera-plugin-ffi`) all use it.

use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array as _, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use arrow_schema::DataType;
use ndarray::ArrayD;

use super::HostArray;
use crate::dtype::DType;

/// The Arrow type of a dtype.
pub fn arrow_type(d: DType) -> DataType {
    match d {
        DType::Bool => DataType::Boolean,
        DType::I8 => DataType::Int8,
        DType::I16 => DataType::Int16,
        DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::U8 => DataType::UInt8,
        DType::U16 => DataType::UInt16,
        DType::U32 => DataType::UInt32,
        DType::U64 => DataType::UInt64,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
    }
}

/// The C Data Interface format string of a dtype.
pub fn format_of(d: DType) -> &'static str {
    match d {
        DType::Bool => "b",
        DType::I8 => "c",
        DType::I16 => "s",
        DType::I32 => "i",
        DType::I64 => "l",
        DType::U8 => "C",
        DType::U16 => "S",
        DType::U32 => "I",
        DType::U64 => "L",
        DType::F32 => "f",
        DType::F64 => "g",
    }
}

/// The dtype of a C Data Interface format string, if tessera has one.
pub fn dtype_from_format(format: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|&d| format_of(d) == format)
}

fn primitive<T: ArrowPrimitiveType>(a: ArrayD<T::Native>) -> arrow_data::ArrayData {
    let flat: Vec<T::Native> = if a.is_standard_layout() {
        a.into_raw_vec_and_offset().0
    } else {
        a.iter().copied().collect()
    };
    // Zero-copy: the Vec becomes the Arrow buffer, freed by this side's release callback.
    PrimitiveArray::<T>::new(ScalarBuffer::from(flat), None).into_data()
}

/// A host array's elements, flattened in C order, as Arrow data without nulls (zero-copy
/// for contiguous numeric arrays). Dataframe columns built from arrays use it too.
pub fn host_array_data(h: HostArray) -> arrow_data::ArrayData {
    match h {
        HostArray::Bool(a) => BooleanArray::from_iter(a.iter().map(|&v| Some(v))).into_data(),
        HostArray::I8(a) => primitive::<Int8Type>(a),
        HostArray::I16(a) => primitive::<Int16Type>(a),
        HostArray::I32(a) => primitive::<Int32Type>(a),
        HostArray::I64(a) => primitive::<Int64Type>(a),
        HostArray::U8(a) => primitive::<UInt8Type>(a),
        HostArray::U16(a) => primitive::<UInt16Type>(a),
        HostArray::U32(a) => primitive::<UInt32Type>(a),
        HostArray::U64(a) => primitive::<UInt64Type>(a),
        HostArray::F32(a) => primitive::<Float32Type>(a),
        HostArray::F64(a) => primitive::<Float64Type>(a),
    }
}

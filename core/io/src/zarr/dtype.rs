//! Zarr data types as tessera dtypes.

use tessera_core::dtype::DType;
use zarrs::array::data_type::{
    BoolDataType, Float32DataType, Float64DataType, Int16DataType, Int32DataType, Int64DataType,
    Int8DataType, UInt16DataType, UInt32DataType, UInt64DataType, UInt8DataType,
};
use zarrs::array::DataType;

/// The tessera dtype of a Zarr data type, or `None` for one tessera does not hold.
pub(crate) fn to_dtype(dt: &DataType) -> Option<DType> {
    Some(if dt.is::<BoolDataType>() {
        DType::Bool
    } else if dt.is::<Int8DataType>() {
        DType::I8
    } else if dt.is::<Int16DataType>() {
        DType::I16
    } else if dt.is::<Int32DataType>() {
        DType::I32
    } else if dt.is::<Int64DataType>() {
        DType::I64
    } else if dt.is::<UInt8DataType>() {
        DType::U8
    } else if dt.is::<UInt16DataType>() {
        DType::U16
    } else if dt.is::<UInt32DataType>() {
        DType::U32
    } else if dt.is::<UInt64DataType>() {
        DType::U64
    } else if dt.is::<Float32DataType>() {
        DType::F32
    } else if dt.is::<Float64DataType>() {
        DType::F64
    } else {
        return None;
    })
}

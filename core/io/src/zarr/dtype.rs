//! Zarr data types as tessera dtypes.

use tessera_core::dtype::DType;
use zarrs::array::DataType;
use zarrs::plugin::{ExtensionName, ZarrVersion};

/// The tessera dtype of a Zarr data type (by its v3 name, which v2 types map to), or
/// `None` for one tessera does not hold.
pub(crate) fn to_dtype(dt: &DataType) -> Option<DType> {
    DType::parse(&dt.name(ZarrVersion::V3)?)
}

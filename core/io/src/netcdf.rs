//! NetCDF variables as lazy arrays (feature `netcdf`, on the system's libnetcdf): classic
//! NetCDF-3 files and NetCDF-4 files, the format of climate model output.
//!
//! [`from_netcdf`] reads the variable's dimensions, type, chunking and CF attributes when
//! called; every block is then a read of its region by its own task. By default the blocks
//! are the stored chunks (NetCDF-4), or blocks of `chunk-size` bytes (classic files and
//! contiguous variables). Values are decoded as xarray's `decode_cf` and netCDF4-python
//! decode them, so that the same file gives the same numbers in every tool:
//!
//! - a packed variable (`scale_factor` and/or `add_offset`) is unpacked to the type of
//!   those attributes (`float32` or `float64`): `stored × scale_factor + add_offset`;
//! - in a floating-point result, stored values equal to `_FillValue` or `missing_value`
//!   are NaN;
//! - an integer variable without packing keeps its values as stored, fill values included
//!   (an integer has no NaN; compare with the `_FillValue` attribute yourself).
//!
//! [`crate::hdf5::from_hdf5`] reads a NetCDF-4 variable's stored values undecoded.
//!
//! The file's identity is taken when it is opened and checked before every read (a file
//! replaced under a running plan is an [`Error::FileChanged`]). libnetcdf is not
//! thread-safe: reads of one process are serialized by the lock the `netcdf` crate holds
//! around the library.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::netcdf::types::{FloatType, IntType, NcVariableType};
use ::netcdf::AttributeValue;
use ndarray::ArrayD;
use tessera_array::{Array, BlockSource};
use tessera_core::chunks::ChunkSpec;
use tessera_core::dtype::DType;
use tessera_core::host::{HostArray, HostElement};

use crate::error::{Error, Result};
use crate::identity::FileIdentity;
use crate::layout::located as storage;

/// Opens the variable `variable` of the NetCDF file `path` as a lazy array on `backend`
/// (`None`: config `array.backend`), in blocks of `chunks` (`None`: the stored chunks, or
/// blocks of `chunk-size` bytes), decoded as the [module docs](self) say.
///
/// # Errors
/// The file cannot be opened or is not NetCDF; no such variable at the top level (the
/// message lists the file's variables); a type tessera does not hold (strings, `char`,
/// compounds); packing attributes that are not numbers; a chunking that does not fit.
///
/// ```no_run
/// # fn main() -> tessera_core::Result<()> {
/// let tas = tessera_io::netcdf::from_netcdf("tas_day_2015.nc", "tas", None, None)?;
/// let climatology = tas.mean(Some(&[0]), false)?;
/// # Ok(())
/// # }
/// ```
pub fn from_netcdf(
    path: impl AsRef<Path>,
    variable: &str,
    chunks: Option<ChunkSpec>,
    backend: Option<&str>,
) -> Result<Array> {
    let source = NetcdfSource::open(path.as_ref(), variable, chunks)?;
    let (dtype, blocks) = (source.dtype, source.blocks.clone());
    Array::from_source(Arc::new(source), dtype, blocks, backend)
}

/// How stored values become the array's.
#[derive(Debug, Clone, PartialEq)]
enum Decode {
    /// As stored.
    Raw,
    /// Read as floats; the missing values become NaN; then `× scale + offset`.
    Float {
        missing: Vec<f64>,
        scale: f64,
        offset: f64,
    },
}

/// An opened variable.
struct NetcdfSource {
    path: PathBuf,
    name: String,
    file: ::netcdf::File,
    dtype: DType,
    decode: Decode,
    blocks: tessera_core::chunks::Chunks,
    note: Option<String>,
    identity: FileIdentity,
}

/// The stored type as a tessera dtype, if tessera holds it.
fn stored_dtype(t: &NcVariableType) -> Option<DType> {
    Some(match t {
        NcVariableType::Int(IntType::I8) => DType::I8,
        NcVariableType::Int(IntType::I16) => DType::I16,
        NcVariableType::Int(IntType::I32) => DType::I32,
        NcVariableType::Int(IntType::I64) => DType::I64,
        NcVariableType::Int(IntType::U8) => DType::U8,
        NcVariableType::Int(IntType::U16) => DType::U16,
        NcVariableType::Int(IntType::U32) => DType::U32,
        NcVariableType::Int(IntType::U64) => DType::U64,
        NcVariableType::Float(FloatType::F32) => DType::F32,
        NcVariableType::Float(FloatType::F64) => DType::F64,
        _ => return None,
    })
}

/// A numeric attribute's values as `f64`, with whether it is `float32`.
fn numbers(v: &AttributeValue) -> Option<(Vec<f64>, bool)> {
    Some(match v {
        AttributeValue::Uchar(x) => (vec![f64::from(*x)], false),
        AttributeValue::Uchars(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Schar(x) => (vec![f64::from(*x)], false),
        AttributeValue::Schars(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Ushort(x) => (vec![f64::from(*x)], false),
        AttributeValue::Ushorts(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Short(x) => (vec![f64::from(*x)], false),
        AttributeValue::Shorts(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Uint(x) => (vec![f64::from(*x)], false),
        AttributeValue::Uints(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Int(x) => (vec![f64::from(*x)], false),
        AttributeValue::Ints(x) => (x.iter().map(|&v| f64::from(v)).collect(), false),
        AttributeValue::Ulonglong(x) => (vec![*x as f64], false),
        AttributeValue::Ulonglongs(x) => (x.iter().map(|&v| v as f64).collect(), false),
        AttributeValue::Longlong(x) => (vec![*x as f64], false),
        AttributeValue::Longlongs(x) => (x.iter().map(|&v| v as f64).collect(), false),
        AttributeValue::Float(x) => (vec![f64::from(*x)], true),
        AttributeValue::Floats(x) => (x.iter().map(|&v| f64::from(v)).collect(), true),
        AttributeValue::Double(x) => (vec![*x], false),
        AttributeValue::Doubles(x) => (x.clone(), false),
        AttributeValue::Str(_) | AttributeValue::Strs(_) => return None,
    })
}

impl NetcdfSource {
    fn open(path: &Path, name: &str, chunks: Option<ChunkSpec>) -> Result<NetcdfSource> {
        let identity = FileIdentity::read(path)?;
        let file = ::netcdf::open(path)
            .map_err(|e| storage(path, name, format!("cannot open as a NetCDF file: {e}")))?;
        let (dtype, decode, shape, stored) = {
            let var = file.variable(name).ok_or_else(|| {
                let names: Vec<String> = file.variables().map(|v| v.name()).collect();
                storage(
                    path,
                    name,
                    format!(
                        "no such variable at the top level; the file holds: {} (a variable in a group of a NetCDF-4 file opens with from_hdf5 and its path)",
                        names.join(", ")
                    ),
                )
            })?;
            let stored = stored_dtype(&var.vartype()).ok_or_else(|| {
                storage(
                    path,
                    name,
                    format!("its type {:?} is not one tessera holds (int8..int64, uint8..uint64, float32, float64)", var.vartype()),
                )
            })?;
            let attr = |key: &str| -> Result<Option<(Vec<f64>, bool)>> {
                match var.attribute_value(key) {
                    None => Ok(None),
                    Some(v) => {
                        let v =
                            v.map_err(|e| storage(path, name, format!("attribute {key}: {e}")))?;
                        numbers(&v).map(Some).ok_or_else(|| {
                            storage(
                                path,
                                name,
                                format!("attribute {key} is {v:?}, not a number"),
                            )
                        })
                    }
                }
            };
            let scale = attr("scale_factor")?;
            let offset = attr("add_offset")?;
            let mut missing = Vec::new();
            for key in ["_FillValue", "missing_value"] {
                if let Some((v, _)) = attr(key)? {
                    missing.extend(v);
                }
            }
            let packed = scale.is_some() || offset.is_some();
            let (dtype, decode) = if packed {
                // CF: the unpacked type is the packing attributes' type.
                let single = [&scale, &offset]
                    .iter()
                    .all(|a| a.as_ref().is_none_or(|(_, f32)| *f32));
                let first = |a: &Option<(Vec<f64>, bool)>, default: f64| {
                    a.as_ref()
                        .and_then(|(v, _)| v.first().copied())
                        .unwrap_or(default)
                };
                (
                    if single { DType::F32 } else { DType::F64 },
                    Decode::Float {
                        missing,
                        scale: first(&scale, 1.0),
                        offset: first(&offset, 0.0),
                    },
                )
            } else if stored.is_float() && !missing.is_empty() {
                (
                    stored,
                    Decode::Float {
                        missing,
                        scale: 1.0,
                        offset: 0.0,
                    },
                )
            } else {
                (stored, Decode::Raw)
            };
            let shape: Vec<usize> = var.dimensions().iter().map(|d| d.len()).collect();
            let stored_chunks = var
                .chunking()
                .map_err(|e| storage(path, name, format!("its chunking: {e}")))?;
            (dtype, decode, shape, stored_chunks)
        };
        let (blocks, note) =
            crate::layout::blocks(&shape, stored.as_deref(), chunks, dtype.size())?;
        Ok(NetcdfSource {
            path: path.to_path_buf(),
            name: name.to_string(),
            file,
            dtype,
            decode,
            blocks,
            note,
            identity,
        })
    }
}

impl BlockSource for NetcdfSource {
    fn describe(&self) -> String {
        format!("netcdf {}:{}", self.path.display(), self.name)
    }

    fn read(&self, region: &[Range<usize>]) -> Result<HostArray> {
        let f = std::fs::File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        self.identity.check(&self.path, &f)?;
        let fail = |e: ::netcdf::Error| {
            storage(&self.path, &self.name, format!("reading {region:?}: {e}"))
        };
        let var = self
            .file
            .variable(&self.name)
            .ok_or_else(|| storage(&self.path, &self.name, "the variable is gone".into()))?;
        let extents: Vec<Range<usize>> = region.to_vec();
        match &self.decode {
            Decode::Raw => {
                macro_rules! raw {
                    ($t:ty) => {
                        <$t as HostElement>::wrap(var.get::<$t, _>(extents).map_err(fail)?)
                    };
                }
                Ok(match self.dtype {
                    DType::I8 => raw!(i8),
                    DType::I16 => raw!(i16),
                    DType::I32 => raw!(i32),
                    DType::I64 => raw!(i64),
                    DType::U8 => raw!(u8),
                    DType::U16 => raw!(u16),
                    DType::U32 => raw!(u32),
                    DType::U64 => raw!(u64),
                    DType::F32 => raw!(f32),
                    DType::F64 => raw!(f64),
                    DType::Bool => {
                        return Err(Error::Internal(format!(
                            "a NetCDF variable read as bool ({})",
                            self.describe()
                        )))
                    }
                })
            }
            Decode::Float {
                missing,
                scale,
                offset,
            } => {
                // netCDF converts the stored type to double on read (exactly, for every
                // stored type but 64-bit integers over 2^53).
                let a: ArrayD<f64> = var.get::<f64, _>(extents).map_err(fail)?;
                let (scale, offset) = (*scale, *offset);
                let masked = |v: f64| missing.contains(&v);
                // In the unpacked type, operation by operation, as NumPy evaluates
                // `stored * scale_factor + add_offset` for netCDF4-python and xarray.
                Ok(if self.dtype == DType::F32 {
                    let (scale, offset) = (scale as f32, offset as f32);
                    HostArray::F32(a.mapv(|v| {
                        if masked(v) {
                            f32::NAN
                        } else {
                            v as f32 * scale + offset
                        }
                    }))
                } else {
                    HostArray::F64(a.mapv(|v| {
                        if masked(v) {
                            f64::NAN
                        } else {
                            v * scale + offset
                        }
                    }))
                })
            }
        }
    }

    fn plan_note(&self) -> Option<String> {
        self.note.clone()
    }
}

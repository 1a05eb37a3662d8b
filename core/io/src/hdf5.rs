//! HDF5 datasets as lazy arrays (feature `hdf5`, on the system's libhdf5): an h5py file's
//! dataset, or a NetCDF-4 file's variable read as the HDF5 dataset it is.
//!
//! [`from_hdf5`] reads the dataset's shape, type and chunking when called; every block is
//! then a hyperslab read by its own task. By default the blocks are the stored chunks, so
//! each is read and decompressed once; a requested chunking is read as given (HDF5 reads
//! the stored chunks a hyperslab touches), with a note in `explain()` when it cuts them.
//! The file's identity is taken when it is opened and checked before every read, so a file
//! replaced or rewritten under a running plan is an [`Error::FileChanged`].
//!
//! libhdf5 is not thread-safe; its calls go through the one lock the `hdf5` crate (and the
//! `netcdf` crate) hold around the library, so reads of one process are serialized — the
//! decompression included. Plan for reads at one core's speed, or store the data as Zarr,
//! which tessera decodes on every core.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::hdf5::types::{FloatSize, IntSize, TypeDescriptor};
use ::hdf5::{Dataset, Hyperslab, SliceOrIndex};
use ndarray::IxDyn;
use tessera_array::{Array, BlockSource};
use tessera_core::chunks::ChunkSpec;
use tessera_core::dispatch_dtype;
use tessera_core::dtype::DType;
use tessera_core::host::{HostArray, HostElement};

use crate::error::{Error, Result};
use crate::identity::FileIdentity;
use crate::layout::located as storage;

/// Opens the dataset `dataset` (a path inside the file: `"temperature"`,
/// `"/group/data"`) of the HDF5 file `path` as a lazy array on `backend` (`None`: config
/// `array.backend`), in blocks of `chunks` (`None`: the stored chunks, or blocks of
/// `chunk-size` bytes for a contiguous dataset).
///
/// Reads the dtypes tessera holds: booleans (h5py's enum), signed and unsigned integers of
/// 8 to 64 bits, `float32` and `float64`, in either byte order.
///
/// # Errors
/// The file cannot be opened or is not HDF5; no such dataset (the message lists the
/// datasets at the top of the file); a type tessera does not hold (strings, compounds,
/// `float16`); a chunking that does not fit the shape.
///
/// ```no_run
/// # fn main() -> tessera_core::Result<()> {
/// let t = tessera_io::hdf5::from_hdf5("era5.h5", "t2m", None, None)?;
/// let mean = t.mean(Some(&[0]), false)?;     // over time, one stored chunk per task
/// # Ok(())
/// # }
/// ```
pub fn from_hdf5(
    path: impl AsRef<Path>,
    dataset: &str,
    chunks: Option<ChunkSpec>,
    backend: Option<&str>,
) -> Result<Array> {
    let source = Hdf5Source::open(path.as_ref(), dataset, chunks)?;
    let (dtype, blocks) = (source.dtype, source.blocks.clone());
    Array::from_source(Arc::new(source), dtype, blocks, backend)
}

/// An opened dataset.
struct Hdf5Source {
    path: PathBuf,
    name: String,
    dataset: Dataset,
    dtype: DType,
    blocks: tessera_core::chunks::Chunks,
    note: Option<String>,
    identity: FileIdentity,
}

impl Hdf5Source {
    fn open(path: &Path, name: &str, chunks: Option<ChunkSpec>) -> Result<Hdf5Source> {
        let identity = FileIdentity::read(path)?;
        let file = ::hdf5::File::open(path)
            .map_err(|e| storage(path, name, format!("cannot open as an HDF5 file: {e}")))?;
        let dataset = file.dataset(name).map_err(|e| {
            let here = file
                .member_names()
                .map(|m| m.join(", "))
                .unwrap_or_default();
            storage(
                path,
                name,
                format!("no such dataset ({e}); the file's top level holds: {here}"),
            )
        })?;
        let descriptor = dataset
            .dtype()
            .and_then(|t| t.to_descriptor())
            .map_err(|e| storage(path, name, format!("its type cannot be read: {e}")))?;
        let dtype = to_dtype(&descriptor).ok_or_else(|| {
            storage(
                path,
                name,
                format!("its type {descriptor} is not one tessera holds (bool, int8..int64, uint8..uint64, float32, float64)"),
            )
        })?;
        let shape = dataset.shape();
        let stored = dataset.chunk();
        let (blocks, note) =
            crate::layout::blocks(&shape, stored.as_deref(), chunks, dtype.size())?;
        Ok(Hdf5Source {
            path: path.to_path_buf(),
            name: name.to_string(),
            dataset,
            dtype,
            blocks,
            note,
            identity,
        })
    }
}

/// The tessera dtype of an HDF5 type, if tessera holds it.
fn to_dtype(t: &TypeDescriptor) -> Option<DType> {
    Some(match t {
        TypeDescriptor::Boolean => DType::Bool,
        TypeDescriptor::Integer(IntSize::U1) => DType::I8,
        TypeDescriptor::Integer(IntSize::U2) => DType::I16,
        TypeDescriptor::Integer(IntSize::U4) => DType::I32,
        TypeDescriptor::Integer(IntSize::U8) => DType::I64,
        TypeDescriptor::Unsigned(IntSize::U1) => DType::U8,
        TypeDescriptor::Unsigned(IntSize::U2) => DType::U16,
        TypeDescriptor::Unsigned(IntSize::U4) => DType::U32,
        TypeDescriptor::Unsigned(IntSize::U8) => DType::U64,
        TypeDescriptor::Float(FloatSize::U4) => DType::F32,
        TypeDescriptor::Float(FloatSize::U8) => DType::F64,
        _ => return None,
    })
}

impl BlockSource for Hdf5Source {
    fn describe(&self) -> String {
        format!("hdf5 {}:{}", self.path.display(), self.name)
    }

    fn read(&self, region: &[Range<usize>]) -> Result<HostArray> {
        let f = std::fs::File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        self.identity.check(&self.path, &f)?;
        let slab: Vec<SliceOrIndex> = region.iter().map(|r| r.clone().into()).collect();
        let slab = Hyperslab::from(slab);
        let fail =
            |e: ::hdf5::Error| storage(&self.path, &self.name, format!("reading {region:?}: {e}"));
        dispatch_dtype!(self.dtype, T => {
            let a = self.dataset.read_slice::<T, _, IxDyn>(slab).map_err(fail)?;
            Ok(T::wrap(a))
        })
    }

    fn plan_note(&self) -> Option<String> {
        self.note.clone()
    }
}

//! Materialised chunks, in memory or spilled to disk.
//!
//! `persist()` of an array larger than what `memory-limit` leaves for results keeps the
//! chunks that fit on the backend and writes the rest to the spill directory
//! ([`tessera_core::spill`]); a later plan reading a spilled block runs an `unspill` task
//! that reads it back and hands it to the backend again. A spilled chunk is the backend's
//! host copy (`to_host`), so a device backend's chunks spill device → host → disk through the
//! same path. Its bytes on disk are released when the last array holding the chunk is dropped.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use tessera_core::spill::SpillFile;

use crate::backend::{BackendRef, Chunk};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::{HostArray, HostElement};

/// A materialised block: a chunk on its backend, or spilled.
#[derive(Clone)]
pub(crate) enum Held {
    /// On the backend.
    Resident(Chunk),
    /// On disk.
    Spilled(Arc<SpilledChunk>),
}

impl From<Chunk> for Held {
    fn from(c: Chunk) -> Held {
        Held::Resident(c)
    }
}

impl Held {
    /// The block's shape.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Held::Resident(c) => c.shape(),
            Held::Spilled(s) => &s.shape,
        }
    }

    /// The chunk, read back from disk if it was spilled.
    pub(crate) fn load(&self) -> Result<Chunk> {
        match self {
            Held::Resident(c) => Ok(c.clone()),
            Held::Spilled(s) => s.load(),
        }
    }
}

/// A chunk written to a spill file: its host bytes in C order.
pub(crate) struct SpilledChunk {
    file: SpillFile,
    dtype: DType,
    shape: Vec<usize>,
    backend: BackendRef,
}

/// Bytes of the elements in C order (booleans as one byte each).
fn write_elements(host: &HostArray, w: &mut dyn Write) -> std::io::Result<()> {
    fn typed<T: HostElement + bytemuck::Pod>(
        h: &HostArray,
        w: &mut dyn Write,
    ) -> std::io::Result<()> {
        let v = T::view(h).expect("dtype checked by the caller");
        match v.as_slice() {
            Some(s) => w.write_all(bytemuck::cast_slice(s)),
            None => {
                let owned: Vec<T> = v.iter().copied().collect();
                w.write_all(bytemuck::cast_slice(&owned))
            }
        }
    }
    match host {
        HostArray::Bool(a) => {
            let bytes: Vec<u8> = a.iter().map(|&b| u8::from(b)).collect();
            w.write_all(&bytes)
        }
        HostArray::I8(_) => typed::<i8>(host, w),
        HostArray::I16(_) => typed::<i16>(host, w),
        HostArray::I32(_) => typed::<i32>(host, w),
        HostArray::I64(_) => typed::<i64>(host, w),
        HostArray::U8(_) => typed::<u8>(host, w),
        HostArray::U16(_) => typed::<u16>(host, w),
        HostArray::U32(_) => typed::<u32>(host, w),
        HostArray::U64(_) => typed::<u64>(host, w),
        HostArray::F32(_) => typed::<f32>(host, w),
        HostArray::F64(_) => typed::<f64>(host, w),
    }
}

/// Reads `shape`'s elements of `dtype` back, straight into their final buffer.
fn read_elements(dtype: DType, shape: &[usize], r: &mut dyn Read) -> std::io::Result<HostArray> {
    fn typed<T: HostElement + bytemuck::Pod>(
        shape: &[usize],
        n: usize,
        r: &mut dyn Read,
    ) -> std::io::Result<HostArray> {
        let mut v = vec![T::zeroed(); n];
        r.read_exact(bytemuck::cast_slice_mut(&mut v))?;
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(T::wrap(a))
    }
    let n: usize = shape.iter().product();
    let host = match dtype {
        DType::Bool => {
            let mut v = vec![0u8; n];
            r.read_exact(&mut v)?;
            let a = ndarray::ArrayD::from_shape_vec(
                ndarray::IxDyn(shape),
                v.into_iter().map(|b| b != 0).collect(),
            )
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            HostArray::Bool(a)
        }
        DType::I8 => typed::<i8>(shape, n, r)?,
        DType::I16 => typed::<i16>(shape, n, r)?,
        DType::I32 => typed::<i32>(shape, n, r)?,
        DType::I64 => typed::<i64>(shape, n, r)?,
        DType::U8 => typed::<u8>(shape, n, r)?,
        DType::U16 => typed::<u16>(shape, n, r)?,
        DType::U32 => typed::<u32>(shape, n, r)?,
        DType::U64 => typed::<u64>(shape, n, r)?,
        DType::F32 => typed::<f32>(shape, n, r)?,
        DType::F64 => typed::<f64>(shape, n, r)?,
    };
    let mut extra = [0u8; 1];
    if r.read(&mut extra)? != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "spill file holds more bytes than its chunk",
        ));
    }
    Ok(host)
}

impl SpilledChunk {
    /// Writes `chunk` (owned by `backend`) to a new spill file under `base`.
    pub(crate) fn write(base: &Path, backend: &BackendRef, chunk: &Chunk) -> Result<SpilledChunk> {
        let owned;
        let host = match backend.host_view(chunk) {
            Some(h) => h,
            None => {
                owned = backend.to_host(chunk)?;
                &owned
            }
        };
        let file = SpillFile::write(base, host.nbytes() as u64, |w| {
            write_elements(host, w).map_err(|e| Error::io(base, e))
        })?;
        Ok(SpilledChunk {
            file,
            dtype: chunk.dtype(),
            shape: chunk.shape().to_vec(),
            backend: backend.clone(),
        })
    }

    /// Reads the chunk back onto its backend.
    pub(crate) fn load(&self) -> Result<Chunk> {
        let host = self.file.read(|r| {
            read_elements(self.dtype, &self.shape, r).map_err(|e| Error::io(self.file.path(), e))
        })?;
        self.backend.from_host(&host)
    }

    /// Bytes on disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.file.disk_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::DType;
    use tessera_cpu as _;

    #[test]
    fn every_dtype_round_trips_through_a_spill_file() {
        let base = std::env::temp_dir().join(format!("tessera-stored-test-{}", std::process::id()));
        let backend = crate::registry::array_backend("cpu").unwrap();
        for dtype in DType::ALL {
            let host = crate::host::HostArray::from_scalars(
                &[2, 3],
                dtype,
                &(0..6)
                    .map(|i| tessera_core::Scalar::F64(i as f64 * 1.5 - 2.0).cast(dtype))
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            let chunk = backend.from_host(&host).unwrap();
            let spilled = SpilledChunk::write(&base, &backend, &chunk).unwrap();
            assert!(spilled.disk_bytes() > 0);
            let back = backend.to_host(&spilled.load().unwrap()).unwrap();
            assert_eq!(back, host, "{dtype}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}

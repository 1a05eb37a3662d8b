//! Writing an array as a `.npy` file, block by block (see the [module docs](super)).

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_array::{Array, BlockSink, StoreSummary};
use tessera_core::dtype::DType;
use tessera_core::error::{Error, Result};
use tessera_core::host::HostArray;

use super::for_each_run;
use super::header::encode;
use crate::atomic::create_atomic;

/// Writes `array` to `path` as a C-order little-endian `.npy` file (format 1.0, or 2.0
/// for headers over 64 KiB) that NumPy's `np.load` reads. Each block is written at its
/// offsets by the task that computes it; the file appears under `path` only when all of
/// it is written and synced, replacing any file there.
///
/// # Errors
/// The plan's errors, or the file system's (naming `path`); `path` is then untouched.
pub fn to_npy(array: &Array, path: impl AsRef<Path>) -> Result<StoreSummary> {
    let path = path.as_ref();
    let shape = array.shape();
    let header = encode(array.dtype(), &shape);
    let data = tessera_core::chunks::checked_numel(&shape)
        .and_then(|n| (n as u64).checked_mul(array.dtype().size() as u64))
        .and_then(|d| d.checked_add(header.len() as u64))
        .ok_or_else(|| {
            Error::invalid(
                "to_npy",
                format!("{:?} {} is too large", shape, array.dtype()),
            )
        })?;
    if let Some(cluster) = crate::ranks::several()? {
        return to_npy_over_ranks(array, path, &header, data, &cluster);
    }
    let mut summary = None;
    create_atomic(path, |tmp| {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)
            .map_err(|e| Error::io(path, e))?;
        write_at(&f, &header, 0).map_err(|e| Error::io(path, e))?;
        f.set_len(data).map_err(|e| Error::io(path, e))?;
        let sink = NpySink {
            path: path.to_path_buf(),
            file: Arc::new(f),
            shared: false,
            shape: shape.to_vec(),
            dtype: array.dtype(),
            data_offset: header.len() as u64,
        };
        summary = Some(array.store(Arc::new(sink))?);
        Ok(())
    })?;
    summary.ok_or_else(|| Error::Internal("to_npy committed without writing".into()))
}

/// [`to_npy`] over the ranks of a job (see [`crate::ranks`]): rank 0 creates the
/// temporary file, every rank writes its blocks into it and syncs them, rank 0 renames
/// it over `path`.
fn to_npy_over_ranks(
    array: &Array,
    path: &Path,
    header: &[u8],
    data: u64,
    cluster: &tessera_runtime::cluster::Cluster,
) -> Result<StoreSummary> {
    let root = cluster.rank() == 0;
    let created = crate::ranks::on_root(cluster, || {
        let tmp = crate::atomic::temp_path(path);
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|f| write_at(&f, header, 0).and_then(|()| f.set_len(data)));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(path, e));
        }
        Ok(tmp.to_string_lossy().into_owned().into_bytes())
    })?;
    let tmp = PathBuf::from(String::from_utf8_lossy(&created).into_owned());
    let discard = |e: Error| {
        if root {
            let _ = std::fs::remove_file(&tmp);
        }
        e
    };
    let opened = OpenOptions::new().write(true).open(&tmp).map_err(|e| {
        Error::invalid(
            "to_npy",
            format!(
                "rank {} cannot open the file {} that rank 0 created for {} ({e}): under scheduler = \"mpi\" write to a filesystem every rank shares, not a node-local path",
                cluster.rank(),
                tmp.display(),
                path.display()
            ),
        )
    });
    let (file, opened) = match opened {
        Ok(f) => (Some(Arc::new(f)), Ok(())),
        Err(e) => (None, Err(e)),
    };
    crate::ranks::agree(cluster, opened).map_err(discard)?;
    let file = file.ok_or_else(|| Error::Internal("an npy file agreed open is not".into()))?;
    let sink = NpySink {
        path: path.to_path_buf(),
        file: file.clone(),
        shared: true,
        shape: array.shape().to_vec(),
        dtype: array.dtype(),
        data_offset: header.len() as u64,
    };
    let summary = array.store(Arc::new(sink)).map_err(discard)?;
    // Every block is written; each rank makes its own writes durable before rank 0
    // renames (on a network filesystem another client's writes are not rank 0's to sync).
    let synced = file.sync_all().map_err(|e| Error::io(path, e));
    drop(file);
    crate::ranks::agree(cluster, synced).map_err(discard)?;
    crate::ranks::on_root(cluster, || {
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        Ok(Vec::new())
    })
    .map_err(discard)?;
    Ok(summary)
}

/// The open temporary file blocks are written into.
struct NpySink {
    path: PathBuf,
    file: Arc<File>,
    /// Written by every rank of a job (see [`to_npy_over_ranks`]).
    shared: bool,
    shape: Vec<usize>,
    dtype: DType,
    data_offset: u64,
}

impl BlockSink for NpySink {
    fn describe(&self) -> String {
        format!("npy {}", self.path.display())
    }

    fn shared_by_ranks(&self) -> bool {
        self.shared
    }

    fn write(&self, region: &[Range<usize>], data: &HostArray) -> Result<u64> {
        if data.dtype() != self.dtype {
            return Err(Error::Internal(format!(
                "a {} block for {} of {}",
                data.dtype(),
                self.describe(),
                self.dtype
            )));
        }
        let bytes = encode_le(data);
        let item = self.dtype.size();
        let mut pos = 0;
        for_each_run(&self.shape, region, |elem, len| {
            let n = len * item;
            let offset = self.data_offset + (elem * item) as u64;
            write_at(&self.file, &bytes[pos..pos + n], offset)?;
            pos += n;
            Ok(())
        })
        .map_err(|e| Error::io(&self.path, e))?;
        Ok(bytes.len() as u64)
    }
}

/// The block's elements in C order, little endian.
fn encode_le(data: &HostArray) -> Vec<u8> {
    macro_rules! le {
        ($a:expr, $f:expr) => {
            $a.iter().flat_map($f).collect()
        };
    }
    match data {
        HostArray::Bool(a) => a.iter().map(|&b| b as u8).collect(),
        HostArray::I8(a) => le!(a, |v: &i8| v.to_le_bytes()),
        HostArray::I16(a) => le!(a, |v: &i16| v.to_le_bytes()),
        HostArray::I32(a) => le!(a, |v: &i32| v.to_le_bytes()),
        HostArray::I64(a) => le!(a, |v: &i64| v.to_le_bytes()),
        HostArray::U8(a) => a.iter().copied().collect(),
        HostArray::U16(a) => le!(a, |v: &u16| v.to_le_bytes()),
        HostArray::U32(a) => le!(a, |v: &u32| v.to_le_bytes()),
        HostArray::U64(a) => le!(a, |v: &u64| v.to_le_bytes()),
        HostArray::F32(a) => le!(a, |v: &f32| v.to_le_bytes()),
        HostArray::F64(a) => le!(a, |v: &f64| v.to_le_bytes()),
    }
}

#[cfg(unix)]
fn write_at(f: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.write_all_at(buf, offset)
}

#[cfg(windows)]
fn write_at(f: &File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let n = f.seek_write(buf, offset)?;
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::from_npy;
    use tessera_core::dtype::Scalar;
    use tessera_cpu as _;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tessera-npy-write-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn every_dtype_round_trips_through_irregular_blocks() {
        let d = dir("dtypes");
        for dtype in DType::ALL {
            let a = Array::arange(0.0, 60.0, 1.0, DType::F64, 60, Some("cpu"))
                .unwrap()
                .reshape(&[6, 10])
                .unwrap()
                .rechunk([4usize, 7].as_slice())
                .unwrap()
                .astype(dtype);
            let path = d.join(format!("{dtype}.npy"));
            let summary = to_npy(&a, &path).unwrap();
            assert_eq!(summary.blocks, 4, "{dtype}");
            let back = from_npy(&path, [5usize, 3].as_slice(), Some("cpu")).unwrap();
            assert_eq!(back.dtype(), dtype);
            assert_eq!(back.shape(), vec![6, 10]);
            let (x, y) = (a.compute().unwrap(), back.compute().unwrap());
            assert_eq!(x.to_f64_vec(), y.to_f64_vec(), "{dtype}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn zero_d_and_empty_arrays_round_trip() {
        let d = dir("shapes");
        let scalar = Array::full(&[], Scalar::F64(2.5), 1, Some("cpu")).unwrap();
        to_npy(&scalar, d.join("s.npy")).unwrap();
        let back = from_npy(d.join("s.npy"), 1, Some("cpu")).unwrap();
        assert_eq!(back.compute_f64().unwrap(), 2.5);
        let empty = Array::zeros(&[3, 0], DType::I64, 2, Some("cpu")).unwrap();
        to_npy(&empty, d.join("e.npy")).unwrap();
        let back = from_npy(d.join("e.npy"), 2, Some("cpu")).unwrap();
        assert_eq!(back.shape(), vec![3, 0]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir("fail");
        let path = d.join("x.npy");
        std::fs::write(&path, b"old").unwrap();
        let a = Array::ones(&[8], DType::F64, 2, Some("cpu")).unwrap();
        let failing = Array::map_blocks(
            &[&a],
            Arc::new(|_| Err(Error::invalid("test", "block refused"))),
            DType::F64,
            None,
        )
        .unwrap();
        let err = to_npy(&failing, &path).unwrap_err().to_string();
        assert!(err.contains("block refused"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

//! Reading a `.npy` file as a lazy array: each block is read with positioned reads of
//! just its bytes, so a slice of a large file reads only what it covers.
//!
//! A C-order file stores the last axis contiguously; a block is a set of runs along it
//! (merged across trailing axes the block covers whole). A Fortran-order file is the
//! C-order file of the reversed shape, read that way and transposed back. Big-endian
//! files are byte-swapped as they are decoded.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use tessera_array::{Array, BlockSource};
use tessera_core::chunks::ChunkSpec;
use tessera_core::dtype::DType;
use tessera_core::error::{Error, Result};
use tessera_core::host::HostArray;

use super::for_each_run;
use super::header::{parse, Header, Order, Parse};
use crate::identity::FileIdentity;

/// Opens the `.npy` file at `path` as a lazy array chunked by `chunks` (`"auto"`, a block
/// shape, ...; see [`ChunkSpec`]) on `backend` (`None`: config `array.backend`). Only the
/// header is read now; each block is read by its task, and a file changed since it was
/// opened is an [`Error::FileChanged`] rather than a mix of two versions.
///
/// Reads NumPy's format versions 1.0 to 3.0, C or Fortran order, either byte order, for
/// the dtypes tessera holds (bool, signed and unsigned integers, `float32`, `float64`).
///
/// # Errors
/// The file cannot be opened, is not a `.npy` file, holds another dtype (named in the
/// message), or is shorter than its header says.
///
/// ```
/// # fn main() -> tessera_core::Result<()> {
/// # use tessera_cpu as _;
/// let dir = std::env::temp_dir().join(format!("npy-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("x.npy");
/// let x = tessera_array::Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2], 1, None)?;
/// tessera_io::npy::to_npy(&x, &path)?;
/// let back = tessera_io::npy::from_npy(&path, 1, None)?;
/// assert_eq!(back.sum(None, false)?.compute_f64()?, 10.0);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(())
/// # }
/// ```
pub fn from_npy(
    path: impl AsRef<Path>,
    chunks: impl Into<ChunkSpec>,
    backend: Option<&str>,
) -> Result<Array> {
    let source = NpySource::open(path.as_ref())?;
    let header = source.header.clone();
    let chunks = chunks.into().resolve(
        &header.shape,
        header.dtype.size(),
        tessera_core::config::chunk_size_bytes()?,
    )?;
    Array::from_source(Arc::new(source), header.dtype, chunks, backend)
}

/// A `.npy` file's header and identity; reads regions of it.
pub(crate) struct NpySource {
    path: PathBuf,
    header: Header,
    identity: FileIdentity,
}

impl NpySource {
    /// Reads the header and checks the file holds all the data it promises.
    pub(crate) fn open(path: &Path) -> Result<NpySource> {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = f.metadata().map_err(|e| Error::io(path, e))?;
        let identity = FileIdentity::of(&meta);
        let bad = |detail: String| Error::Storage {
            location: path.display().to_string(),
            detail: format!("not a readable .npy file: {detail}"),
        };
        let mut buf = vec![0u8; 128];
        let mut filled = 0;
        let header = loop {
            match parse(&buf[..filled]) {
                Ok(h) => break h,
                Err(Parse::Bad(m)) => return Err(bad(m)),
                Err(Parse::Need(n)) => {
                    if n as u64 > meta.len() {
                        return Err(bad(format!(
                            "the file has {} bytes, its header needs {n}",
                            meta.len()
                        )));
                    }
                    if buf.len() < n {
                        buf.resize(n, 0);
                    }
                    let got = f.read(&mut buf[filled..]).map_err(|e| Error::io(path, e))?;
                    if got == 0 {
                        return Err(bad("the header ends early".into()));
                    }
                    filled += got;
                }
            }
        };
        let need = header
            .data_offset
            .checked_add(header.data_bytes().unwrap_or(u64::MAX))
            .ok_or_else(|| bad("its size overflows".into()))?;
        if meta.len() < need {
            return Err(bad(format!(
                "the header promises {} {} elements of shape {:?} ({need} bytes in all) but the file has {} bytes",
                tessera_core::chunks::numel(&header.shape),
                header.dtype,
                header.shape,
                meta.len()
            )));
        }
        Ok(NpySource {
            path: path.to_path_buf(),
            header,
            identity,
        })
    }

    /// Reads `region` of the C-order array of `shape` stored at the data offset.
    fn read_c(&self, f: &File, shape: &[usize], region: &[Range<usize>]) -> Result<Vec<u8>> {
        let item = self.header.dtype.size();
        let total: usize = region.iter().map(|r| r.len()).product();
        let mut out = vec![0u8; total * item];
        let mut written = 0;
        for_each_run(shape, region, |elem, len| {
            let offset = self.header.data_offset + (elem * item) as u64;
            let end = written + len * item;
            read_at(f, &mut out[written..end], offset)?;
            written = end;
            Ok(())
        })
        .map_err(|e| Error::io(&self.path, e))?;
        Ok(out)
    }
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_at(f: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

impl BlockSource for NpySource {
    fn describe(&self) -> String {
        format!("npy {}", self.path.display())
    }

    fn read(&self, region: &[Range<usize>]) -> Result<HostArray> {
        let f = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        self.identity.check(&self.path, &f)?;
        let h = &self.header;
        let shape: Vec<usize> = region.iter().map(|r| r.len()).collect();
        if !h.fortran {
            let bytes = self.read_c(&f, &h.shape, region)?;
            return decode(&bytes, h.dtype, h.order, &shape);
        }
        // Fortran order: the C-order array of the reversed shape, transposed back.
        let rev_shape: Vec<usize> = h.shape.iter().rev().copied().collect();
        let rev_region: Vec<Range<usize>> = region.iter().rev().cloned().collect();
        let rev_out: Vec<usize> = shape.iter().rev().copied().collect();
        let bytes = self.read_c(&f, &rev_shape, &rev_region)?;
        let reversed = decode(&bytes, h.dtype, h.order, &rev_out)?;
        Ok(transpose_reversed(reversed))
    }
}

/// Decodes `bytes` (C order of `shape`) of `dtype` stored in `order`.
pub(crate) fn decode(
    bytes: &[u8],
    dtype: DType,
    order: Order,
    shape: &[usize],
) -> Result<HostArray> {
    fn typed<T, const N: usize>(
        bytes: &[u8],
        shape: &[usize],
        order: Order,
        from: fn([u8; N]) -> T,
    ) -> Result<ArrayD<T>> {
        let values: Vec<T> = bytes
            .chunks_exact(N)
            .map(|c| {
                let mut b: [u8; N] = c.try_into().expect("chunks_exact yields N bytes");
                if order == Order::Big {
                    b.reverse();
                }
                from(b)
            })
            .collect();
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .map_err(|e| Error::Internal(format!("npy block of shape {shape:?}: {e}")))
    }
    Ok(match dtype {
        DType::Bool => HostArray::Bool(typed(bytes, shape, order, |b: [u8; 1]| b[0] != 0)?),
        DType::I8 => HostArray::I8(typed(bytes, shape, order, i8::from_le_bytes)?),
        DType::I16 => HostArray::I16(typed(bytes, shape, order, i16::from_le_bytes)?),
        DType::I32 => HostArray::I32(typed(bytes, shape, order, i32::from_le_bytes)?),
        DType::I64 => HostArray::I64(typed(bytes, shape, order, i64::from_le_bytes)?),
        DType::U8 => HostArray::U8(typed(bytes, shape, order, u8::from_le_bytes)?),
        DType::U16 => HostArray::U16(typed(bytes, shape, order, u16::from_le_bytes)?),
        DType::U32 => HostArray::U32(typed(bytes, shape, order, u32::from_le_bytes)?),
        DType::U64 => HostArray::U64(typed(bytes, shape, order, u64::from_le_bytes)?),
        DType::F32 => HostArray::F32(typed(bytes, shape, order, f32::from_le_bytes)?),
        DType::F64 => HostArray::F64(typed(bytes, shape, order, f64::from_le_bytes)?),
    })
}

/// The array with its axes reversed, in standard layout.
fn transpose_reversed(h: HostArray) -> HostArray {
    macro_rules! rev {
        ($($v:ident),*) => {
            match h {
                $(HostArray::$v(a) => HostArray::$v(a.reversed_axes().as_standard_layout().into_owned()),)*
            }
        };
    }
    rev!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::header::encode;
    use tessera_array::Index;
    use tessera_cpu as _;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tessera-npy-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    /// A version 1.0 file with the given dict and raw data bytes.
    fn raw_file(name: &str, dict: &str, data: &[u8]) -> PathBuf {
        let mut bytes = super::super::header::MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.extend_from_slice(data);
        let path = temp(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn fortran_order_big_endian_files_read_as_numpy_means_them() {
        // np.arange(6, dtype='>i2').reshape(2, 3, order='F') is stored as its columns.
        // Logical [[0, 2, 4], [1, 3, 5]] in Fortran order is 0 1 2 3 4 5.
        let data: Vec<u8> = (0i16..6).flat_map(|v| v.to_be_bytes()).collect();
        let path = raw_file(
            "f_be.npy",
            "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }\n",
            &data,
        );
        for chunks in [vec![2, 3], vec![1, 2]] {
            let a = from_npy(&path, chunks.as_slice(), Some("cpu")).unwrap();
            let h = a.compute().unwrap().into_typed::<i16>().unwrap();
            assert_eq!(
                h.iter().copied().collect::<Vec<_>>(),
                vec![0, 2, 4, 1, 3, 5]
            );
        }
    }

    #[test]
    fn a_slice_reads_only_the_blocks_it_touches_and_gets_the_right_values() {
        let shape = [7usize, 5, 3];
        let values: Vec<f64> = (0..105).map(|v| v as f64).collect();
        let mut bytes = encode(DType::F64, &shape);
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        let path = temp("c.npy");
        std::fs::write(&path, bytes).unwrap();
        let a = from_npy(&path, [3usize, 2, 3].as_slice(), Some("cpu")).unwrap();
        let s = a
            .slice(&[
                Index::slice(Some(1), Some(6), 2),
                Index::At(3),
                Index::step(-1),
            ])
            .unwrap();
        let plan = s.explain().unwrap();
        // Rows 1, 3, 5 lie in row blocks 0 and 1; column 3 in column block 1.
        assert!(plan.contains("reads 2 block(s) of npy"), "{plan}");
        let h = s.compute().unwrap().into_typed::<f64>().unwrap();
        let want: Vec<f64> = [1usize, 3, 5]
            .iter()
            .flat_map(|&i| (0..3).rev().map(move |k| (i * 15 + 3 * 3 + k) as f64))
            .collect();
        assert_eq!(h.iter().copied().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_truncated_file_is_refused_when_opened() {
        let path = raw_file(
            "short.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n",
            &[0u8; 24],
        );
        let err = from_npy(&path, 4, Some("cpu")).unwrap_err().to_string();
        assert!(err.contains("short.npy"), "{err}");
        assert!(err.contains("promises 4 float64 elements"), "{err}");
        let garbage = temp("garbage.npy");
        std::fs::write(&garbage, b"hello").unwrap();
        let err = from_npy(&garbage, 4, Some("cpu")).unwrap_err().to_string();
        assert!(err.contains("header needs 10"), "{err}");
    }

    #[test]
    fn a_file_rewritten_after_opening_is_detected() {
        let path = temp("changing.npy");
        let mut bytes = encode(DType::I32, &[4]);
        bytes.extend((0i32..4).flat_map(|v| v.to_le_bytes()));
        std::fs::write(&path, &bytes).unwrap();
        let a = from_npy(&path, 4, Some("cpu")).unwrap();
        bytes.extend((0i32..4).flat_map(|v| v.to_le_bytes()));
        std::fs::write(&path, &bytes).unwrap();
        let err = a.compute().unwrap_err();
        assert!(matches!(err, Error::FileChanged { .. }), "{err}");
    }
}

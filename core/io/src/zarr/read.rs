//! Reading a Zarr array as a lazy tessera array, one stored chunk (or requested block)
//! per task.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use ndarray::{ArrayD, IxDyn};
use tessera_array::{Array, BlockSource};
use tessera_core::chunks::Chunks;
use tessera_core::dispatch_dtype;
use tessera_core::dtype::DType;
use tessera_core::error::{Error, Result};
use tessera_core::host::{HostArray, HostElement};
use zarrs::array::{Array as ZArray, ArraySubset, CodecOptions};
use zarrs::storage::ReadableWritableListableStorageTraits;

use super::direct::Compressor;
use super::dtype::to_dtype;
use super::store::{node_path, ZarrStore};
use crate::identity::FileIdentity;

type Stored = ZArray<dyn ReadableWritableListableStorageTraits>;

/// Opens the array at `node`. Under `scheduler = "mpi"` rank 0 reads the metadata and
/// every rank builds the array from rank 0's copy, so every rank plans the same shape,
/// chunks and codecs even while the store is being rewritten.
fn open_once(store: &ZarrStore, node: &str, location: &str) -> Result<Stored> {
    let open = || {
        ZArray::open(store.storage.clone(), node).map_err(|e| Error::Storage {
            location: location.to_string(),
            detail: super::store::explain(format!("cannot open as a Zarr array: {e}")),
        })
    };
    crate::ranks::decided_by_root(
        open,
        |array| {
            serde_json::to_vec(array.metadata())
                .map_err(|e| Error::Internal(format!("zarr metadata of {location}: {e}")))
        },
        |metadata| {
            let m = serde_json::from_slice(metadata).map_err(|e| {
                Error::Internal(format!("rank 0's zarr metadata of {location}: {e}"))
            })?;
            ZArray::new_with_metadata(store.storage.clone(), node, m).map_err(|e| Error::Storage {
                location: location.to_string(),
                detail: format!("rank 0's metadata does not open here: {e}"),
            })
        },
    )
}

/// Opens the Zarr array (v2 or v3) at `path` in `store` as a lazy array on `backend`
/// (`None`: config `array.backend`).
///
/// With `chunks` `None` every block is one stored chunk (one shard of a sharded array),
/// read and decoded by its own task, so a slice reads only the stored chunks it touches.
/// With a block shape, each stored chunk is still read and decoded once and the pieces
/// are regrouped into the requested blocks; when those cut the stored chunks,
/// `explain()` says so (the regrouping costs a copy and holds stored chunks until all
/// their pieces are used).
///
/// Only the metadata is read now (and, for a store behind a URL, the list of the array's
/// objects). A plan that finds a stored chunk it reads changed since the array was opened
/// stops with [`Error::FileChanged`]: on the local file system by the chunk file's
/// status-change time (and the metadata file's identity), on an object store by each
/// chunk object's ETag, which every read asks for.
///
/// # Errors
/// No array at `path` (or metadata zarrs cannot read), a data type tessera does not hold
/// (named), `chunks` of the wrong rank or with a zero, or an unknown backend.
///
/// ```
/// # fn main() -> tessera_core::Result<()> {
/// # use tessera_cpu as _;
/// use tessera_io::zarr::{from_zarr, to_zarr, ZarrStore, ZarrWriteOptions};
/// let store = ZarrStore::memory();
/// let x = tessera_array::Array::arange(0.0, 100.0, 1.0, tessera_core::DType::F64, 25, None)?;
/// to_zarr(&x, &store, "x", &ZarrWriteOptions::default())?;
/// let back = from_zarr(&store, "x", None, None)?;
/// assert_eq!(back.sum(None, false)?.compute_f64()?, 4950.0);
/// # Ok(())
/// # }
/// ```
pub fn from_zarr(
    store: &ZarrStore,
    path: &str,
    chunks: Option<&[usize]>,
    backend: Option<&str>,
) -> Result<Array> {
    let source = ZarrSource::open(store, path)?;
    let stored = source.chunks.clone();
    let dtype = source.dtype;
    let Some(requested) = chunks else {
        return Array::from_source(Arc::new(source), dtype, stored, backend);
    };
    let shape = stored.shape();
    if requested.len() != shape.len() || requested.contains(&0) {
        return Err(Error::invalid(
            "from_zarr",
            format!(
                "chunks {requested:?} for the {}-d array {}: give one positive size per axis",
                shape.len(),
                source.location
            ),
        ));
    }
    let wanted = Chunks::regular(&shape, requested);
    let note = match (source.note.clone(), cut_note(&stored, &wanted)) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    let source = ZarrSource { note, ..source };
    Array::from_source(Arc::new(source), dtype, stored, backend)?.rechunk(requested)
}

/// A note when `wanted` block boundaries are not all stored chunk boundaries.
fn cut_note(stored: &Chunks, wanted: &Chunks) -> Option<String> {
    let cut = crate::layout::cut_axes(stored, wanted);
    if cut.is_empty() {
        return None;
    }
    Some(format!(
        "the requested blocks {:?} cut the stored chunks {:?} along axes {cut:?}: each stored chunk is read once and split, and held until all its pieces are used; blocks that are whole multiples of the stored chunks avoid the copies",
        wanted.max_block_shape(),
        stored.max_block_shape()
    ))
}

/// An opened Zarr array.
pub(crate) struct ZarrSource {
    array: Stored,
    location: String,
    pub(crate) dtype: DType,
    pub(crate) chunks: Chunks,
    note: Option<String>,
    /// The metadata file and its identity, for stores on the local file system.
    metadata: Option<(PathBuf, FileIdentity)>,
    /// For stores on the local file system: the store's root, the array's directory and
    /// when the array was opened; a chunk file changed after that (written in place, or
    /// replaced by a rename, which sets its status-change time too) or removed after
    /// that (which stamps the directory that held it) fails the read.
    chunk_files: Option<(PathBuf, PathBuf, SystemTime)>,
    /// The compressor whole chunks are decoded with here rather than by zarrs
    /// ([`super::direct`]), when the codec chain is one it takes.
    direct: Option<Compressor>,
    /// For stores behind a URL: the versions of the array's objects at its opening, which
    /// every read asks for, and the store's URL ([`super::versions`]).
    #[cfg(feature = "object-store")]
    versions: Option<(Arc<super::versions::Versions>, String)>,
}

impl ZarrSource {
    pub(crate) fn open(store: &ZarrStore, path: &str) -> Result<ZarrSource> {
        let node = node_path(path);
        let location = store.describe(&node);
        let array = open_once(store, &node, &location)?;
        let dtype = to_dtype(array.data_type()).ok_or_else(|| Error::Storage {
            location: location.clone(),
            detail: format!(
                "data type {} is not one tessera holds (bool, int8..int64, uint8..uint64, float32, float64)",
                array.data_type()
            ),
        })?;
        let chunks = stored_chunks(&array)
            .and_then(|c| check_stored_sizes(&array, dtype).map(|()| c))
            .map_err(|detail| Error::Storage {
                location: location.clone(),
                detail,
            })?;
        let metadata = match &store.root {
            Some(root) => {
                let dir = root.join(node.trim_start_matches('/'));
                [dir.join("zarr.json"), dir.join(".zarray")]
                    .into_iter()
                    .find(|p| p.is_file())
                    .map(|p| FileIdentity::read(&p).map(|id| (p, id)))
                    .transpose()?
            }
            None => None,
        };
        let direct = super::direct::plan(&array.codecs(), dtype);
        let chunk_files = store.root.clone().map(|r| {
            let dir = r.join(node.trim_start_matches('/'));
            (r, dir, SystemTime::now())
        });
        #[cfg(feature = "object-store")]
        let (array, versions, note) = pin(store, &node, &location, array)?;
        #[cfg(not(feature = "object-store"))]
        let note = None;
        Ok(ZarrSource {
            array,
            location,
            dtype,
            chunks,
            note,
            metadata,
            chunk_files,
            direct,
            #[cfg(feature = "object-store")]
            versions,
        })
    }
}

/// `array` reading through a store that asks for the versions its objects had now, for
/// stores behind a URL ([`super::versions`]); a plan note instead when there are too many
/// objects to keep their versions.
#[cfg(feature = "object-store")]
#[allow(clippy::type_complexity)]
fn pin(
    store: &ZarrStore,
    node: &str,
    location: &str,
    array: Stored,
) -> Result<(
    Stored,
    Option<(Arc<super::versions::Versions>, String)>,
    Option<String>,
)> {
    use super::versions::{Pinned, Versions, MAX_LISTED};
    let Some(objects) = &store.objects else {
        return Ok((array, None, None));
    };
    let listed = crate::ranks::decided_by_root(
        || Versions::list(objects, node, location),
        |v| v.as_ref().map_or(Ok(Vec::new()), Versions::encode),
        |bytes| {
            (!bytes.is_empty())
                .then(|| Versions::decode(bytes))
                .transpose()
        },
    )?;
    let Some(versions) = listed else {
        let note = format!(
            "more than {MAX_LISTED} objects under {location}: their versions are not kept, so a chunk replaced while a plan reads the array is not detected"
        );
        return Ok((array, None, Some(note)));
    };
    let versions = Arc::new(versions);
    let pinned = Arc::new(Pinned::new(objects.clone(), versions.clone()));
    let storage = ZarrStore::over_objects(pinned)?;
    let array =
        ZArray::new_with_metadata(storage, node, array.metadata().clone()).map_err(|e| {
            Error::Storage {
                location: location.to_string(),
                detail: format!("reopening with pinned versions: {e}"),
            }
        })?;
    Ok((array, Some((versions, store.location.clone())), None))
}

/// The stored chunk grid as tessera chunks (the last chunk along an axis clipped to the
/// shape; variable chunk grids as they are).
fn stored_chunks(array: &Stored) -> std::result::Result<Chunks, String> {
    let shape: Vec<usize> = array
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} does not fit usize")))
        .collect::<std::result::Result<_, _>>()?;
    let grid = array.chunk_grid_shape().to_vec();
    // The shape and the grid are checked before a size per chunk is allocated: a stored
    // shape of 2^64 - 1 rows in chunks of 2 would otherwise ask for 2^63 sizes.
    tessera_core::chunks::check_shape("zarr", &shape).map_err(|e| e.to_string())?;
    tessera_core::chunks::check_grid(&shape, &grid).map_err(|e| e.to_string())?;
    let mut sizes = Vec::with_capacity(shape.len());
    for (ax, &n) in shape.iter().enumerate() {
        let mut axis = Vec::new();
        let mut start = 0usize;
        for k in 0..grid[ax] {
            let mut index = vec![0u64; shape.len()];
            index[ax] = k;
            let c = array
                .chunk_shape(&index)
                .map_err(|e| format!("chunk grid: {e}"))?;
            let len = usize::try_from(c[ax].get())
                .map_err(|_| "a chunk dimension does not fit usize".to_string())?;
            let len = len.min(n - start);
            axis.push(len);
            start += len;
        }
        if shape[ax] == 0 {
            axis = vec![0];
        }
        sizes.push(axis);
    }
    Chunks::new(&shape, sizes).map_err(|e| format!("chunk grid: {e}"))
}

/// The largest stored chunk (a whole shard, for a sharded array) tessera decodes, in
/// bytes: zarrs decodes a stored chunk whole, allocating its full size first, so metadata
/// naming a chunk of 2^40 elements would end the process, not give an error. Stored
/// chunks are megabytes in practice (Blosc, Zarr v2's usual codec, cannot hold 2 GiB).
const MAX_STORED_CHUNK_BYTES: u64 = 4 << 30;

/// The most inner chunks one shard may hold: zarrs reads a shard's index whole (16 bytes
/// an inner chunk) before any chunk of it, so 2^26 is a 1 GiB index.
const MAX_INNER_CHUNKS_PER_SHARD: u64 = 1 << 26;

/// Refuses metadata whose stored chunk, or whose shard index, is too large to read (see
/// [`MAX_STORED_CHUNK_BYTES`] and [`MAX_INNER_CHUNKS_PER_SHARD`]), before a chunk is.
fn check_stored_sizes(array: &Stored, dtype: DType) -> std::result::Result<(), String> {
    let origin = vec![0u64; array.shape().len()];
    let Ok(shape) = array.chunk_shape(&origin) else {
        return Ok(()); // an empty array reads no chunk
    };
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(d.get()))
        .unwrap_or(u64::MAX);
    let bytes = elements.saturating_mul(dtype.size() as u64);
    if bytes > MAX_STORED_CHUNK_BYTES {
        return Err(format!(
            "a stored chunk of shape {:?} is {bytes} bytes decoded; tessera decodes a stored \
             chunk whole and reads none over {MAX_STORED_CHUNK_BYTES} bytes (rewrite the \
             array in smaller chunks)",
            shape.iter().map(|d| d.get()).collect::<Vec<_>>()
        ));
    }
    // The sharding codec's granularity is its inner chunk; any other codec's the chunk.
    let inner = array
        .codecs()
        .array_to_bytes_codec()
        .partial_decode_granularity(&shape);
    let per_shard = shape
        .iter()
        .zip(inner.iter())
        .try_fold(1u64, |acc, (s, i)| {
            acc.checked_mul(s.get().div_ceil(i.get()))
        })
        .unwrap_or(u64::MAX);
    if per_shard > MAX_INNER_CHUNKS_PER_SHARD {
        return Err(format!(
            "a shard holds {per_shard} inner chunks, whose index alone is {} bytes; tessera \
             reads shards of at most {MAX_INNER_CHUNKS_PER_SHARD} inner chunks",
            per_shard.saturating_mul(16)
        ));
    }
    Ok(())
}

/// Codec options for one block's task: the scheduler already runs one task per worker,
/// so a task decodes on its own thread (zarrs would otherwise fan every chunk out over all
/// cores, and the workers would compete for them).
pub(crate) fn one_thread() -> CodecOptions {
    CodecOptions::default().with_concurrent_target(1)
}

impl ZarrSource {
    /// The stored chunk's index when `region` is exactly one whole stored chunk inside the
    /// array (then it decodes straight into the block, without a subset copy).
    fn whole_chunk(&self, region: &[Range<usize>]) -> Option<Vec<u64>> {
        let mut index = Vec::with_capacity(region.len());
        for (ax, r) in region.iter().enumerate() {
            let k = self.chunks.offsets(ax).binary_search(&r.start).ok()?;
            if self.chunks.axis(ax).get(k) != Some(&r.len()) {
                return None;
            }
            index.push(k as u64);
        }
        // Edge chunks are stored at the full chunk shape; those go through the subset path.
        let full = self.array.chunk_shape(&index).ok()?;
        full.iter()
            .zip(region)
            .all(|(f, r)| f.get() == r.len() as u64)
            .then_some(index)
    }
}

impl ZarrSource {
    /// The grid indices of the stored chunks (shards) `region` touches, last axis fastest.
    fn touched(&self, region: &[Range<usize>]) -> Vec<Vec<u64>> {
        let axes: Vec<Vec<u64>> = region
            .iter()
            .enumerate()
            .map(|(ax, r)| {
                let offsets = self.chunks.offsets(ax);
                let sizes = self.chunks.axis(ax);
                (0..sizes.len())
                    .filter(|&k| offsets[k] < r.end && offsets[k] + sizes[k] > r.start)
                    .map(|k| k as u64)
                    .collect()
            })
            .collect();
        let mut out = vec![Vec::new()];
        for along in &axes {
            out = out
                .iter()
                .flat_map(|prefix| {
                    along.iter().map(move |&k| {
                        let mut index = prefix.clone();
                        index.push(k);
                        index
                    })
                })
                .collect();
        }
        out
    }

    /// Checks, after a read of `region`, that none of the stored chunks it touches changed
    /// since the array was opened. On the local file system: a chunk file's status-change
    /// time is later than the opening, or the file is missing and the directory that held
    /// it was changed after the opening (file systems stamp times from a clock a tick
    /// behind the real one, so a change in the same tick as the opening may pass; a chunk
    /// never written whose directory gained or lost another chunk since is taken as
    /// changed too). On an object
    /// store: a chunk object the read met replaced, removed or added
    /// ([`super::versions`]). A change never fails a read that does not touch it.
    ///
    /// # Errors
    /// [`Error::FileChanged`] naming the chunk file or object.
    fn check_chunks(&self, region: &[Range<usize>]) -> Result<()> {
        #[cfg(feature = "object-store")]
        if let Some((versions, root)) = self.versions.as_ref().filter(|(v, _)| v.any_changed()) {
            let keys: Vec<String> = self
                .touched(region)
                .iter()
                .map(|index| self.array.chunk_key(index).as_str().to_string())
                .collect();
            versions.check(root, &self.location, &keys)?;
        }
        #[cfg(unix)]
        if let Some((root, array_dir, opened)) = &self.chunk_files {
            use std::os::unix::fs::MetadataExt;
            let stamp = |meta: &std::fs::Metadata| {
                std::time::UNIX_EPOCH
                    + std::time::Duration::new(
                        u64::try_from(meta.ctime()).unwrap_or(0),
                        u32::try_from(meta.ctime_nsec()).unwrap_or(0),
                    )
            };
            for index in self.touched(region) {
                let path = root.join(self.array.chunk_key(&index).as_str());
                let changed = match std::fs::metadata(&path) {
                    Ok(meta) => (stamp(&meta) > *opened).then_some("written"),
                    // Never written (it reads as the fill value), or removed since the
                    // opening: a removal stamps the directory that held the file, and the
                    // removal of that directory its parent, up to the array's own.
                    Err(_) => {
                        let mut dir = path.parent();
                        loop {
                            match dir {
                                Some(d) if d.starts_with(array_dir) => match std::fs::metadata(d) {
                                    Ok(meta) => {
                                        break (stamp(&meta) > *opened).then_some("removed")
                                    }
                                    Err(_) if d == array_dir.as_path() => break Some("removed"),
                                    Err(_) => dir = d.parent(),
                                },
                                _ => break None,
                            }
                        }
                    }
                };
                if let Some(how) = changed {
                    return Err(Error::FileChanged {
                        path: path.display().to_string(),
                        detail: format!(
                            "a chunk of {} was {how} after the array was opened, so \
                             this result would mix two versions; open the array again",
                            self.location
                        ),
                    });
                }
            }
        }
        #[cfg(not(unix))]
        let _ = region;
        Ok(())
    }
}

impl BlockSource for ZarrSource {
    fn describe(&self) -> String {
        format!("zarr {}", self.location)
    }

    fn read(&self, region: &[Range<usize>]) -> Result<HostArray> {
        if let Some((path, identity)) = &self.metadata {
            let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
            identity.check(path, &f)?;
        }
        let block = self.read_chunks(region);
        // Checked first: a changed object explains a failed read (the server refused the
        // old version).
        self.check_chunks(region)?;
        block
    }

    fn plan_note(&self) -> Option<String> {
        self.note.clone()
    }
}

impl ZarrSource {
    /// The values of `region`, decoded from the stored chunks it touches.
    fn read_chunks(&self, region: &[Range<usize>]) -> Result<HostArray> {
        let shape: Vec<usize> = region.iter().map(|r| r.len()).collect();
        let subset = ArraySubset::new_with_ranges(
            &region
                .iter()
                .map(|r| r.start as u64..r.end as u64)
                .collect::<Vec<_>>(),
        );
        let fail = |e: zarrs::array::ArrayError| Error::Storage {
            location: self.location.clone(),
            detail: super::store::explain(format!("reading {region:?}: {e}")),
        };
        let whole = self.whole_chunk(region);
        if let (Some(index), Some(compressor)) = (&whole, self.direct) {
            // A chunk never written is the fill value: zarrs fills it below.
            if let Some(encoded) = self
                .array
                .retrieve_encoded_chunk(index)
                .map_err(|e| fail(zarrs::array::ArrayError::StorageError(e)))?
            {
                return super::direct::decode(compressor, &encoded, self.dtype, &shape).map_err(
                    |detail| Error::Storage {
                        location: self.location.clone(),
                        detail: format!("reading {region:?}: {detail}"),
                    },
                );
            }
        }
        dispatch_dtype!(self.dtype, T => {
            let values: Vec<T> = match &whole {
                Some(index) => self.array.retrieve_chunk_opt(index, &one_thread()).map_err(fail)?,
                None => self
                    .array
                    .retrieve_array_subset_opt(&subset, &one_thread())
                    .map_err(fail)?,
            };
            let a = ArrayD::from_shape_vec(IxDyn(&shape), values).map_err(|e| {
                Error::Internal(format!("zarr block {region:?} of {}: {e}", self.location))
            })?;
            Ok(T::wrap(a))
        })
    }
}

//! Writing an array as a Zarr array, each chunk from the task that computes it, the
//! metadata last.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_array::{Array, BlockSink, StoreSummary};
use tessera_core::dispatch_dtype;
use tessera_core::dtype::{DType, Scalar};
use tessera_core::error::{Error, Result};
use tessera_core::host::{HostArray, HostElement};
use zarrs::array::{Array as ZArray, ArrayMetadata, ArrayMetadataOptions};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::{
    ReadableWritableListableStorage, ReadableWritableListableStorageTraits, StoreKey, StorePrefix,
};

use super::store::{node_path, ZarrStore};

/// The Zarr format version to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZarrFormat {
    /// Zarr v2 (`.zarray`, chunk keys `i.j`): what zarr-python 2 and most existing
    /// datasets use.
    V2,
    /// Zarr v3 (`zarr.json`, chunk keys `c/i/j`), with sharding available.
    #[default]
    V3,
}

/// Blosc's inner compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BloscCompressor {
    /// LZ4 (fast; zarr-python's default).
    Lz4,
    /// LZ4 HC.
    Lz4hc,
    /// Blosc's own LZ.
    Blosclz,
    /// Zstandard.
    Zstd,
    /// zlib.
    Zlib,
}

impl BloscCompressor {
    fn name(self) -> &'static str {
        match self {
            BloscCompressor::Lz4 => "lz4",
            BloscCompressor::Lz4hc => "lz4hc",
            BloscCompressor::Blosclz => "blosclz",
            BloscCompressor::Zstd => "zstd",
            BloscCompressor::Zlib => "zlib",
        }
    }
}

/// How chunks are compressed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compression {
    /// Raw little-endian bytes.
    None,
    /// Zstandard at `level` (1..=22; 3 is zstd's default).
    Zstd {
        /// Compression level.
        level: i32,
    },
    /// gzip at `level` (0..=9).
    Gzip {
        /// Compression level.
        level: u32,
    },
    /// Blosc with byte shuffling (`shuffle`) at `clevel` (0..=9).
    Blosc {
        /// The inner compressor.
        cname: BloscCompressor,
        /// Compression level.
        clevel: u8,
        /// Byte-shuffle before compressing (what makes Blosc good on numbers).
        shuffle: bool,
    },
}

impl Default for Compression {
    fn default() -> Self {
        Compression::Zstd { level: 3 }
    }
}

/// How [`to_zarr`] writes.
#[derive(Debug, Clone, Default)]
pub struct ZarrWriteOptions {
    /// Format version (default v3).
    pub format: ZarrFormat,
    /// The stored chunk shape (the shard shape when `shard_inner` is set). Default: the
    /// array's largest block; the array is rechunked to it when its blocks differ, so
    /// that every chunk is written whole by one task.
    pub chunks: Option<Vec<usize>>,
    /// v3 only: store each chunk as a shard of inner chunks of this shape (each a
    /// divisor of `chunks`), so readers can fetch inner chunks alone.
    pub shard_inner: Option<Vec<usize>>,
    /// Compression of each (inner) chunk.
    pub compression: Compression,
    /// The fill value recorded in the metadata (default zero, or `false`).
    pub fill_value: Option<Scalar>,
    /// Replace an array or group already at the path (default: refuse).
    pub overwrite: bool,
    /// Names of the dimensions (v3 metadata `dimension_names`; xarray reads them).
    pub dimension_names: Option<Vec<String>>,
}

/// Writes `array` as the Zarr array `path` of `store`: every chunk is encoded and stored
/// by the task that computes it (the array is never whole in memory), and the metadata
/// is written only after every chunk, so an interrupted or failed write leaves no array
/// that opens (and its chunks are removed). Returns the blocks written and the bytes the
/// array takes in the store (compressed chunks and metadata, counted once at the end).
///
/// With `overwrite`, an array or group already at `path` is replaced only once the new
/// one is complete: the new array is written beside it and then swapped in, so a write
/// that fails leaves the old array as it was, and at every instant a complete old or a
/// complete new copy exists.
///
/// - On a local directory the new array is staged in a hidden sibling directory (of the
///   node's directory, or of the store's directory for the root node, `path` `""`) and
///   swapped in by two renames; a writer killed between them leaves the old copy set
///   aside, and the next write into that directory puts it back
///   ([`crate::leftovers::sweep`]).
/// - Elsewhere (an object store, memory) there is no rename: the new array is staged
///   under a hidden node, then the old metadata is removed (the node stops opening, so no
///   reader sees old metadata over new chunks), the old keys the new array does not
///   replace are removed, the staged chunks copied in, and the metadata written last. If
///   that switch fails midway, the staged copy is kept and the error names it.
///
/// # Errors
/// An array or group already at `path` without `overwrite`; invalid options (chunks of
/// the wrong rank or with a zero, sharding in v2, inner chunks that do not divide the
/// chunks, a fill value of another dtype); the plan's errors; the store's errors.
pub fn to_zarr(
    array: &Array,
    store: &ZarrStore,
    path: &str,
    options: &ZarrWriteOptions,
) -> Result<StoreSummary> {
    let node = node_path(path);
    let location = store.describe(&node);
    let shape = array.shape();
    let chunks = match &options.chunks {
        Some(c) => c.clone(),
        None => array
            .chunks()
            .max_block_shape()
            .iter()
            .map(|&d| d.max(1))
            .collect(),
    };
    let invalid = |detail: String| Error::invalid("to_zarr", format!("{location}: {detail}"));
    if chunks.len() != shape.len() || chunks.contains(&0) {
        return Err(invalid(format!(
            "chunks {chunks:?} for a {}-d array: give one positive size per axis",
            shape.len()
        )));
    }
    let metadata = metadata_json(array.dtype(), &shape, &chunks, options).map_err(invalid)?;
    let metadata: ArrayMetadata = serde_json::from_value(metadata)
        .map_err(|e| Error::Internal(format!("zarr metadata for {location}: {e}")))?;

    let storage = store.storage.clone();
    // Over the ranks of a job every rank writes its chunks into the one store, and rank 0
    // alone replaces what is there and writes the metadata (see `crate::ranks`).
    let ranks = crate::ranks::several()?;
    if ranks.is_some() && !store.shared {
        tessera_runtime::cluster::refuse_distributed_write(&format!("to_zarr {location}"))?;
    }
    let root = ranks.as_ref().is_none_or(|c| c.rank() == 0);
    // Rank 0 decides where the chunks go: `node` itself, or a staging place when an old
    // array must survive until the new one is complete.
    let prepare = || -> Result<Vec<u8>> {
        // What killed writers left beside the node goes first; a set-aside old copy that
        // is the only one is put back, so `holds_node` below sees it.
        if let Some(dir) = store.root.as_ref().map(|r| sweep_home(r, &node)) {
            crate::leftovers::sweep(&dir);
        }
        if !holds_node(storage.as_ref(), &node)? {
            return Ok(Staged::InPlace.encode());
        }
        if !options.overwrite {
            return Err(invalid(
                "already holds a Zarr array or group; set `overwrite` to replace it".into(),
            ));
        }
        let staged = staging_for(store, &node)?;
        if let Staged::Node(stage) = &staged {
            erase(storage.as_ref(), stage, &location)?;
        }
        Ok(staged.encode())
    };
    let staged = Staged::decode(&crate::ranks::once(ranks.as_deref(), prepare)?)?;
    let (target_storage, target) = match &staged {
        Staged::InPlace => (storage.clone(), node.clone()),
        Staged::Node(stage) => (storage.clone(), stage.clone()),
        Staged::Dir(dir) => {
            let fs = FilesystemStore::new(dir).map_err(|e| Error::Storage {
                location: location.clone(),
                detail: format!("cannot stage the new array in {}: {e}", dir.display()),
            })?;
            let fs: ReadableWritableListableStorage = Arc::new(fs);
            (fs, "/".to_string())
        }
    };
    if let Some(cluster) = ranks.as_deref() {
        every_rank_sees(cluster, target_storage.as_ref(), &target, &location)?;
    }
    let zarray =
        ZArray::new_with_metadata(target_storage.clone(), &target, metadata).map_err(|e| {
            Error::Storage {
                location: location.clone(),
                detail: format!("the metadata is not valid: {e}"),
            }
        })?;
    let zarray = Arc::new(zarray);

    let regular = tessera_core::chunks::Chunks::regular(&shape, &chunks);
    let input = if *array.chunks() == regular {
        array.clone()
    } else {
        array.rechunk(chunks.as_slice())?
    };
    let sink = ZarrSink {
        array: zarray.clone(),
        location: location.clone(),
        dtype: array.dtype(),
        chunks: chunks.clone(),
        shared: store.shared,
    };
    // Set once the switch of a staged array into `node` began on an object store or in
    // memory: from then on the staged copy may be the only complete one, and stays.
    let switching = std::sync::atomic::AtomicBool::new(false);
    let commit = || -> Result<Vec<u8>> {
        let fail = |what: &str, e: String| Error::Storage {
            location: location.clone(),
            detail: super::store::explain(format!("{what}: {e}")),
        };
        let opts = ArrayMetadataOptions::default().with_include_zarrs_metadata(false);
        zarray
            .store_metadata_opt(&opts)
            .map_err(|e| fail("writing the metadata", e.to_string()))?;
        match &staged {
            Staged::InPlace => {}
            Staged::Node(stage) => match &store.root {
                Some(root) => swap_dirs(
                    &root.join(node.trim_start_matches('/')),
                    &root.join(stage.trim_start_matches('/')),
                    &location,
                )?,
                None => {
                    switching.store(true, std::sync::atomic::Ordering::SeqCst);
                    switch_keys(storage.as_ref(), &node, stage, &location)?;
                }
            },
            Staged::Dir(dir) => {
                let home = store.root.as_ref().ok_or_else(|| {
                    Error::Internal(format!(
                        "a staged directory for {location}, not a local store"
                    ))
                })?;
                swap_dirs(home, dir, &location)?;
            }
        }
        // One listing for the whole array (not a request per chunk on an object store).
        let bytes = storage
            .size_prefix(&node_prefix(&node)?)
            .map_err(|e| fail("sizing what was written", e.to_string()))?;
        Ok(bytes.to_le_bytes().to_vec())
    };
    let written = input.store(Arc::new(sink)).and_then(|summary| {
        let bytes = crate::ranks::once(ranks.as_deref(), commit)?;
        let bytes = <[u8; 8]>::try_from(bytes.as_slice()).map_err(|_| {
            Error::Internal(format!("the size of {location} as {} bytes", bytes.len()))
        })?;
        Ok(StoreSummary {
            bytes: u64::from_le_bytes(bytes),
            ..summary
        })
    });
    if written.is_err() && root && !switching.load(std::sync::atomic::Ordering::SeqCst) {
        // Chunks without metadata read as nothing; remove them too (the staged ones, when
        // an old array is kept).
        match &staged {
            Staged::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            _ => {
                let _ = erase(target_storage.as_ref(), &target, &location);
            }
        }
    }
    written
}

/// Where the chunks of a write go.
enum Staged {
    /// Into the node itself (nothing was there to keep).
    InPlace,
    /// Into this hidden node of the same store, swapped in when complete.
    Node(String),
    /// Into this hidden directory beside a local store's directory (the root node of a
    /// local store, which has no sibling node), swapped in when complete.
    Dir(PathBuf),
}

impl Staged {
    /// As rank 0 sends it to the other ranks of a job.
    fn encode(&self) -> Vec<u8> {
        match self {
            Staged::InPlace => Vec::new(),
            Staged::Node(n) => format!("node:{n}").into_bytes(),
            Staged::Dir(d) => format!("dir:{}", d.display()).into_bytes(),
        }
    }

    fn decode(bytes: &[u8]) -> Result<Staged> {
        let s = std::str::from_utf8(bytes)
            .map_err(|e| Error::Internal(format!("a zarr staging place: {e}")))?;
        if s.is_empty() {
            Ok(Staged::InPlace)
        } else if let Some(n) = s.strip_prefix("node:") {
            Ok(Staged::Node(n.to_string()))
        } else if let Some(d) = s.strip_prefix("dir:") {
            Ok(Staged::Dir(PathBuf::from(d)))
        } else {
            Err(Error::Internal(format!("a zarr staging place {s:?}")))
        }
    }
}

/// The directory whose leftovers concern `node` of the local store at `root`: the node
/// directory's parent (the store directory's parent for the root node).
fn sweep_home(root: &Path, node: &str) -> PathBuf {
    // `root.join("")` is `root/`, whose parent is `root` itself: the root node's own
    // directory goes through `root`.
    let dir = match node.trim_matches('/') {
        "" => root.to_path_buf(),
        rest => root.join(rest),
    };
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Where a replacement of `node` is staged: a hidden sibling node, or for the root node
/// of a local store a hidden sibling directory of the store's directory (for the root of
/// an object store or memory, a hidden node under the root, which the switch skips).
fn staging_for(store: &ZarrStore, node: &str) -> Result<Staged> {
    let base = node.trim_start_matches('/').trim_end_matches('/');
    let staging = |name: &str| crate::leftovers::name(name, crate::leftovers::Kind::Staging);
    if !base.is_empty() {
        let (parent, name) = match base.rsplit_once('/') {
            Some((p, n)) => (format!("/{p}/"), n),
            None => ("/".to_string(), base),
        };
        return Ok(Staged::Node(format!("{parent}{}", staging(name))));
    }
    let Some(root) = &store.root else {
        return Ok(Staged::Node(format!("/{}", staging("root"))));
    };
    let abs = std::path::absolute(root).map_err(|e| Error::io(root, e))?;
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(Error::invalid(
            "to_zarr",
            format!(
                "{}: a store at the file system's root cannot be replaced safely; write the                  array as a named component (path \"data\") instead",
                root.display()
            ),
        ));
    };
    Ok(Staged::Dir(parent.join(staging(&name.to_string_lossy()))))
}

/// Replaces the directory `dir` by the complete one staged at `new`: `dir` is renamed
/// aside, `new` renamed into place (the old one is put back if that fails), and the old
/// one removed. A writer killed between the renames leaves the old copy set aside, which
/// the next write into the directory puts back ([`crate::leftovers::sweep`]).
fn swap_dirs(dir: &Path, new: &Path, location: &str) -> Result<()> {
    let fail = |what: &str, e: std::io::Error| Error::Storage {
        location: location.to_string(),
        detail: format!("{what}: {e}"),
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "zarr".to_string());
    let old = dir.with_file_name(crate::leftovers::name(&name, crate::leftovers::Kind::Old));
    std::fs::rename(dir, &old).map_err(|e| fail("moving the old array aside", e))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(&old, dir);
        return Err(fail("moving the new array into place", e));
    }
    // The new array is in place; the old one is only garbage now.
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

/// The names Zarr metadata documents have (v3, v2, consolidated).
const METADATA_NAMES: [&str; 5] = ["zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"];

fn is_metadata(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    METADATA_NAMES.contains(&name)
}

/// Switches `node` of a store without renames (an object store, memory) to the complete
/// array staged at `staged`, keeping a complete copy at every instant: the staged one is
/// complete before anything of `node` is touched and is removed last. In order: the old
/// metadata goes (the node stops opening, so no reader meets old metadata over new
/// chunks), then the old keys the new array does not replace (a chunk the new array
/// leaves unwritten must read as its fill value, not as old data), then the staged
/// chunks are copied in, the metadata last, and the staged copy removed. Hidden entries
/// of tessera's under `node` (other writes' stagings) are never touched.
///
/// # Errors
/// A listing, copy or removal that fails; the message names the staged copy, which is
/// kept whole.
fn switch_keys(
    storage: &dyn ReadableWritableListableStorageTraits,
    node: &str,
    staged: &str,
    location: &str,
) -> Result<()> {
    let from = node_prefix(staged)?;
    let to = node_prefix(node)?;
    let kept = || {
        format!(
            "; the complete new array is kept at {staged} of the store (the array at \
             {location} no longer opens): write again, or copy it from there"
        )
    };
    let fail = |what: &str, e: String| Error::Storage {
        location: location.to_string(),
        detail: super::store::explain(format!("{what}: {e}{}", kept())),
    };
    let list = |p: &StorePrefix, what: &str| {
        storage
            .list_prefix(p)
            .map_err(|e| fail(what, e.to_string()))
    };
    let staged_keys = list(&from, "listing the staged array")?;
    let rel = |key: &StoreKey, base: &StorePrefix| key.as_str()[base.as_str().len()..].to_string();
    let incoming: std::collections::HashSet<String> =
        staged_keys.iter().map(|k| rel(k, &from)).collect();
    let ours = |rest: &str| {
        let first = rest.split('/').next().unwrap_or(rest);
        first.starts_with('.') && crate::leftovers::is_temporary(first)
    };
    let old: Vec<StoreKey> = list(&to, "listing the old array")?
        .into_iter()
        .filter(|k| !ours(&rel(k, &to)))
        .collect();
    let key = |s: String| StoreKey::new(s).map_err(|e| Error::invalid("to_zarr", e.to_string()));
    let (old_meta, old_rest): (Vec<_>, Vec<_>) =
        old.into_iter().partition(|k| is_metadata(k.as_str()));
    for k in old_meta
        .iter()
        .chain(old_rest.iter().filter(|k| !incoming.contains(&rel(k, &to))))
    {
        storage
            .erase(k)
            .map_err(|e| fail("removing the old array", e.to_string()))?;
    }
    let (meta, chunks): (Vec<_>, Vec<_>) =
        staged_keys.iter().partition(|k| is_metadata(k.as_str()));
    for k in chunks.into_iter().chain(meta) {
        let bytes = storage
            .get(k)
            .map_err(|e| fail("reading a staged key", e.to_string()))?
            .ok_or_else(|| fail("reading a staged key", format!("{k} vanished")))?;
        storage
            .set(&key(format!("{}{}", to.as_str(), rel(k, &from)))?, bytes)
            .map_err(|e| fail("writing the new array", e.to_string()))?;
    }
    erase(storage, staged, location)
}

/// Checks that every rank of the job reaches the store rank 0 writes into: rank 0 puts a
/// probe key under `target`, every rank reads it back, the ranks agree, and rank 0 removes
/// it. A node-local path on a multi-node job (every rank's blocks would land on its own
/// disk and read back as the fill value) fails the write on every rank, naming the rank.
fn every_rank_sees(
    cluster: &tessera_runtime::cluster::Cluster,
    storage: &dyn ReadableWritableListableStorageTraits,
    target: &str,
    location: &str,
) -> Result<()> {
    let base = target.trim_start_matches('/');
    let name = if base.is_empty() {
        ".tessera-rank-probe".to_string()
    } else {
        format!("{base}/.tessera-rank-probe")
    };
    let key = StoreKey::new(name).map_err(|e| Error::invalid("to_zarr", e.to_string()))?;
    let token = crate::ranks::once(Some(cluster), || {
        let token = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        )
        .into_bytes();
        storage
            .set(&key, token.clone().into())
            .map_err(|e| Error::Storage {
                location: location.to_string(),
                detail: super::store::explain(format!("writing the rank probe: {e}")),
            })?;
        Ok(token)
    })?;
    let seen = storage.get(&key).ok().flatten();
    let mine = if seen.as_deref() == Some(token.as_slice()) {
        Ok(())
    } else {
        Err(Error::invalid(
            "to_zarr",
            format!(
                "rank {} does not see the store {location} that rank 0 writes into: under \
                 scheduler = \"mpi\" write to a filesystem every rank shares (NFS, Lustre, \
                 GPFS) or an object store, not a node-local path",
                cluster.rank()
            ),
        ))
    };
    let agreed = crate::ranks::agree(cluster, mine);
    let removed = crate::ranks::once(Some(cluster), || {
        storage.erase(&key).map_err(|e| Error::Storage {
            location: location.to_string(),
            detail: format!("removing the rank probe: {e}"),
        })?;
        Ok(Vec::new())
    });
    agreed.and(removed.map(|_| ()))
}

/// Computes `array` into a Zarr array held in memory, compressed with `compression`, and
/// returns an array over it with the same chunks, and what was stored (its `bytes` are
/// the compressed size): the seed's compressed `persist`, where data that does not fit in
/// memory raw fits compressed and each block is decompressed by the task that reads it.
///
/// # Errors
/// Those of [`to_zarr`].
pub fn persist_compressed(
    array: &Array,
    compression: Compression,
) -> Result<(Array, StoreSummary)> {
    let store = ZarrStore::memory();
    let options = ZarrWriteOptions {
        compression,
        ..ZarrWriteOptions::default()
    };
    let summary = to_zarr(array, &store, "persisted", &options)?;
    let chunks: Vec<usize> = array.chunks().max_block_shape().to_vec();
    let a = super::from_zarr(&store, "persisted", None, Some(array.backend_name()))?;
    let a = if a.chunks() == array.chunks() {
        a
    } else {
        a.rechunk(chunks.as_slice())?
    };
    Ok((a, summary))
}

/// True when `node` holds array or group metadata (v2 or v3).
fn holds_node(storage: &dyn ReadableWritableListableStorageTraits, node: &str) -> Result<bool> {
    let base = node.trim_start_matches('/');
    for name in ["zarr.json", ".zarray", ".zgroup"] {
        let key = if base.is_empty() {
            name.to_string()
        } else {
            format!("{base}/{name}")
        };
        let key = StoreKey::new(key).map_err(|e| Error::invalid("to_zarr", e.to_string()))?;
        let found = storage.size_key(&key).map_err(|e| Error::Storage {
            location: node.to_string(),
            detail: super::store::explain(e.to_string()),
        })?;
        if found.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The store prefix of everything under `node`.
fn node_prefix(node: &str) -> Result<StorePrefix> {
    let base = node.trim_start_matches('/');
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{base}/")
    };
    StorePrefix::new(prefix).map_err(|e| Error::invalid("to_zarr", e.to_string()))
}

/// Removes everything under `node`.
fn erase(
    storage: &dyn ReadableWritableListableStorageTraits,
    node: &str,
    location: &str,
) -> Result<()> {
    storage
        .erase_prefix(&node_prefix(node)?)
        .map_err(|e| Error::Storage {
            location: location.to_string(),
            detail: format!("removing the old contents: {e}"),
        })
}

/// The metadata document (v2 `.zarray` or v3 `zarr.json`) for the options.
fn metadata_json(
    dtype: DType,
    shape: &[usize],
    chunks: &[usize],
    options: &ZarrWriteOptions,
) -> std::result::Result<Value, String> {
    let fill = match options.fill_value {
        None => Scalar::zero(dtype),
        Some(v) if v.dtype() == dtype => v,
        Some(v) => {
            return Err(format!(
                "fill value {v:?} is {}, the array is {dtype}",
                v.dtype()
            ))
        }
    };
    let fill = fill_json(fill);
    let item = dtype.size();
    match options.format {
        ZarrFormat::V2 => {
            if options.shard_inner.is_some() {
                return Err("sharding needs Zarr v3 (set format to V3)".into());
            }
            let compressor = match options.compression {
                Compression::None => Value::Null,
                Compression::Zstd { level } => json!({"id": "zstd", "level": level}),
                Compression::Gzip { level } => json!({"id": "gzip", "level": level}),
                Compression::Blosc {
                    cname,
                    clevel,
                    shuffle,
                } => json!({
                    "id": "blosc", "cname": cname.name(), "clevel": clevel,
                    "shuffle": u8::from(shuffle), "blocksize": 0
                }),
            };
            let mut m = json!({
                "zarr_format": 2,
                "shape": shape,
                "chunks": chunks,
                "dtype": crate::npy::descr(dtype),
                "compressor": compressor,
                "fill_value": fill,
                "order": "C",
                "filters": null,
                "dimension_separator": ".",
            });
            if let Some(names) = &options.dimension_names {
                m["attributes"] = json!({"_ARRAY_DIMENSIONS": names});
            }
            Ok(m)
        }
        ZarrFormat::V3 => {
            let bytes = if item > 1 {
                json!({"name": "bytes", "configuration": {"endian": "little"}})
            } else {
                json!({"name": "bytes"})
            };
            let mut codecs = vec![bytes];
            match options.compression {
                Compression::None => {}
                Compression::Zstd { level } => codecs.push(
                    json!({"name": "zstd", "configuration": {"level": level, "checksum": false}}),
                ),
                Compression::Gzip { level } => {
                    codecs.push(json!({"name": "gzip", "configuration": {"level": level}}))
                }
                Compression::Blosc {
                    cname,
                    clevel,
                    shuffle,
                } => codecs.push(json!({"name": "blosc", "configuration": {
                    "cname": cname.name(), "clevel": clevel,
                    "shuffle": if shuffle { "shuffle" } else { "noshuffle" },
                    "typesize": item, "blocksize": 0
                }})),
            }
            let codecs = match &options.shard_inner {
                None => codecs,
                Some(inner) => {
                    if inner.len() != chunks.len()
                        || inner
                            .iter()
                            .zip(chunks)
                            .any(|(&i, &c)| i == 0 || c % i != 0)
                    {
                        return Err(format!(
                            "inner chunks {inner:?} must divide the shard shape {chunks:?} along every axis"
                        ));
                    }
                    vec![json!({"name": "sharding_indexed", "configuration": {
                        "chunk_shape": inner,
                        "codecs": codecs,
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c"}
                        ],
                        "index_location": "end"
                    }})]
                }
            };
            let mut m = json!({
                "zarr_format": 3,
                "node_type": "array",
                "shape": shape,
                "data_type": dtype.name(),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill,
                "codecs": codecs,
                "attributes": {},
            });
            if let Some(names) = &options.dimension_names {
                m["dimension_names"] = json!(names);
            }
            Ok(m)
        }
    }
}

/// A fill value as Zarr JSON (non-finite floats as the strings the spec names).
fn fill_json(v: Scalar) -> Value {
    match v {
        Scalar::Bool(b) => json!(b),
        Scalar::F32(_) | Scalar::F64(_) => {
            let f = v.as_f64();
            if f.is_nan() {
                json!("NaN")
            } else if f == f64::INFINITY {
                json!("Infinity")
            } else if f == f64::NEG_INFINITY {
                json!("-Infinity")
            } else {
                json!(f)
            }
        }
        Scalar::U64(u) => json!(u),
        other => json!(other.as_i64()),
    }
}

/// Stores whole chunks into the new array.
struct ZarrSink {
    array: Arc<ZArray<dyn ReadableWritableListableStorageTraits>>,
    location: String,
    dtype: DType,
    chunks: Vec<usize>,
    /// The store is one every rank of a job reaches (not memory).
    shared: bool,
}

impl BlockSink for ZarrSink {
    fn describe(&self) -> String {
        format!("zarr {}", self.location)
    }

    fn shared_by_ranks(&self) -> bool {
        self.shared
    }

    fn write(&self, region: &[Range<usize>], data: &HostArray) -> Result<u64> {
        let index: Vec<u64> = region
            .iter()
            .zip(&self.chunks)
            .map(|(r, &c)| (r.start / c) as u64)
            .collect();
        let full: Vec<usize> = region.iter().map(|r| r.len()).collect();
        let fail = |e: zarrs::array::ArrayError| Error::Storage {
            location: self.location.clone(),
            detail: super::store::explain(format!("writing chunk {index:?}: {e}")),
        };
        let edge = full != self.chunks;
        dispatch_dtype!(self.dtype, T => {
            let view = T::view(data).ok_or_else(|| {
                Error::Internal(format!("a {} block for {} of {}", data.dtype(), self.location, self.dtype))
            })?;
            let values: Vec<T> = view.iter().copied().collect();
            if edge {
                // A chunk at the array's edge: the stored chunk is the full chunk shape;
                // store the part inside the array.
                let subset = zarrs::array::ArraySubset::new_with_ranges(
                    &region.iter().map(|r| r.start as u64..r.end as u64).collect::<Vec<_>>(),
                );
                self.array.store_array_subset(&subset, values).map_err(fail)?;
            } else {
                self.array.store_chunk(&index, values).map_err(fail)?;
            }
        });
        // `to_zarr` sizes the whole array once it is written.
        Ok(0)
    }
}

//! Round trips through every format and codec, the commit protocol, and hostile stores.

use std::path::PathBuf;
use std::sync::Arc;

use tessera_array::{Array, Index};
use tessera_core::dtype::{DType, Scalar};
use tessera_core::error::Error;
use tessera_cpu as _;

use super::*;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-zarr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 0..n*m as f64 in a (n, m) array of (cn, cm) blocks.
fn grid(n: usize, m: usize, blocks: [usize; 2]) -> Array {
    Array::arange(0.0, (n * m) as f64, 1.0, DType::F64, n * m, Some("cpu"))
        .unwrap()
        .reshape(&[n as i64, m as i64])
        .unwrap()
        .rechunk(blocks.as_slice())
        .unwrap()
}

fn values(a: &Array) -> Vec<f64> {
    a.compute().unwrap().to_f64_vec()
}

#[test]
fn every_format_and_codec_round_trips_on_disk() {
    let d = dir("codecs");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let x = grid(13, 7, [5, 4]);
    let want = values(&x);
    let codecs = [
        Compression::None,
        Compression::Zstd { level: 3 },
        Compression::Gzip { level: 5 },
        Compression::Blosc {
            cname: BloscCompressor::Lz4,
            clevel: 5,
            shuffle: true,
        },
        Compression::Blosc {
            cname: BloscCompressor::Zstd,
            clevel: 3,
            shuffle: false,
        },
    ];
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        for (k, compression) in codecs.iter().enumerate() {
            let path = format!("{format:?}-{k}");
            let options = ZarrWriteOptions {
                format,
                compression: *compression,
                ..ZarrWriteOptions::default()
            };
            let summary = to_zarr(&x, &store, &path, &options).unwrap();
            assert_eq!(summary.blocks, 6, "{path}");
            let back = from_zarr(&store, &path, None, Some("cpu")).unwrap();
            assert_eq!(back.shape(), vec![13, 7]);
            assert_eq!(back.chunks().sizes(), x.chunks().sizes(), "{path}");
            assert_eq!(values(&back), want, "{path}");
        }
    }
    let meta = d.join("V2-1/.zarray");
    assert!(meta.is_file(), "v2 writes .zarray");
    assert!(d.join("V3-1/zarr.json").is_file(), "v3 writes zarr.json");
    assert!(d.join("V3-1/c/2/1").is_file(), "v3 chunk keys are c/i/j");
    assert!(d.join("V2-1/2.1").is_file(), "v2 chunk keys are i.j");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sharded_arrays_round_trip_and_slices_read_only_touched_shards() {
    let store = ZarrStore::memory();
    let x = grid(40, 30, [40, 30]);
    let options = ZarrWriteOptions {
        chunks: Some(vec![20, 15]),
        shard_inner: Some(vec![5, 5]),
        ..ZarrWriteOptions::default()
    };
    assert_eq!(to_zarr(&x, &store, "s", &options).unwrap().blocks, 4);
    let back = from_zarr(&store, "s", None, Some("cpu")).unwrap();
    assert_eq!(back.chunks().max_block_shape().as_slice(), &[20, 15]);
    assert_eq!(values(&back), values(&x));
    let s = back
        .slice(&[
            Index::slice(Some(22), Some(40), 3),
            Index::slice(None, Some(10), 1),
        ])
        .unwrap();
    let plan = s.explain().unwrap();
    assert!(
        plan.contains("reads 1 block(s) of zarr memory:/s"),
        "{plan}"
    );
    let want: Vec<f64> = (22..40)
        .step_by(3)
        .flat_map(|i| (0..10).map(move |j| (i * 30 + j) as f64))
        .collect();
    assert_eq!(values(&s), want);
}

#[test]
fn every_dtype_and_edge_chunks_round_trip() {
    let store = ZarrStore::memory();
    for dtype in DType::ALL {
        let x = grid(9, 5, [4, 5]).astype(dtype);
        let path = format!("{dtype}");
        to_zarr(&x, &store, &path, &ZarrWriteOptions::default()).unwrap();
        let back = from_zarr(&store, &path, None, Some("cpu")).unwrap();
        assert_eq!(back.dtype(), dtype);
        assert_eq!(values(&back), values(&x), "{dtype}");
    }
}

#[test]
fn requested_chunks_regroup_stored_chunks_and_the_plan_says_when_they_cut_them() {
    let store = ZarrStore::memory();
    let x = grid(12, 12, [4, 4]);
    to_zarr(&x, &store, "x", &ZarrWriteOptions::default()).unwrap();
    let aligned = from_zarr(&store, "x", Some(&[8, 12]), Some("cpu")).unwrap();
    assert_eq!(aligned.chunks().max_block_shape().as_slice(), &[8, 12]);
    let plan = aligned.sum(None, false).unwrap().explain().unwrap();
    assert!(plan.contains("reads 9 block(s)"), "{plan}");
    assert!(!plan.contains("note:"), "{plan}");
    let cut = from_zarr(&store, "x", Some(&[6, 12]), Some("cpu")).unwrap();
    let plan = cut.sum(None, false).unwrap().explain().unwrap();
    assert!(
        plan.contains("reads 9 block(s)"),
        "each stored chunk once: {plan}"
    );
    assert!(
        plan.contains("cut the stored chunks [4, 4] along axes [0]"),
        "{plan}"
    );
    assert_eq!(values(&cut), values(&x));
    let err = from_zarr(&store, "x", Some(&[6]), Some("cpu")).unwrap_err();
    assert!(
        err.to_string().contains("one positive size per axis"),
        "{err}"
    );
}

#[test]
fn an_existing_array_is_kept_unless_overwrite_is_set() {
    let store = ZarrStore::memory();
    let x = grid(4, 4, [2, 2]);
    to_zarr(&x, &store, "a", &ZarrWriteOptions::default()).unwrap();
    let err = to_zarr(&x, &store, "a", &ZarrWriteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("set `overwrite`"), "{err}");
    let doubled = (&x * 2.0).unwrap();
    let options = ZarrWriteOptions {
        overwrite: true,
        chunks: Some(vec![4, 1]),
        ..ZarrWriteOptions::default()
    };
    to_zarr(&doubled, &store, "a", &options).unwrap();
    let back = from_zarr(&store, "a", None, Some("cpu")).unwrap();
    assert_eq!(back.chunks().max_block_shape().as_slice(), &[4, 1]);
    assert_eq!(values(&back), values(&doubled));
}

/// `x` passed through a block function that fails ("the disk is full") on every block
/// whose first value is at least `from`: a write that fails after some blocks were stored.
fn failing_from(x: &Array, from: f64) -> Array {
    Array::map_blocks(
        &[x],
        Arc::new(move |blocks: &[tessera_core::host::HostArray]| {
            if blocks[0].to_f64_vec()[0] >= from {
                Err(Error::invalid("test", "the disk is full"))
            } else {
                Ok(blocks[0].clone())
            }
        }),
        DType::F64,
        None,
    )
    .unwrap()
}

#[test]
fn a_failed_write_leaves_no_array_and_no_chunks() {
    let d = dir("failed");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let failing = failing_from(&grid(8, 8, [2, 8]), 32.0);
    let err = to_zarr(&failing, &store, "x", &ZarrWriteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("the disk is full"), "{err}");
    let err = from_zarr(&store, "x", None, Some("cpu")).unwrap_err();
    assert!(matches!(err, Error::Storage { .. }), "{err}");
    let left: Vec<_> = walk(&d);
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// An overwrite that fails mid-write (a block of the new array errors after others were
/// stored) leaves the old array as it was, on a local directory and in memory alike, and
/// leaves nothing staged behind; one that succeeds replaces it whole.
#[test]
fn a_failed_overwrite_keeps_the_old_array() {
    let d = dir("overwrite");
    let local = ZarrStore::open(d.to_str().unwrap()).unwrap();
    // The store's root node (`path` ""), as Dask's `to_zarr(x, url)` writes it: staged
    // beside the store's directory (or, in memory, under a hidden node) like any other.
    let root_dir = dir("overwrite-root");
    let local_root = ZarrStore::open(root_dir.to_str().unwrap()).unwrap();
    let memory = ZarrStore::memory();
    for (store, path) in [
        (&local, "group/a"),
        (&ZarrStore::memory(), "a"),
        (&local_root, ""),
        (&memory, ""),
    ] {
        let old = grid(8, 8, [2, 8]);
        to_zarr(&old, store, path, &ZarrWriteOptions::default()).unwrap();
        let failing = failing_from(&(&old + 100.0).unwrap(), 132.0);
        let overwrite = ZarrWriteOptions {
            overwrite: true,
            ..ZarrWriteOptions::default()
        };
        let err = to_zarr(&failing, store, path, &overwrite).unwrap_err();
        assert!(err.to_string().contains("the disk is full"), "{err}");
        let back = from_zarr(store, path, None, Some("cpu")).unwrap();
        assert_eq!(values(&back), values(&old), "{path}: the old array changed");
        // A successful overwrite, of another shape and chunking, replaces it whole.
        let new = grid(3, 5, [3, 2]);
        to_zarr(&new, store, path, &overwrite).unwrap();
        let back = from_zarr(store, path, None, Some("cpu")).unwrap();
        assert_eq!((back.shape(), values(&back)), (new.shape(), values(&new)));
    }
    let staged: Vec<PathBuf> = walk(&d)
        .into_iter()
        .filter(|p| {
            let p = p.to_string_lossy();
            p.contains("tessera-staging") || p.contains("tessera-old")
        })
        .collect();
    assert!(staged.is_empty(), "left behind: {staged:?}");
    let beside_root: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(&format!(
                ".{}.",
                root_dir.file_name().unwrap().to_string_lossy()
            ))
        })
        .collect();
    assert!(
        beside_root.is_empty(),
        "left beside the root store: {beside_root:?}"
    );
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&root_dir).unwrap();
}

/// A store over memory whose `set` fails on the `fail_at`-th write outside any staging
/// node (counted from when it is armed): an object store whose third key copy of an
/// overwrite's switch fails.
struct FailingSets {
    inner: zarrs::storage::store::MemoryStore,
    armed: std::sync::atomic::AtomicBool,
    sets: std::sync::atomic::AtomicUsize,
    fail_at: usize,
}

impl zarrs::storage::ReadableStorageTraits for FailingSets {
    fn get_partial_many<'a>(
        &'a self,
        key: &zarrs::storage::StoreKey,
        ranges: zarrs::storage::byte_range::ByteRangeIterator<'a>,
    ) -> Result<zarrs::storage::MaybeBytesIterator<'a>, zarrs::storage::StorageError> {
        self.inner.get_partial_many(key, ranges)
    }
    fn size_key(
        &self,
        key: &zarrs::storage::StoreKey,
    ) -> Result<Option<u64>, zarrs::storage::StorageError> {
        self.inner.size_key(key)
    }
    fn supports_get_partial(&self) -> bool {
        self.inner.supports_get_partial()
    }
}

impl zarrs::storage::ListableStorageTraits for FailingSets {
    fn list(&self) -> Result<zarrs::storage::StoreKeys, zarrs::storage::StorageError> {
        self.inner.list()
    }
    fn list_prefix(
        &self,
        prefix: &zarrs::storage::StorePrefix,
    ) -> Result<zarrs::storage::StoreKeys, zarrs::storage::StorageError> {
        self.inner.list_prefix(prefix)
    }
    fn list_dir(
        &self,
        prefix: &zarrs::storage::StorePrefix,
    ) -> Result<zarrs::storage::StoreKeysPrefixes, zarrs::storage::StorageError> {
        self.inner.list_dir(prefix)
    }
    fn size_prefix(
        &self,
        prefix: &zarrs::storage::StorePrefix,
    ) -> Result<u64, zarrs::storage::StorageError> {
        self.inner.size_prefix(prefix)
    }
}

impl zarrs::storage::WritableStorageTraits for FailingSets {
    fn set(
        &self,
        key: &zarrs::storage::StoreKey,
        value: zarrs::storage::Bytes,
    ) -> Result<(), zarrs::storage::StorageError> {
        use std::sync::atomic::Ordering;
        if self.armed.load(Ordering::SeqCst) && !key.as_str().contains("tessera-staging") {
            let n = self.sets.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.fail_at {
                return Err(zarrs::storage::StorageError::Other(format!(
                    "planted failure of write {n} ({key})"
                )));
            }
        }
        self.inner.set(key, value)
    }
    fn set_partial_many(
        &self,
        key: &zarrs::storage::StoreKey,
        offset_values: zarrs::storage::OffsetBytesIterator<'_>,
    ) -> Result<(), zarrs::storage::StorageError> {
        self.inner.set_partial_many(key, offset_values)
    }
    fn erase(&self, key: &zarrs::storage::StoreKey) -> Result<(), zarrs::storage::StorageError> {
        self.inner.erase(key)
    }
    fn erase_prefix(
        &self,
        prefix: &zarrs::storage::StorePrefix,
    ) -> Result<(), zarrs::storage::StorageError> {
        self.inner.erase_prefix(prefix)
    }
    fn supports_set_partial(&self) -> bool {
        self.inner.supports_set_partial()
    }
}

/// An overwrite on a store without renames (an object store; here memory through the
/// same code) whose switch fails at its third key copy: the complete new array is kept at
/// the staging node the error names, nothing opens as a mix of the two, and writing again
/// completes. Before, the switch erased the old array first and its cleanup erased the
/// staged copy too: both were lost.
#[test]
fn an_overwrite_whose_third_key_copy_fails_keeps_a_complete_copy() {
    use std::sync::atomic::Ordering;
    for (format, path) in [
        (ZarrFormat::V2, "a"),
        (ZarrFormat::V3, "a"),
        (ZarrFormat::V3, ""),
    ] {
        let failing = Arc::new(FailingSets {
            inner: zarrs::storage::store::MemoryStore::new(),
            armed: false.into(),
            sets: 0.into(),
            fail_at: 3,
        });
        let store = ZarrStore {
            storage: failing.clone(),
            location: "memory:".to_string(),
            root: None,
            shared: false,
            #[cfg(feature = "object-store")]
            objects: None,
        };
        let options = ZarrWriteOptions {
            format,
            overwrite: true,
            ..ZarrWriteOptions::default()
        };
        let old = grid(8, 8, [2, 8]);
        to_zarr(&old, &store, path, &options).unwrap();
        let new = (&grid(8, 8, [4, 4]) + 100.0).unwrap();
        failing.armed.store(true, Ordering::SeqCst);
        let err = to_zarr(&new, &store, path, &options).unwrap_err();
        failing.armed.store(false, Ordering::SeqCst);
        let said = err.to_string();
        assert!(said.contains("planted failure of write 3"), "{said}");
        let kept = said
            .split("kept at ")
            .nth(1)
            .and_then(|rest| rest.split(" of the store").next())
            .unwrap_or_else(|| panic!("the error names no kept copy: {said}"));
        let back = from_zarr(&store, kept, None, Some("cpu")).unwrap();
        assert_eq!(
            values(&back),
            values(&new),
            "{format:?} {path:?}: the kept copy"
        );
        // The node itself opens as neither a mix nor the old array over new chunks.
        if let Ok(mixed) = from_zarr(&store, path, None, Some("cpu")) {
            let got = mixed.compute().map(|h| h.to_f64_vec());
            assert!(
                got.as_ref().is_ok_and(|v| *v == values(&new)),
                "{format:?} {path:?}: the node opens as {got:?}"
            );
        }
        to_zarr(&new, &store, path, &options).unwrap();
        let back = from_zarr(&store, path, None, Some("cpu")).unwrap();
        assert_eq!(
            values(&back),
            values(&new),
            "{format:?} {path:?}: written again"
        );
    }
}

/// A chunk file removed after the array was opened: the read that touches it fails with
/// `FileChanged` naming it (it used to read as the fill value), on v2 and v3 layouts; a
/// chunk never written still reads as the fill value.
#[test]
fn a_chunk_removed_after_opening_is_detected() {
    let d = dir("chunk-removed");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let x = grid(4, 4, [2, 2]);
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let opened = written_and_opened(&store, &x, format);
        assert_eq!(values(&opened), values(&x));
        let gone = match format {
            ZarrFormat::V3 => d.join("x/c/1/1"),
            ZarrFormat::V2 => d.join("x/1.1"),
        };
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::remove_file(&gone).unwrap();
        let err = opened.compute().unwrap_err();
        match &err {
            Error::FileChanged { path, detail } => {
                assert!(path.ends_with(gone.to_str().unwrap()), "{format:?}: {err}");
                assert!(detail.contains("removed"), "{format:?}: {err}");
            }
            other => panic!("{format:?}: {other}"),
        }
        let untouched = opened.slice(&[Index::slice(Some(0), Some(2), 1)]).unwrap();
        assert_eq!(values(&untouched), values(&x)[..8].to_vec(), "{format:?}");
    }
    // Zeros are the fill value: zarrs stores no chunk for them, and they read back.
    let zeros = Array::zeros(&[4, 4], DType::F64, [2usize, 2].as_slice(), Some("cpu")).unwrap();
    to_zarr(&zeros, &store, "z", &ZarrWriteOptions::default()).unwrap();
    let z = from_zarr(&store, "z", None, Some("cpu")).unwrap();
    assert_eq!(values(&z), vec![0.0; 16]);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A writer killed between a swap's two renames leaves the old array set aside and no
/// array under its name; a later write of an unrelated file into the same directory puts
/// the old array back (it used to delete both copies).
#[cfg(target_os = "linux")]
#[test]
fn an_unrelated_write_puts_back_an_array_a_killed_swap_set_aside() {
    let d = dir("killed-swap");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let x = grid(6, 4, [2, 4]);
    to_zarr(&x, &store, "x", &ZarrWriteOptions::default()).unwrap();
    to_zarr(
        &(&x + 1.0).unwrap(),
        &store,
        "staged",
        &ZarrWriteOptions::default(),
    )
    .unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let tag = |n: u32| format!("{}-{dead}-{n}", host.trim());
    std::fs::rename(d.join("x"), d.join(format!(".x.tessera-old-{}", tag(0)))).unwrap();
    std::fs::rename(
        d.join("staged"),
        d.join(format!(".x.tessera-staging-{}", tag(1))),
    )
    .unwrap();
    assert!(from_zarr(&store, "x", None, Some("cpu")).is_err());
    crate::npy::to_npy(&x, d.join("unrelated.npy")).unwrap();
    let back = from_zarr(&store, "x", None, Some("cpu")).unwrap();
    assert_eq!(values(&back), values(&x));
    let hidden: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

fn walk(d: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn hostile_stores_give_errors_that_name_the_array() {
    let d = dir("hostile");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    // No array there.
    let err = from_zarr(&store, "missing", None, Some("cpu")).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    // Metadata tessera refuses at open, with what the error must say: a data type it
    // does not hold; a shape too large to plan, refused before a size per chunk is
    // allocated (2^64 - 1 rows in chunks of 2 asked for 2^63 of them); a stored chunk,
    // or a shard index, too large to allocate — zarrs allocates either whole before
    // reading, and a failed allocation ends the process (a 4 × 3 array in shards of
    // 128 × 2^20 inner chunks of 1 × 1). The last three were found by tessera-fuzz.
    let bytes = r#"{"name":"bytes","configuration":{"endian":"little"}}"#;
    let sharded = format!(
        r#"{{"name":"sharding_indexed","configuration":{{"chunk_shape":[1,1],"codecs":[{bytes}],"index_codecs":[{bytes}]}}}}"#
    );
    for (name, shape, dtype, chunk, fill, codecs, says) in [
        (
            "half",
            "[4]",
            "float16",
            "[2]",
            "0.0",
            bytes,
            &["float16", "is not one tessera holds"][..],
        ),
        (
            "huge",
            "[18446744073709551615,3]",
            "float64",
            "[2,2]",
            "\"NaN\"",
            bytes,
            &["huge", "2^60 elements"],
        ),
        (
            "bigchunk",
            "[4,3]",
            "int32",
            "[2,2147483648]",
            "0",
            bytes,
            &["bigchunk", "bytes decoded"],
        ),
        (
            "bigindex",
            "[4,3]",
            "int32",
            "[128,1048576]",
            "0",
            &sharded,
            &["bigindex", "inner chunks"],
        ),
    ] {
        std::fs::create_dir_all(d.join(name)).unwrap();
        std::fs::write(
            d.join(name).join("zarr.json"),
            format!(
                r#"{{"zarr_format":3,"node_type":"array","shape":{shape},"data_type":"{dtype}",
                "chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":{chunk}}}}},
                "chunk_key_encoding":{{"name":"default","configuration":{{"separator":"/"}}}},
                "fill_value":{fill},"codecs":[{codecs}]}}"#
            ),
        )
        .unwrap();
        let err = from_zarr(&store, name, None, Some("cpu"))
            .unwrap_err()
            .to_string();
        assert!(says.iter().all(|s| err.contains(s)), "{name}: {err}");
    }
    // A chunk that does not decode.
    let x = grid(4, 4, [2, 4]);
    let options = ZarrWriteOptions {
        compression: Compression::Zstd { level: 1 },
        ..ZarrWriteOptions::default()
    };
    to_zarr(&x, &store, "bad", &options).unwrap();
    std::fs::write(d.join("bad/c/1/0"), b"not zstd at all").unwrap();
    let a = from_zarr(&store, "bad", None, Some("cpu")).unwrap();
    let err = a.compute().unwrap_err().to_string();
    assert!(
        err.contains("bad") && err.contains("reading [2..4, 0..4]"),
        "{err}"
    );
    // Unsupported URL schemes say what is supported.
    let err = ZarrStore::open("gopher://example/x.zarr")
        .unwrap_err()
        .to_string();
    let said = if cfg!(feature = "object-store") {
        "gopher:// is not an object store tessera opens"
    } else {
        "gopher:// stores need tessera built with the `object-store` feature"
    };
    assert!(err.contains(said), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_array_rewritten_after_opening_is_detected() {
    let d = dir("changed");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let x = grid(4, 4, [2, 2]);
    to_zarr(&x, &store, "x", &ZarrWriteOptions::default()).unwrap();
    let opened = from_zarr(&store, "x", None, Some("cpu")).unwrap();
    let options = ZarrWriteOptions {
        overwrite: true,
        ..ZarrWriteOptions::default()
    };
    to_zarr(&(&x + 1.0).unwrap(), &store, "x", &options).unwrap();
    let err = opened.compute().unwrap_err();
    assert!(matches!(err, Error::FileChanged { .. }), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `x` written to `x` of `store` in `format` (replacing what is there) and opened again.
fn written_and_opened(store: &ZarrStore, x: &Array, format: ZarrFormat) -> Array {
    let options = ZarrWriteOptions {
        format,
        overwrite: true,
        ..ZarrWriteOptions::default()
    };
    to_zarr(x, store, "x", &options).unwrap();
    from_zarr(store, "x", None, Some("cpu")).unwrap()
}

/// A chunk file swapped after the array was opened (another chunk's bytes renamed over
/// it, as a writer mixing two versions would) or rewritten in place: the read that touches
/// it fails naming the chunk, where it would have mixed two versions; the metadata is the
/// same throughout. A slice that touches no changed chunk still reads.
#[test]
fn a_chunk_changed_after_opening_is_detected() {
    let d = dir("chunk-changed");
    let store = ZarrStore::open(d.to_str().unwrap()).unwrap();
    let x = grid(4, 4, [2, 2]);
    for (how, format) in [("renamed", ZarrFormat::V3), ("rewritten", ZarrFormat::V2)] {
        let opened = written_and_opened(&store, &x, format);
        let (a, b) = match format {
            ZarrFormat::V3 => (d.join("x/c/0/0"), d.join("x/c/1/1")),
            ZarrFormat::V2 => (d.join("x/0.0"), d.join("x/1.1")),
        };
        // File systems stamp times from a coarse clock; step past its tick.
        std::thread::sleep(std::time::Duration::from_millis(30));
        if how == "renamed" {
            let staged = d.join("swap.tmp");
            std::fs::copy(&a, &staged).unwrap();
            std::fs::rename(&staged, &b).unwrap();
        } else {
            let bytes = std::fs::read(&b).unwrap();
            std::fs::write(&b, bytes).unwrap();
        }
        let err = opened.compute().unwrap_err();
        match &err {
            Error::FileChanged { path, .. } => {
                assert!(path.ends_with(b.to_str().unwrap()), "{how}: {err}")
            }
            other => panic!("{how}: {other}"),
        }
        let untouched = opened.slice(&[Index::slice(Some(0), Some(2), 1)]).unwrap();
        assert_eq!(values(&untouched), values(&x)[..8].to_vec(), "{how}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn compressed_persist_keeps_values_and_chunks() {
    let x = tessera_array::RandomState::new(3)
        .randint(
            0,
            3,
            DType::I64,
            &[200, 50],
            [50usize, 50].as_slice(),
            Some("cpu"),
        )
        .unwrap()
        .astype(DType::I8);
    let (p, summary) = persist_compressed(
        &x,
        Compression::Blosc {
            cname: BloscCompressor::Lz4,
            clevel: 5,
            shuffle: true,
        },
    )
    .unwrap();
    assert_eq!(p.chunks(), x.chunks());
    assert!(
        summary.bytes < 200 * 50 * 4 / 5,
        "three values as int8 compress below 80% of the raw 10,000 bytes: {summary:?}"
    );
    assert_eq!(values(&p), values(&x));
    let fill = ZarrWriteOptions {
        fill_value: Some(Scalar::F64(f64::NAN)),
        ..ZarrWriteOptions::default()
    };
    let err = to_zarr(&x, &ZarrStore::memory(), "x", &fill).unwrap_err();
    assert!(err.to_string().contains("the array is int8"), "{err}");
}

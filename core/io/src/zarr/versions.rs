//! The versions of a Zarr array's objects on an object store, held from the array's
//! opening to the end of every plan that reads it, so that a chunk object replaced,
//! removed or added in between stops the plan with [`Error::FileChanged`] instead of
//! mixing two versions of the array into one answer.
//!
//! Opening lists every object under the array's prefix (one request per 1,000 objects;
//! rank 0 lists under `scheduler = "mpi"` and the ranks share its list) and keeps each
//! one's ETag, or its modification time where a store gives no ETag. Every read of a
//! chunk then asks for that version — `If-Match` (or `If-Unmodified-Since`), so the
//! server itself refuses an object replaced since, with no extra request. An object that
//! was listed and is gone, or was not listed and is there now, is a change too. Changes
//! are recorded here; a read that touches a changed object reports it, naming the object,
//! and a read that does not is unaffected.
//!
//! Past [`MAX_LISTED`] objects the list is not kept (its memory and the opening's
//! requests would grow with the array) and `explain()` says the chunks are not checked.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use tessera_core::error::{Error, Result};

/// The most objects an opening lists and keeps versions of.
pub(crate) const MAX_LISTED: usize = 100_000;

/// The version of one object as listed.
#[derive(Clone, Debug, PartialEq)]
enum Version {
    /// The object's ETag.
    ETag(String),
    /// Its modification time (seconds and nanoseconds since the epoch), where the store
    /// gives no ETag.
    Modified(i64, u32),
}

/// The objects under an array's prefix at its opening, and the changes met since.
#[derive(Debug)]
pub(crate) struct Versions {
    /// The array's prefix in the store.
    prefix: Path,
    /// Each object listed at the opening, with its version then.
    listed: HashMap<Path, Version>,
    /// The changed objects met so far (keys relative to the store), and how each changed.
    changed: Mutex<HashMap<String, &'static str>>,
}

impl Versions {
    /// Lists the objects under `prefix`; `None` past [`MAX_LISTED`] of them.
    ///
    /// # Errors
    /// The store's listing error, naming `location`.
    pub(crate) fn list(
        store: &Arc<dyn ObjectStore>,
        prefix: &str,
        location: &str,
    ) -> Result<Option<Versions>> {
        let prefix = Path::from(prefix.trim_matches('/'));
        let listed = crate::object::block_on(async {
            let mut listed = HashMap::new();
            let mut stream = store.list(Some(&prefix));
            while let Some(meta) = stream.next().await {
                let meta = meta?;
                if listed.len() == MAX_LISTED {
                    return Ok(None);
                }
                listed.insert(meta.location.clone(), version_of(&meta));
            }
            Ok::<_, object_store::Error>(Some(listed))
        })?
        .map_err(|e| Error::Storage {
            location: location.to_string(),
            detail: super::store::explain(format!("listing the array's objects: {e}")),
        })?;
        Ok(listed.map(|listed| Versions {
            prefix,
            listed,
            changed: Mutex::new(HashMap::new()),
        }))
    }

    /// The list as bytes, for the other ranks.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let items: Vec<(&str, String)> = self
            .listed
            .iter()
            .map(|(k, v)| (k.as_ref(), v.encode()))
            .collect();
        serde_json::to_vec(&(self.prefix.as_ref(), items))
            .map_err(|e| Error::Internal(format!("encoding object versions: {e}")))
    }

    /// The list [`Versions::encode`] made.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Versions> {
        let bad = |e: String| Error::Internal(format!("rank 0's object versions: {e}"));
        let (prefix, items): (String, Vec<(String, String)>) =
            serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        let listed = items
            .into_iter()
            .map(|(k, v)| {
                let key = Path::parse(&k).map_err(|e| bad(e.to_string()))?;
                Version::decode(&v)
                    .map(|v| (key, v))
                    .ok_or_else(|| bad(format!("version {v:?}")))
            })
            .collect::<Result<_>>()?;
        Ok(Versions {
            prefix: Path::parse(&prefix).map_err(|e| bad(e.to_string()))?,
            listed,
            changed: Mutex::new(HashMap::new()),
        })
    }

    /// [`Error::FileChanged`] when one of `keys` (objects a read touched, relative to the
    /// store) was met changed, naming it under `root` (the store's URL).
    ///
    /// # Errors
    /// As above.
    pub(crate) fn check(&self, root: &str, array: &str, keys: &[String]) -> Result<()> {
        let changed = self.changed.lock().unwrap_or_else(|e| e.into_inner());
        match keys.iter().find_map(|k| changed.get(k).map(|how| (k, how))) {
            None => Ok(()),
            Some((key, how)) => Err(Error::FileChanged {
                path: format!("{}/{key}", root.trim_end_matches('/')),
                detail: format!(
                    "this chunk object of {array} {how} after the array was opened, so this \
                     result would mix two versions; open the array again"
                ),
            }),
        }
    }

    /// Whether any change was met: until one is, a read has nothing to look up (and its
    /// chunks' keys need not be made).
    pub(crate) fn any_changed(&self) -> bool {
        !self
            .changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Records `key`'s change.
    fn record(&self, key: &Path, how: &'static str) {
        let mut changed = self.changed.lock().unwrap_or_else(|e| e.into_inner());
        changed.entry(key.as_ref().to_string()).or_insert(how);
    }
}

impl Version {
    /// The version as text: `e:<ETag>` or `m:<seconds>:<nanoseconds>`.
    fn encode(&self) -> String {
        match self {
            Version::ETag(tag) => format!("e:{tag}"),
            Version::Modified(secs, nanos) => format!("m:{secs}:{nanos}"),
        }
    }

    /// The version [`Version::encode`] wrote.
    fn decode(text: &str) -> Option<Version> {
        match text.split_once(':')? {
            ("e", tag) => Some(Version::ETag(tag.to_string())),
            ("m", time) => {
                let (secs, nanos) = time.split_once(':')?;
                Some(Version::Modified(secs.parse().ok()?, nanos.parse().ok()?))
            }
            _ => None,
        }
    }
}

/// `meta`'s version.
fn version_of(meta: &ObjectMeta) -> Version {
    match &meta.e_tag {
        Some(tag) => Version::ETag(tag.clone()),
        None => Version::Modified(
            meta.last_modified.timestamp(),
            meta.last_modified.timestamp_subsec_nanos(),
        ),
    }
}

/// An object store whose reads under the array's prefix ask for the listed versions.
#[derive(Debug)]
pub(crate) struct Pinned {
    inner: Arc<dyn ObjectStore>,
    versions: Arc<Versions>,
}

impl Pinned {
    /// `inner`, its reads pinned to `versions`.
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, versions: Arc<Versions>) -> Pinned {
        Pinned { inner, versions }
    }
}

impl fmt::Display for Pinned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pinned({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Pinned {
    async fn get_opts(
        &self,
        location: &Path,
        mut options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let versions = &self.versions;
        if !location.prefix_matches(&versions.prefix) {
            return self.inner.get_opts(location, options).await;
        }
        let listed = versions.listed.get(location);
        match listed {
            Some(Version::ETag(tag)) => options.if_match = Some(tag.clone()),
            Some(Version::Modified(secs, nanos)) => {
                options.if_unmodified_since = chrono::DateTime::from_timestamp(*secs, *nanos);
            }
            None => {}
        }
        let got = self.inner.get_opts(location, options).await;
        match (&got, listed) {
            (Err(object_store::Error::Precondition { .. }), _) => {
                versions.record(location, "was replaced");
            }
            (Err(object_store::Error::NotFound { .. }), Some(_)) => {
                versions.record(location, "was removed");
            }
            (Ok(_), None) => versions.record(location, "was written"),
            _ => {}
        }
        got
    }

    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn store_with(keys: &[(&str, &str)]) -> Arc<dyn ObjectStore> {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        for (k, v) in keys {
            crate::object::block_on(store.put(&Path::from(*k), v.as_bytes().to_vec().into()))
                .unwrap()
                .unwrap();
        }
        store
    }

    fn get(store: &Pinned, key: &str) -> object_store::Result<Vec<u8>> {
        crate::object::block_on(async {
            let got = store.get(&Path::from(key)).await?;
            Ok(got.bytes().await?.to_vec())
        })
        .unwrap()
    }

    fn pinned(store: &Arc<dyn ObjectStore>, prefix: &str) -> Pinned {
        let versions = Versions::list(store, prefix, "mem://").unwrap().unwrap();
        // Through the encoding the other ranks receive.
        let versions = Versions::decode(&versions.encode().unwrap()).unwrap();
        Pinned::new(store.clone(), Arc::new(versions))
    }

    #[test]
    fn unchanged_objects_read_and_nothing_is_recorded() {
        let store = store_with(&[("x/zarr.json", "{}"), ("x/c/0", "a"), ("y/c/0", "b")]);
        let p = pinned(&store, "x");
        assert_eq!(get(&p, "x/c/0").unwrap(), b"a");
        // Outside the prefix: not pinned, not recorded.
        assert_eq!(get(&p, "y/c/0").unwrap(), b"b");
        let keys = ["x/c/0".to_string(), "y/c/0".to_string()];
        assert!(p.versions.check("mem://", "x", &keys).is_ok());
    }

    #[test]
    fn a_replaced_removed_or_added_object_is_a_change_naming_it() {
        for (change, key, how) in [
            ("replace", "x/c/0", "was replaced"),
            ("remove", "x/c/0", "was removed"),
            ("add", "x/c/1", "was written"),
        ] {
            let store = store_with(&[("x/zarr.json", "{}"), ("x/c/0", "a")]);
            let p = pinned(&store, "x");
            crate::object::block_on(async {
                let path = Path::from(key);
                match change {
                    "remove" => store.delete(&path).await.unwrap(),
                    _ => {
                        store.put(&path, b"new".to_vec().into()).await.unwrap();
                    }
                }
            })
            .unwrap();
            let _ = get(&p, key);
            // A read of other objects is unaffected.
            assert!(p.versions.check("mem://", "x", &["x/c/9".into()]).is_ok());
            let err = p
                .versions
                .check("mem://bucket/", "x", &[key.into()])
                .unwrap_err();
            match &err {
                Error::FileChanged { path, detail } => {
                    assert_eq!(path, &format!("mem://bucket/{key}"), "{change}");
                    assert!(detail.contains(how), "{change}: {detail}");
                }
                other => panic!("{change}: {other}"),
            }
        }
    }

    #[test]
    fn the_listing_stops_past_its_bound() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        crate::object::block_on(async {
            for i in 0..=MAX_LISTED {
                store
                    .put(&Path::from(format!("x/c/{i}")), Vec::new().into())
                    .await
                    .unwrap();
            }
        })
        .unwrap();
        assert!(Versions::list(&store, "x", "mem://").unwrap().is_none());
    }
}

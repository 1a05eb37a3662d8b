//! Where Zarr data lives: a directory on the local file system or memory.
//!
//! A [`ZarrStore`] wraps a `zarrs` store with the location tessera names in plans and
//! errors. Local paths and `file://` URLs open a directory; with the `object-store`
//! feature, `s3://`, `gs://`, `az://` and `http(s)://` URLs open a bucket prefix;
//! [`ZarrStore::memory`] holds chunks compressed in this process (the seed's compressed
//! `persist`).

use std::path::PathBuf;
use std::sync::Arc;

use tessera_core::error::{Error, Result};
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::store::MemoryStore;
use zarrs::storage::ReadableWritableListableStorage;

/// A Zarr store: the hierarchy's root, and how tessera names it.
#[derive(Clone)]
pub struct ZarrStore {
    pub(crate) storage: ReadableWritableListableStorage,
    pub(crate) location: String,
    /// The root directory, for stores on the local file system.
    pub(crate) root: Option<PathBuf>,
    /// Whether other processes reach the same data (a directory, a bucket; not memory):
    /// what lets every rank of a job write into it.
    pub(crate) shared: bool,
    /// The object store under the store's prefix, for stores behind a URL: an opened
    /// array reads through it with its objects' versions pinned ([`super::versions`]).
    #[cfg(feature = "object-store")]
    pub(crate) objects: Option<Arc<dyn object_store::ObjectStore>>,
}

impl std::fmt::Debug for ZarrStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZarrStore({})", self.location)
    }
}

impl ZarrStore {
    /// The store at `location`: a local directory path or a `file://` URL (created when
    /// written to), or, with the `object-store` feature, an object-store URL
    /// (`s3://bucket/prefix`, `gs://`, `az://`, `http(s)://`).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a URL scheme this build cannot open, naming the schemes it
    /// can; [`Error::Storage`] when the directory cannot be used.
    pub fn open(location: &str) -> Result<ZarrStore> {
        let path = match location.split_once("://") {
            None => PathBuf::from(location),
            Some(("file", rest)) => PathBuf::from(rest),
            #[cfg(feature = "object-store")]
            Some(_) => return ZarrStore::open_object(location),
            #[cfg(not(feature = "object-store"))]
            Some((scheme, _)) => {
                return Err(Error::invalid(
                    "zarr store",
                    format!(
                        "'{location}': {scheme}:// stores need tessera built with the `object-store` feature; this build opens local paths and file:// URLs"
                    ),
                ))
            }
        };
        let store = FilesystemStore::new(&path).map_err(|e| Error::Storage {
            location: path.display().to_string(),
            detail: format!("cannot open as a Zarr store: {e}"),
        })?;
        Ok(ZarrStore {
            storage: Arc::new(store),
            location: path.display().to_string(),
            root: Some(path),
            shared: true,
            #[cfg(feature = "object-store")]
            objects: None,
        })
    }

    /// The store at an object-store URL (`s3://bucket/prefix`, ...; see
    /// [`crate::object`]). Nothing is requested until an array is opened or written.
    #[cfg(feature = "object-store")]
    fn open_object(url: &str) -> Result<ZarrStore> {
        let loc = crate::object::parse_url(url)?;
        let prefixed: Arc<dyn object_store::ObjectStore> =
            Arc::new(object_store::prefix::PrefixStore::new(loc.store, loc.path));
        Ok(ZarrStore {
            storage: ZarrStore::over_objects(prefixed.clone())?,
            location: url.trim_end_matches('/').to_string(),
            root: None,
            shared: true,
            objects: Some(prefixed),
        })
    }

    /// `objects` as zarrs storage: its asynchronous requests run on tessera's object-store
    /// runtime, each task waiting on its own.
    ///
    /// # Errors
    /// The runtime could not be started.
    #[cfg(feature = "object-store")]
    pub(crate) fn over_objects(
        objects: Arc<dyn object_store::ObjectStore>,
    ) -> Result<ReadableWritableListableStorage> {
        use zarrs::storage::storage_adapter::async_to_sync::{
            AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
        };
        struct BlockOn(tokio::runtime::Handle);
        impl AsyncToSyncBlockOn for BlockOn {
            fn block_on<F: core::future::Future>(&self, future: F) -> F::Output {
                self.0.block_on(future)
            }
        }
        let store = zarrs_object_store::AsyncObjectStore::new(objects);
        let handle = crate::object::runtime()?.handle().clone();
        Ok(Arc::new(AsyncToSyncStorageAdapter::new(
            Arc::new(store),
            BlockOn(handle),
        )))
    }

    /// A new, empty store in memory.
    pub fn memory() -> ZarrStore {
        ZarrStore {
            storage: Arc::new(MemoryStore::new()),
            location: "memory:".to_string(),
            root: None,
            shared: false,
            #[cfg(feature = "object-store")]
            objects: None,
        }
    }

    /// Where the store is, as plans and errors name it.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// `location/path` of an array in the store.
    pub(crate) fn describe(&self, path: &str) -> String {
        format!("{}{}", self.location.trim_end_matches('/'), path)
    }
}

/// A store's error message in the user's terms (for object stores: an unreachable
/// endpoint, denied access, a missing bucket said as such).
pub(crate) fn explain(message: String) -> String {
    #[cfg(feature = "object-store")]
    return crate::object::describe(&message);
    #[cfg(not(feature = "object-store"))]
    message
}

/// `a/b` or `/a/b` as the absolute node path zarrs expects (`/a/b`; `/` for the root).
pub(crate) fn node_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    format!("/{trimmed}")
}

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
        })
    }

    /// The store at an object-store URL (`s3://bucket/prefix`, ...; see
    /// [`crate::object`]). Nothing is requested until an array is opened or written.
    #[cfg(feature = "object-store")]
    fn open_object(url: &str) -> Result<ZarrStore> {
        use zarrs::storage::storage_adapter::async_to_sync::{
            AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
        };
        struct BlockOn(tokio::runtime::Handle);
        impl AsyncToSyncBlockOn for BlockOn {
            fn block_on<F: core::future::Future>(&self, future: F) -> F::Output {
                self.0.block_on(future)
            }
        }
        let loc = crate::object::parse_url(url)?;
        let prefixed = object_store::prefix::PrefixStore::new(loc.store, loc.path);
        let store = zarrs_object_store::AsyncObjectStore::new(prefixed);
        let handle = crate::object::runtime()?.handle().clone();
        let sync = AsyncToSyncStorageAdapter::new(Arc::new(store), BlockOn(handle));
        Ok(ZarrStore {
            storage: Arc::new(sync),
            location: url.trim_end_matches('/').to_string(),
            root: None,
            shared: true,
        })
    }

    /// A new, empty store in memory.
    pub fn memory() -> ZarrStore {
        ZarrStore {
            storage: Arc::new(MemoryStore::new()),
            location: "memory:".to_string(),
            root: None,
            shared: false,
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

//! Where Zarr data lives: a directory on the local file system or memory.
//!
//! A [`ZarrStore`] wraps a `zarrs` store with the location tessera names in plans and
//! errors. Local paths and `file://` URLs open a directory; [`ZarrStore::memory`] holds
//! chunks compressed in this process (the seed's compressed `persist`).

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
}

impl std::fmt::Debug for ZarrStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZarrStore({})", self.location)
    }
}

impl ZarrStore {
    /// The store at `location`: a local directory path or a `file://` URL (created when
    /// written to).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a URL scheme this build cannot open, naming the schemes it
    /// can; [`Error::Storage`] when the directory cannot be used.
    pub fn open(location: &str) -> Result<ZarrStore> {
        let path = match location.split_once("://") {
            None => PathBuf::from(location),
            Some(("file", rest)) => PathBuf::from(rest),
            Some((scheme, _)) => {
                return Err(Error::invalid(
                    "zarr store",
                    format!(
                        "'{location}': {scheme}:// stores are not supported by this build; use a local path or a file:// URL"
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
        })
    }

    /// A new, empty store in memory.
    pub fn memory() -> ZarrStore {
        ZarrStore {
            storage: Arc::new(MemoryStore::new()),
            location: "memory:".to_string(),
            root: None,
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

/// `a/b` or `/a/b` as the absolute node path zarrs expects (`/a/b`; `/` for the root).
pub(crate) fn node_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    format!("/{trimmed}")
}

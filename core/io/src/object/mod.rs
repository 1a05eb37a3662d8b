//! Object stores — S3 and S3-compatible servers, Google Cloud Storage, Azure Blob Storage,
//! plain HTTP(S) — through the `object_store` crate (feature `object-store`).
//!
//! A URL names a store and a path in it: `s3://bucket/data/x.zarr`, `gs://bucket/...`,
//! `az://container/...` (also `abfs://`), `https://host/path`. Credentials and endpoints
//! come from the standard environment variables of each provider (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, `AWS_REGION`, `GOOGLE_SERVICE_ACCOUNT`,
//! `AZURE_STORAGE_ACCOUNT_NAME`, ...) and from config `storage.*` (`tessera config` lists
//! them), which take precedence. Transient failures (connection errors, 5xx, timeouts of
//! reads) are retried `storage.retries` times with exponential backoff.
//!
//! The clients are asynchronous; tessera's tasks are not. [`block_on`] runs a request on
//! one shared multi-threaded runtime, so many tasks wait on their requests at once while
//! the runtime's threads do the I/O.

mod errors;
mod location;
mod upload;

pub(crate) use errors::describe;
pub use errors::object_error;
pub use location::{parse_url, ObjectLocation};
pub use upload::{delete, write_via_local};

use std::sync::LazyLock;

use tessera_core::error::{Error, Result};

static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tessera-io")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });

/// The shared runtime object-store requests run on.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    RUNTIME
        .as_ref()
        .map_err(|e| Error::Internal(format!("starting the object-store runtime: {e}")))
}

/// Runs `future` (an object-store request) to completion from synchronous code.
///
/// # Errors
/// The runtime could not be started.
pub fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(future))
}

/// Writes `bytes` as the object at `url`, whole (an object store replaces an object
/// atomically: readers see the old or the new one, never a mix).
///
/// # Errors
/// An invalid URL, or the store's refusal (naming the URL).
pub fn put(url: &str, bytes: Vec<u8>) -> Result<()> {
    use object_store::ObjectStoreExt;
    let loc = parse_url(url)?;
    block_on(loc.store.put(&loc.path, bytes.into()))?
        .map(|_| ())
        .map_err(|e| object_error(url, &e))
}

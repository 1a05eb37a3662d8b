//! Writing one destination from every rank of a job (`scheduler = "mpi"`).
//!
//! The writers follow one protocol. Rank 0 prepares the destination (checks that it may
//! be replaced, creates the temporary file) and every rank learns the outcome; every rank
//! writes the blocks it computed into that same destination ([`tessera_array::Array::store`]
//! returns on every rank once every block is written); the ranks agree that their part
//! is durable; rank 0 commits (renames the file, writes the Zarr metadata) and every rank
//! learns the outcome. A failure at any step fails the write on every rank, naming the
//! rank, and rank 0 removes what was written. The destination must be one that every rank
//! reaches — a filesystem they share, an object store; the first step finds out when it
//! is not, and says so.

use std::sync::Arc;

use tessera_runtime::cluster::Cluster;

use crate::error::Result;

/// The job's cluster when this process is one of several ranks.
///
/// # Errors
/// Configuration errors, a transport that cannot open.
pub(crate) fn several() -> Result<Option<Arc<Cluster>>> {
    Ok(tessera_runtime::cluster::current()?.filter(|c| c.size() > 1))
}

/// Runs `f` on rank 0 only; its outcome on every rank (see
/// [`tessera_runtime::cluster::Exchange::on_root`]).
///
/// # Errors
/// `f`'s error, or the exchange's.
pub(crate) fn on_root(cluster: &Cluster, f: impl FnOnce() -> Result<Vec<u8>>) -> Result<Vec<u8>> {
    cluster.begin()?.on_root(0, f)
}

/// `f` run once for the job: here outside one of several ranks, else on rank 0 with its
/// outcome on every rank ([`on_root`]).
///
/// # Errors
/// `f`'s error, or the exchange's.
#[cfg(feature = "zarr")]
pub(crate) fn once(
    cluster: Option<&Cluster>,
    f: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    match cluster {
        Some(c) => on_root(c, f),
        None => f(),
    }
}

/// A value every rank must build alike, decided by rank 0: outside a job of several
/// ranks `here()`'s value; else rank 0 computes it with `here()` and sends its
/// `encode`d form, every other rank rebuilds it with `rebuild`, and the ranks agree —
/// a rank that cannot rebuild it fails the call on every rank, naming itself.
///
/// # Errors
/// `here`'s error (on every rank), a rank's failure to rebuild, the exchanges'.
pub(crate) fn decided_by_root<T>(
    here: impl FnOnce() -> Result<T>,
    encode: impl FnOnce(&T) -> Result<Vec<u8>>,
    rebuild: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    let Some(cluster) = several()? else {
        return here();
    };
    let mut made = None;
    let message = on_root(&cluster, || {
        let value = here()?;
        let bytes = encode(&value)?;
        made = Some(value);
        Ok(bytes)
    })?;
    let value = match made {
        Some(v) => Ok(v),
        None => rebuild(&message),
    };
    match value {
        Ok(v) => agree(&cluster, Ok(())).map(|()| v),
        Err(e) => Err(agree(&cluster, Err(e))
            .err()
            .unwrap_or_else(|| tessera_core::Error::Internal("a failure agreed as done".into()))),
    }
}

/// `Ok` on every rank only when `mine` is `Ok` on every rank (see
/// [`tessera_runtime::cluster::Exchange::agree`]).
///
/// # Errors
/// This rank's error, another rank's (naming it), or the exchange's.
pub(crate) fn agree(cluster: &Cluster, mine: Result<()>) -> Result<()> {
    cluster.begin()?.agree(mine)
}

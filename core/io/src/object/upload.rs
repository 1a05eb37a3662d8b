//! Writing files to object stores: a writer produces local files (atomically, as it does
//! for local paths), and each is then uploaded under its final name — in one request, or
//! as a multipart upload in 8 MiB parts for larger files. An object appears whole or not
//! at all; when one upload of several fails, the objects already uploaded are deleted, so
//! a failed write leaves nothing behind that a reader would take for output.

use std::io::Read;
use std::path::{Path, PathBuf};

use object_store::{ObjectStoreExt, WriteMultipart};
use tessera_core::error::{Error, Result};

use super::{block_on, object_error, parse_url};

/// Parts of a multipart upload, and the largest file uploaded in one request.
const PART: usize = 8 << 20;

/// Writes to the object URL `url` (whose last segment may hold a `*`) through `write`,
/// which is handed the same name in a private local directory and returns the files it
/// wrote there; each is uploaded to the URL of the same name. Returns the URLs written.
///
/// # Errors
/// Those of `write`; the upload's (naming the URL); the local scratch directory's.
pub fn write_via_local(
    url: &str,
    write: impl FnOnce(&str) -> Result<Vec<PathBuf>>,
) -> Result<Vec<PathBuf>> {
    let (dir, name) = url
        .rsplit_once('/')
        .ok_or_else(|| Error::invalid("write", format!("'{url}' names no object")))?;
    if name.is_empty() {
        return Err(Error::invalid(
            "write",
            format!("'{url}' ends with '/': name the object (or a pattern with '*')"),
        ));
    }
    let scratch = std::env::temp_dir().join(format!(
        "tessera-upload-{}-{}",
        std::process::id(),
        next_id()
    ));
    std::fs::create_dir_all(&scratch).map_err(|e| Error::io(&scratch, e))?;
    let result = (|| {
        let local = scratch.join(name);
        let files = write(&local.to_string_lossy())?;
        let mut done: Vec<String> = Vec::with_capacity(files.len());
        for file in &files {
            let file_name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let target = format!("{dir}/{file_name}");
            if let Err(e) = upload(file, &target) {
                for written in &done {
                    let _ = delete(written);
                }
                return Err(e);
            }
            done.push(target);
        }
        Ok(done.into_iter().map(PathBuf::from).collect())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Uploads the local `file` as the object `url`.
fn upload(file: &Path, url: &str) -> Result<()> {
    let loc = parse_url(url)?;
    let size = std::fs::metadata(file)
        .map_err(|e| Error::io(file, e))?
        .len();
    if size <= PART as u64 {
        let bytes = std::fs::read(file).map_err(|e| Error::io(file, e))?;
        return super::put(url, bytes);
    }
    let mut f = std::fs::File::open(file).map_err(|e| Error::io(file, e))?;
    let done: std::result::Result<(), Error> = block_on(async {
        let parts = loc
            .store
            .put_multipart(&loc.path)
            .await
            .map_err(|e| object_error(url, &e))?;
        let mut w = WriteMultipart::new_with_chunk_size(parts, PART);
        let mut buf = vec![0u8; PART];
        loop {
            let n = f.read(&mut buf).map_err(|e| Error::io(file, e))?;
            if n == 0 {
                break;
            }
            w.wait_for_capacity(4)
                .await
                .map_err(|e| object_error(url, &e))?;
            w.write(&buf[..n]);
        }
        w.finish().await.map_err(|e| object_error(url, &e))?;
        Ok(())
    })?;
    done
}

/// Deletes the object `url`.
///
/// # Errors
/// An invalid URL or the store's refusal (a missing object is not an error).
pub fn delete(url: &str) -> Result<()> {
    let loc = parse_url(url)?;
    match block_on(loc.store.delete(&loc.path))? {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(object_error(url, &e)),
    }
}

//! A file a reader reads by byte range, wherever it is: a local path, or (feature
//! `object-store`) an object behind a URL.
//!
//! A [`StoredFile`] records the file's identity when a plan is made — size, modification
//! time and inode for a local file; size and ETag for an object — and every range read
//! checks it (on the open handle locally; with an `If-Match` precondition on objects), so a
//! file replaced while a plan runs is an [`Error::FileChanged`], never rows of two versions.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
#[cfg(feature = "object-store")]
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::identity::FileIdentity;

/// A local or stored-object file, with its identity as planned.
#[derive(Debug, Clone)]
pub struct StoredFile {
    inner: Inner,
    display: String,
}

#[derive(Debug, Clone)]
enum Inner {
    Local {
        path: PathBuf,
        identity: FileIdentity,
    },
    #[cfg(feature = "object-store")]
    Object {
        location: crate::object::ObjectLocation,
        size: u64,
        e_tag: Option<String>,
    },
}

/// What identifies a listed file across the ranks of a job ([`StoredFile::record`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRecord {
    /// The path or URL as listed.
    pub display: String,
    /// The local path, for a local file.
    pub local: Option<PathBuf>,
    /// The path inside the bucket, for an object.
    pub object_path: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Modification time (local files).
    pub modified: Option<std::time::SystemTime>,
    /// ETag (objects).
    pub e_tag: Option<String>,
}

/// True for URLs of object stores (`s3://`, `gs://`, ...): anything with a scheme other
/// than `file://`.
pub fn is_object_url(location: &str) -> bool {
    location
        .split_once("://")
        .is_some_and(|(scheme, _)| scheme != "file" && !scheme.contains(['/', '\\']))
}

/// The error for an object URL in a build without the `object-store` feature.
#[cfg(not(feature = "object-store"))]
pub(crate) fn needs_object_store(location: &str) -> Error {
    Error::invalid(
        "read",
        format!(
            "'{location}': object-store URLs need tessera built with the `object-store` feature"
        ),
    )
}

impl StoredFile {
    /// The file at `location` (a path, a `file://` URL, or an object URL), its identity
    /// taken now.
    ///
    /// # Errors
    /// The file or object does not exist or cannot be reached (naming it).
    pub fn open(location: &str) -> Result<StoredFile> {
        if is_object_url(location) {
            #[cfg(feature = "object-store")]
            return StoredFile::open_object(location);
            #[cfg(not(feature = "object-store"))]
            return Err(needs_object_store(location));
        }
        StoredFile::local(Path::new(
            location.strip_prefix("file://").unwrap_or(location),
        ))
    }

    /// A local file, its identity taken now.
    ///
    /// # Errors
    /// The file cannot be stat'ed.
    pub fn local(path: &Path) -> Result<StoredFile> {
        Ok(StoredFile {
            inner: Inner::Local {
                path: path.to_path_buf(),
                identity: FileIdentity::read(path)?,
            },
            display: path.display().to_string(),
        })
    }

    #[cfg(feature = "object-store")]
    fn open_object(url: &str) -> Result<StoredFile> {
        use object_store::ObjectStoreExt;
        let location = crate::object::parse_url(url)?;
        let meta = crate::object::block_on(location.store.head(&location.path))?
            .map_err(|e| crate::object::object_error(url, &e))?;
        Ok(StoredFile::object_from_meta(url, &location, meta))
    }

    /// An object listed with its metadata (no extra request).
    #[cfg(feature = "object-store")]
    pub(crate) fn object_from_meta(
        url: &str,
        parent: &crate::object::ObjectLocation,
        meta: object_store::ObjectMeta,
    ) -> StoredFile {
        StoredFile {
            inner: Inner::Object {
                location: crate::object::ObjectLocation {
                    store: parent.store.clone(),
                    path: meta.location,
                    url: url.to_string(),
                },
                size: meta.size,
                e_tag: meta.e_tag,
            },
            display: url.to_string(),
        }
    }

    /// The size in bytes as planned.
    pub fn size(&self) -> u64 {
        match &self.inner {
            Inner::Local { identity, .. } => identity.size(),
            #[cfg(feature = "object-store")]
            Inner::Object { size, .. } => *size,
        }
    }

    /// The path or URL, for messages.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The local path, for a local file.
    pub fn local_path(&self) -> Option<&Path> {
        match &self.inner {
            Inner::Local { path, .. } => Some(path),
            #[cfg(feature = "object-store")]
            Inner::Object { .. } => None,
        }
    }

    /// Asks the system to start reading `range` of a local file into its page cache,
    /// so that a read of it soon after finds it there: scans hint the next partition's
    /// byte ranges while decoding the current one, and a file on disk is read ahead
    /// while the cores decode. `posix_fadvise(WILLNEED)` on Linux; nothing for an object
    /// or on other systems. Advisory: it reads nothing into this process, checks nothing,
    /// and what fails is ignored (the read that follows reports it).
    pub fn will_need(&self, range: Range<u64>) {
        #[cfg(target_os = "linux")]
        match &self.inner {
            Inner::Local { path, .. } => {
                let (Ok(start), Ok(len)) = (
                    i64::try_from(range.start),
                    i64::try_from(range.end.saturating_sub(range.start)),
                ) else {
                    return;
                };
                if let Ok(f) = File::open(path) {
                    advise_will_need(&f, start, len);
                }
            }
            #[cfg(feature = "object-store")]
            Inner::Object { .. } => {}
        }
        #[cfg(not(target_os = "linux"))]
        let _ = range;
    }

    /// Bytes `range` of the file (clipped to its planned size), after checking it is still
    /// the file that was planned.
    ///
    /// # Errors
    /// [`Error::FileChanged`] when it was replaced or modified; I/O and store errors
    /// naming the file.
    pub fn read_range(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let end = range.end.min(self.size());
        if range.start >= end {
            return Ok(Vec::new());
        }
        match &self.inner {
            Inner::Local { path, identity } => {
                let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
                identity.check(path, &f)?;
                f.seek(SeekFrom::Start(range.start))
                    .map_err(|e| Error::io(path, e))?;
                let mut buf = Vec::with_capacity((end - range.start) as usize);
                f.take(end - range.start)
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io(path, e))?;
                Ok(buf)
            }
            #[cfg(feature = "object-store")]
            Inner::Object {
                location, e_tag, ..
            } => {
                let options = object_store::GetOptions {
                    if_match: e_tag.clone(),
                    range: Some(object_store::GetRange::Bounded(range.start..end)),
                    ..Default::default()
                };
                let got = crate::object::block_on(async {
                    let r = location.store.get_opts(&location.path, options).await?;
                    r.bytes().await
                })?;
                match got {
                    Ok(bytes) => Ok(bytes.to_vec()),
                    Err(object_store::Error::Precondition { .. }) => Err(Error::FileChanged {
                        path: location.url.clone(),
                        detail: "its ETag changed: the object was replaced".into(),
                    }),
                    Err(e) => Err(crate::object::object_error(&location.url, &e)),
                }
            }
        }
    }

    /// Checks that the file is still the one planned, without reading it: the open
    /// handle's identity locally, a `HEAD` (size and ETag) for an object.
    ///
    /// # Errors
    /// [`Error::FileChanged`] saying what differs; I/O and store errors naming the file.
    pub fn check(&self) -> Result<()> {
        match &self.inner {
            Inner::Local { path, identity } => {
                let f = File::open(path).map_err(|e| Error::io(path, e))?;
                identity.check(path, &f)
            }
            #[cfg(feature = "object-store")]
            Inner::Object {
                location,
                size,
                e_tag,
            } => {
                use object_store::ObjectStoreExt;
                let meta = crate::object::block_on(location.store.head(&location.path))?
                    .map_err(|e| crate::object::object_error(&location.url, &e))?;
                if meta.size != *size || (e_tag.is_some() && meta.e_tag != *e_tag) {
                    return Err(Error::FileChanged {
                        path: location.url.clone(),
                        detail: format!(
                            "it was replaced (size {} -> {} bytes, ETag {:?} -> {:?})",
                            size, meta.size, e_tag, meta.e_tag
                        ),
                    });
                }
                Ok(())
            }
        }
    }

    /// The file as another rank of a job needs it to take part in the same plan without
    /// listing or requesting anything (see [`crate::glob::expand`]).
    pub(crate) fn record(&self) -> FileRecord {
        match &self.inner {
            Inner::Local { path, identity } => FileRecord {
                display: self.display.clone(),
                local: Some(path.clone()),
                object_path: None,
                size: identity.size(),
                modified: identity.modified(),
                e_tag: None,
            },
            #[cfg(feature = "object-store")]
            Inner::Object {
                location,
                size,
                e_tag,
            } => FileRecord {
                display: self.display.clone(),
                local: None,
                object_path: Some(location.path.as_ref().to_string()),
                size: *size,
                modified: None,
                e_tag: e_tag.clone(),
            },
        }
    }

    /// The file of `record` (made by another rank), as this rank sees it: a local file's
    /// identity is taken here and must match the record's size and modification time, so
    /// that every rank plans the same file (a rank on a node that does not share the
    /// filesystem, or that sees another version, is refused); an object is rebuilt from
    /// the record with `store`, the client for its bucket, without a request.
    ///
    /// # Errors
    /// The local file cannot be stat'ed here or is not the same file.
    pub(crate) fn from_record(
        record: &FileRecord,
        #[cfg(feature = "object-store")] store: &mut dyn FnMut(
            &str,
        ) -> Result<
            Arc<dyn object_store::ObjectStore>,
        >,
    ) -> Result<StoredFile> {
        if let Some(path) = &record.local {
            let identity = FileIdentity::read(path)?;
            if identity.size() != record.size || identity.modified() != record.modified {
                return Err(Error::FileChanged {
                    path: record.display.clone(),
                    detail: format!(
                        "this rank sees {} bytes modified {:?}, rank 0 listed {} bytes modified {:?}: every rank must read the same files (a filesystem they share, not written to while the job plans)",
                        identity.size(),
                        identity.modified(),
                        record.size,
                        record.modified
                    ),
                });
            }
            return Ok(StoredFile {
                inner: Inner::Local {
                    path: path.clone(),
                    identity,
                },
                display: record.display.clone(),
            });
        }
        #[cfg(feature = "object-store")]
        if let Some(key) = &record.object_path {
            let path = object_store::path::Path::parse(key).map_err(|e| {
                Error::Internal(format!("object path {key:?} of {}: {e}", record.display))
            })?;
            return Ok(StoredFile {
                inner: Inner::Object {
                    location: crate::object::ObjectLocation {
                        store: store(&record.display)?,
                        path,
                        url: record.display.clone(),
                    },
                    size: record.size,
                    e_tag: record.e_tag.clone(),
                },
                display: record.display.clone(),
            });
        }
        Err(Error::Internal(format!(
            "the listed file {} is neither local nor an object this build reads",
            record.display
        )))
    }

    /// The first `max` bytes (or the whole file when smaller).
    ///
    /// # Errors
    /// As [`StoredFile::read_range`].
    pub fn read_prefix(&self, max: u64) -> Result<Vec<u8>> {
        self.read_range(0..max)
    }
}

/// `posix_fadvise(file, start, len, POSIX_FADV_WILLNEED)`; its result is ignored.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise_will_need(file: &File, start: i64, len: i64) {
    use std::os::fd::AsRawFd;
    // SAFETY: `file` is open, so its descriptor is valid for the duration of the call;
    // posix_fadvise takes integers only and touches no memory of this process.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), start, len, libc::POSIX_FADV_WILLNEED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_files_read_ranges_and_notice_changes() {
        let dir = std::env::temp_dir().join(format!("tessera-stored-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.txt");
        std::fs::write(&path, b"hello, world").unwrap();
        let f = StoredFile::open(path.to_str().unwrap()).unwrap();
        assert_eq!(f.size(), 12);
        assert_eq!(f.read_range(7..100).unwrap(), b"world");
        assert_eq!(f.read_prefix(5).unwrap(), b"hello");
        assert!(f.read_range(20..30).unwrap().is_empty());
        // A read-ahead hint changes nothing a read returns, past the end or out of an
        // offset's range either.
        f.will_need(0..12);
        f.will_need(7..100);
        f.will_need(u64::MAX - 1..u64::MAX);
        assert_eq!(f.read_range(0..12).unwrap(), b"hello, world");
        std::fs::write(&path, b"hello, world!").unwrap();
        assert!(matches!(f.read_range(0..5), Err(Error::FileChanged { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn object_urls_are_told_apart_from_paths() {
        assert!(is_object_url("s3://b/k"));
        assert!(is_object_url("https://host/x.csv"));
        assert!(!is_object_url("file:///tmp/x.csv"));
        assert!(!is_object_url("/tmp/x.csv"));
        assert!(!is_object_url("data/a://b.csv"));
    }
}

//! File name patterns: `*` and `?` in the file name (not in directories), expanded to
//! the sorted list of matching files — local files, or (feature `object-store`) objects
//! under a URL prefix (`s3://bucket/taxi/yellow-*.csv`). Shared by the CSV and Parquet
//! readers and the dataset writers.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Expands a `*`/`?` pattern in the file name (not in directories); a path without
/// wildcards must exist. Sorted by name.
///
/// # Errors
/// A path without wildcards that does not exist, an unreadable directory, or no match.
pub fn expand_glob(pattern: &str) -> Result<Vec<PathBuf>> {
    let path = Path::new(pattern);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        if !path.exists() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        let fname = entry.file_name().to_string_lossy().into_owned();
        if wildcard_match(name.as_bytes(), fname.as_bytes()) && entry.path().is_file() {
            out.push(entry.path());
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::invalid(
            "read",
            format!("no file matches '{pattern}'"),
        ));
    }
    Ok(out)
}

/// True when `s` matches the pattern `p` (`*`: any run of bytes, `?`: one byte).
pub fn wildcard_match(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            wildcard_match(&p[1..], s) || (!s.is_empty() && wildcard_match(p, &s[1..]))
        }
        (Some(b'?'), Some(_)) => wildcard_match(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard_match(&p[1..], &s[1..]),
        _ => false,
    }
}

/// The files `pattern` names: a local path or pattern ([`expand_glob`]), or an object URL
/// with `*`/`?` in its last segment, listed under its prefix, sorted by name.
///
/// Under `scheduler = "mpi"` rank 0 lists and every rank gets its list (see
/// the crate's `listing` module): every rank plans the same files.
///
/// # Errors
/// As [`expand_glob`]; for URLs, the listing's errors (naming the URL) or no match;
/// under `scheduler = "mpi"`, a rank that does not see the files rank 0 listed.
pub fn expand(pattern: &str) -> Result<Vec<crate::file::StoredFile>> {
    crate::listing::listed_once(|| expand_here(pattern))
}

/// [`expand`] in this process.
pub(crate) fn expand_here(pattern: &str) -> Result<Vec<crate::file::StoredFile>> {
    if crate::file::is_object_url(pattern) {
        #[cfg(feature = "object-store")]
        return expand_objects(pattern);
        #[cfg(not(feature = "object-store"))]
        return Err(crate::file::needs_object_store(pattern));
    }
    let local = pattern.strip_prefix("file://").unwrap_or(pattern);
    expand_glob(local)?
        .into_iter()
        .map(|p| crate::file::StoredFile::local(&p))
        .collect()
}

/// Every file under the directory (or object prefix) `root` whose name ends with
/// `suffix`, at any depth, sorted by path; names starting with `.` or `_` (hidden files,
/// `_SUCCESS` markers, temporary files) are skipped, as Spark and pyarrow skip them.
///
/// Under `scheduler = "mpi"` rank 0 lists and every rank gets its list, as for
/// [`expand`].
///
/// # Errors
/// An unreadable directory, a listing error, or no such file; under `scheduler = "mpi"`,
/// a rank that does not see the files rank 0 listed.
pub fn expand_tree(root: &str, suffix: &str) -> Result<Vec<crate::file::StoredFile>> {
    crate::listing::listed_once(|| expand_tree_here(root, suffix))
}

/// [`expand_tree`] in this process.
fn expand_tree_here(root: &str, suffix: &str) -> Result<Vec<crate::file::StoredFile>> {
    let skip = |name: &str| name.starts_with('.') || name.starts_with('_');
    let mut out = Vec::new();
    if crate::file::is_object_url(root) {
        #[cfg(not(feature = "object-store"))]
        return Err(crate::file::needs_object_store(root));
        #[cfg(feature = "object-store")]
        {
            let base = root.trim_end_matches('/');
            let (loc, listed) = list_objects(base, root)?;
            let under = loc.path.as_ref().len();
            for meta in listed {
                let key = meta.location.as_ref().to_string();
                let rel = key[under..].trim_start_matches('/').to_string();
                if rel.ends_with(suffix) && !rel.split('/').any(skip) {
                    let url = format!("{base}/{rel}");
                    out.push(crate::file::StoredFile::object_from_meta(&url, &loc, meta));
                }
            }
        }
    } else {
        let dir = Path::new(root.strip_prefix("file://").unwrap_or(root));
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
                let entry = entry.map_err(|e| Error::io(&d, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                if skip(&name) {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else if name.ends_with(suffix) {
                    out.push(crate::file::StoredFile::local(&path)?);
                }
            }
        }
    }
    out.sort_by(|a, b| a.display().cmp(b.display()));
    if out.is_empty() {
        return Err(Error::invalid(
            "read",
            format!("no *{suffix} file under '{root}'"),
        ));
    }
    Ok(out)
}

/// Every object under the URL prefix `dir` (at any depth), with the prefix's location;
/// errors name `asked`.
#[cfg(feature = "object-store")]
fn list_objects(
    dir: &str,
    asked: &str,
) -> Result<(crate::object::ObjectLocation, Vec<object_store::ObjectMeta>)> {
    let loc = crate::object::parse_url(&format!("{dir}/"))?;
    let prefix = (!loc.path.as_ref().is_empty()).then_some(&loc.path);
    let listed = crate::object::block_on(async {
        use futures_util::TryStreamExt;
        loc.store.list(prefix).try_collect::<Vec<_>>().await
    })?
    .map_err(|e| crate::object::object_error(asked, &e))?;
    Ok((loc, listed))
}

#[cfg(feature = "object-store")]
fn expand_objects(pattern: &str) -> Result<Vec<crate::file::StoredFile>> {
    use crate::file::StoredFile;
    let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    if !name.contains(['*', '?']) {
        return Ok(vec![StoredFile::open(pattern)?]);
    }
    let (loc, listed) = list_objects(dir, pattern)?;
    let mut out = Vec::new();
    for meta in listed {
        let key = meta.location.as_ref();
        let file = key.rsplit('/').next().unwrap_or(key);
        // Only the objects directly under the prefix, as a local glob lists one directory.
        let parent = key.len() - file.len();
        let under = loc.path.as_ref();
        let direct = key[..parent].trim_end_matches('/') == under;
        if direct && wildcard_match(name.as_bytes(), file.as_bytes()) {
            out.push(StoredFile::object_from_meta(
                &format!("{dir}/{file}"),
                &loc,
                meta,
            ));
        }
    }
    out.sort_by(|a, b| a.display().cmp(b.display()));
    if out.is_empty() {
        return Err(Error::invalid(
            "read",
            format!("no object matches '{pattern}'"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(wildcard_match(b"*.csv", b"a.csv"));
        assert!(wildcard_match(b"part-?.csv", b"part-1.csv"));
        assert!(!wildcard_match(b"part-?.csv", b"part-10.csv"));
        assert!(wildcard_match(b"*", b""));
        assert!(!wildcard_match(b"*.csv", b"a.csv.tmp"));
    }
}

//! File name patterns: `*` and `?` in the file name (not in directories), expanded to
//! the sorted list of matching files. Shared by the CSV and Parquet readers.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Expands a `*`/`?` pattern in the file name (not in directories); a path without
/// wildcards must exist. Sorted by name.
pub(crate) fn expand_glob(pattern: &str) -> Result<Vec<PathBuf>> {
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

pub(crate) fn wildcard_match(p: &[u8], s: &[u8]) -> bool {
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

//! NumPy's `.npy` format: read as a lazy chunked array, written block by block.
//!
//! [`from_npy`] reads only the header when called; every block is then read by its own
//! task with positioned reads of exactly its bytes. [`to_npy`] writes the header, then
//! each block at its offsets from the task that computes it (the array is never whole in
//! memory), into a temporary file that is renamed over the target only once every block
//! is written and synced, so a failed write leaves no file that reads as complete.
//!
//! The parser is written for hostile input: the header is parsed as the dict literal the
//! format defines (never evaluated), every size is checked arithmetic, and a file shorter
//! than its header claims is refused when opened.

mod header;
mod read;
mod write;

#[cfg(feature = "zarr")]
pub(crate) use header::descr;
pub use read::from_npy;
pub use write::to_npy;

use std::ops::Range;

/// Calls `f(first element, elements)` for every contiguous run of `region` in the C-order
/// layout of `shape`, in C order. Trailing axes the region covers whole join one run. An
/// empty region has no runs.
pub(crate) fn for_each_run(
    shape: &[usize],
    region: &[Range<usize>],
    mut f: impl FnMut(usize, usize) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if region.iter().any(|r| r.is_empty()) {
        return Ok(());
    }
    let nd = shape.len();
    let mut k = nd;
    while k > 0 && region[k - 1].start == 0 && region[k - 1].end == shape[k - 1] {
        k -= 1;
    }
    let inner: usize = shape[k..].iter().product();
    // Axis k - 1 (when k > 0) is the partial axis of each run; the axes before it vary.
    let (outer, run) = match k {
        0 => (0, inner),
        _ => (k - 1, region[k - 1].len() * inner),
    };
    let strides = tessera_core::chunks::c_strides(shape);
    let base = if k > 0 {
        region[k - 1].start * strides[k - 1]
    } else {
        0
    };
    let mut idx: Vec<usize> = region[..outer].iter().map(|r| r.start).collect();
    loop {
        let elem = base + idx.iter().zip(&strides).map(|(i, s)| i * s).sum::<usize>();
        f(elem, run)?;
        let mut ax = outer;
        loop {
            if ax == 0 {
                return Ok(());
            }
            ax -= 1;
            idx[ax] += 1;
            if idx[ax] < region[ax].end {
                break;
            }
            idx[ax] = region[ax].start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(shape: &[usize], region: &[Range<usize>]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for_each_run(shape, region, |e, n| {
            out.push((e, n));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn runs_merge_trailing_whole_axes() {
        // A 4 x 5 x 6 array: rows 1..3 of everything is one run of 2 x 30 elements.
        assert_eq!(runs(&[4, 5, 6], &[1..3, 0..5, 0..6]), vec![(30, 60)]);
        // Columns 2..4 of rows 1..3 (whole last axis): 2 runs of 2 x 6.
        assert_eq!(
            runs(&[4, 5, 6], &[1..3, 2..4, 0..6]),
            vec![(30 + 12, 12), (60 + 12, 12)]
        );
        // A partial last axis: one run per (i, j).
        assert_eq!(runs(&[2, 3], &[0..2, 1..2]), vec![(1, 1), (4, 1)]);
        assert_eq!(runs(&[], &[]), vec![(0, 1)]);
        assert_eq!(runs(&[3, 0], &[0..3, 0..0]), vec![]);
    }
}

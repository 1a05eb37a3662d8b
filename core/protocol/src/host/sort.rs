//! Sorting host arrays along an axis, and the merge step of a chunked sort.
//!
//! Order is NumPy's: ascending with NaN last, `-0.0` equal to `0.0`, equal elements kept
//! in their order (stable). Every element maps to a `u64` key that orders like that
//! ([`sort_key`]), so one code path sorts and merges every dtype.
//!
//! A chunked sort along an axis sorts each block, then builds output block `j` (global
//! ranks `start..start + len` of every lane) from the sorted blocks of its lane with
//! [`HostArray::merge_ranks`]: the split of each block at a rank is found by a binary
//! search over keys (64 steps, each a binary search per block), so only the elements of
//! the output block are copied and merged — `O(len · log k)` for `k` blocks.

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};

use super::{HostArray, HostElement};
use crate::error::{Error, Result};

/// An element's place in NumPy's sort order as an unsigned key.
pub(super) trait SortKey: HostElement {
    fn key(self) -> u64;
}

macro_rules! signed_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            fn key(self) -> u64 {
                (self as i64 as u64) ^ (1 << 63)
            }
        }
    )*};
}
signed_key!(i8, i16, i32, i64);

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            fn key(self) -> u64 {
                self as u64
            }
        }
    )*};
}
unsigned_key!(u8, u16, u32, u64);

impl SortKey for bool {
    fn key(self) -> u64 {
        u64::from(self)
    }
}

fn float_key(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    // `-0.0 + 0.0` is `0.0`: the two zeros are one key.
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

impl SortKey for f64 {
    fn key(self) -> u64 {
        float_key(self)
    }
}

impl SortKey for f32 {
    fn key(self) -> u64 {
        float_key(f64::from(self))
    }
}

/// The key NumPy's order gives element `i` (flat, C order) of `h`.
#[cfg(test)]
fn sort_key(h: &HostArray, i: usize) -> Option<u64> {
    crate::dispatch_host!(h, a => a.iter().nth(i).map(|v| v.key()))
}

fn check_axis(op: &str, shape: &[usize], axis: usize) -> Result<()> {
    if axis >= shape.len() {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of bounds for an array of shape {shape:?}"),
        ));
    }
    Ok(())
}

fn sort_typed<T: SortKey>(a: &ArrayD<T>, axis: usize, descending: bool) -> HostArray {
    let mut out = a.as_standard_layout().into_owned();
    let mut buf: Vec<T> = Vec::new();
    for mut lane in out.lanes_mut(Axis(axis)) {
        buf.clear();
        buf.extend(lane.iter().copied());
        buf.sort_by_key(|v| v.key());
        if descending {
            buf.reverse();
        }
        for (o, v) in lane.iter_mut().zip(&buf) {
            *o = *v;
        }
    }
    T::wrap(out)
}

/// A sequence sorted by key, searched where a split looks: the keys are computed from
/// the elements at the probed positions only, never for the whole sequence (a merge
/// task reads every sorted block of its lane, and building all their keys made the
/// chunked sort's merge work grow with the number of blocks times the lane's length).
pub(super) trait KeySeq {
    /// The number of elements.
    fn size(&self) -> usize;
    /// The key of element `i`.
    fn key_at(&self, i: usize) -> u64;
    /// How many elements have a key below `t` (`strict`) or at most `t`.
    fn count(&self, t: u64, strict: bool) -> usize {
        let (mut lo, mut hi) = (0, self.size());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.key_at(mid);
            if (strict && k < t) || (!strict && k <= t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl<T: SortKey> KeySeq for ndarray::ArrayView1<'_, T> {
    fn size(&self) -> usize {
        self.len()
    }
    fn key_at(&self, i: usize) -> u64 {
        self[i].key()
    }
}

/// How many elements of each sorted sequence come before global rank `r` of their
/// stable merge (ties taken from earlier sequences first).
pub(super) fn split_at_rank<S: KeySeq>(seqs: &[S], r: usize) -> Vec<usize> {
    let total: usize = seqs.iter().map(KeySeq::size).sum();
    if r >= total {
        return seqs.iter().map(KeySeq::size).collect();
    }
    let count_le = |t: u64| -> usize { seqs.iter().map(|s| s.count(t, false)).sum() };
    // The smallest key t with more than r elements at or below it: the key of rank r.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_le(mid) > r {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let t = lo;
    let mut counts: Vec<usize> = seqs.iter().map(|s| s.count(t, true)).collect();
    let mut left = r - counts.iter().sum::<usize>();
    for (c, s) in counts.iter_mut().zip(seqs) {
        if left == 0 {
            break;
        }
        let equal = s.count(t, false) - *c;
        let take = equal.min(left);
        *c += take;
        left -= take;
    }
    counts
}

fn merge_typed<T: SortKey>(
    parts: &[ArrayViewD<'_, T>],
    axis: usize,
    start: usize,
    len: usize,
) -> HostArray {
    let mut shape = parts[0].shape().to_vec();
    shape[axis] = len;
    let mut out = ArrayD::<T>::from_elem(IxDyn(&shape), T::default());
    let mut lanes: Vec<_> = parts
        .iter()
        .map(|p| p.lanes(Axis(axis)).into_iter())
        .collect();
    let mut piece: Vec<T> = Vec::with_capacity(len);
    for mut target in out.lanes_mut(Axis(axis)) {
        let seqs: Vec<ndarray::ArrayView1<'_, T>> = lanes
            .iter_mut()
            .map(|l| l.next().expect("every part has the output's lanes"))
            .collect();
        let from = split_at_rank(&seqs, start);
        let to = split_at_rank(&seqs, start + len);
        piece.clear();
        for ((s, &a), &b) in seqs.iter().zip(&from).zip(&to) {
            piece.extend(s.iter().skip(a).take(b - a).copied());
        }
        // Sorted runs in sequence order: the stable sort merges them, ties kept in order.
        piece.sort_by_key(|v| v.key());
        for (o, v) in target.iter_mut().zip(&piece) {
            *o = *v;
        }
    }
    T::wrap(out)
}

/// [`merge_typed`] with the element type of `_like` (the first part's).
fn merge_like<T: SortKey>(
    _like: &ArrayD<T>,
    parts: &[&HostArray],
    axis: usize,
    start: usize,
    len: usize,
) -> Result<HostArray> {
    let views = parts
        .iter()
        .map(|p| T::view(p).ok_or_else(|| Error::Internal("dtypes checked by merge_ranks".into())))
        .collect::<Result<Vec<_>>>()?;
    Ok(merge_typed(&views, axis, start, len))
}

impl HostArray {
    /// The array sorted along `axis`: ascending in NumPy's order (NaN last, stable), or
    /// descending (its reverse, NaN first, as `np.flip(np.sort(np.flip(x)))`).
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of the array.
    pub fn sort(&self, axis: usize, descending: bool) -> Result<HostArray> {
        check_axis("sort", self.shape(), axis)?;
        Ok(crate::dispatch_host!(self, a => sort_typed(a, axis, descending)))
    }

    /// Global ranks `start..start + len` along `axis` of the stable merge of `parts`,
    /// each sorted ascending along `axis` (as [`HostArray::sort`] leaves them), with the
    /// same dtype and the same lengths on the other axes.
    ///
    /// # Errors
    /// [`Error::Invalid`] for no parts, parts that disagree, an axis out of bounds, or a
    /// rank range past the parts' total length.
    pub fn merge_ranks(
        parts: &[&HostArray],
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<HostArray> {
        let first = parts
            .first()
            .ok_or_else(|| Error::invalid("merge_ranks", "no sorted parts to merge"))?;
        check_axis("merge_ranks", first.shape(), axis)?;
        let mut total = 0usize;
        for p in parts {
            let (a, b) = (p.shape(), first.shape());
            let others_agree = a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .enumerate()
                    .all(|(i, (x, y))| i == axis || x == y);
            if p.dtype() != first.dtype() || !others_agree {
                return Err(Error::invalid(
                    "merge_ranks",
                    format!(
                        "parts must share dtype and the lengths of the axes other than {axis}: {} {:?} and {} {:?}",
                        first.dtype(),
                        b,
                        p.dtype(),
                        a
                    ),
                ));
            }
            total += a[axis];
        }
        if start.checked_add(len).is_none_or(|end| end > total) {
            return Err(Error::invalid(
                "merge_ranks",
                format!("ranks {start}..{start}+{len} are past the parts' {total} elements"),
            ));
        }
        crate::dispatch_host!(first, a => merge_like(a, parts, axis, start, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: &[f64]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
    }

    #[test]
    fn nan_sorts_last_and_the_zeros_are_one_value() {
        let x = f64s(&[3.0, f64::NAN, -1.0, 0.0, -0.0, f64::NEG_INFINITY]);
        let s = x.sort(0, false).unwrap().to_f64_vec();
        assert_eq!(&s[..2], &[f64::NEG_INFINITY, -1.0]);
        assert!(
            s[2] == 0.0 && s[3] == 0.0 && s[4] == 3.0 && s[5].is_nan(),
            "{s:?}"
        );
        let d = x.sort(0, true).unwrap().to_f64_vec();
        assert!(
            d[0].is_nan() && d[1] == 3.0 && d[5] == f64::NEG_INFINITY,
            "{d:?}"
        );
        let i =
            HostArray::I16(ArrayD::from_shape_vec(IxDyn(&[4]), vec![5, -3, i16::MIN, 0]).unwrap());
        assert_eq!(
            i.sort(0, false).unwrap().to_f64_vec(),
            vec![f64::from(i16::MIN), -3.0, 0.0, 5.0]
        );
    }

    #[test]
    fn merging_rank_ranges_of_sorted_parts_gives_the_whole_sort() {
        let parts = [
            f64s(&[1.0, 4.0, 4.0, 9.0, f64::NAN])
                .sort(0, false)
                .unwrap(),
            f64s(&[4.0, 2.0, 8.0]).sort(0, false).unwrap(),
            f64s(&[0.5, 4.0, 10.0, 11.0]).sort(0, false).unwrap(),
        ];
        let refs: Vec<&HostArray> = parts.iter().collect();
        let mut all = Vec::new();
        for (start, len) in [(0, 3), (3, 5), (8, 4)] {
            all.extend(
                HostArray::merge_ranks(&refs, 0, start, len)
                    .unwrap()
                    .to_f64_vec(),
            );
        }
        let want = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 8.0, 9.0, 10.0, 11.0];
        assert_eq!(&all[..11], &want);
        assert!(all[11].is_nan());
        let err = HostArray::merge_ranks(&refs, 0, 10, 3).unwrap_err();
        assert!(
            err.to_string().contains("past the parts' 12 elements"),
            "{err}"
        );
    }

    #[test]
    fn merging_works_lane_by_lane_on_any_axis() {
        let a =
            HostArray::I32(ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![3, 1, 2, 9, 7, 8]).unwrap());
        let b = HostArray::I32(ArrayD::from_shape_vec(IxDyn(&[1, 3]), vec![0, 5, 4]).unwrap());
        let (sa, sb) = (a.sort(0, false).unwrap(), b.sort(0, false).unwrap());
        let m = HostArray::merge_ranks(&[&sa, &sb], 0, 1, 2).unwrap();
        // Columns [3, 9, 0], [1, 7, 5], [2, 8, 4] sorted: ranks 1..3 of each.
        assert_eq!(m.to_f64_vec(), vec![3.0, 5.0, 4.0, 9.0, 7.0, 8.0]);
        assert_eq!(sort_key(&sa, 0), Some((3i64 as u64) ^ (1 << 63)));
    }
}

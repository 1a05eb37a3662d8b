//! Gathers along an axis from the blocks of a lane: the host steps of a chunked `take`,
//! `take_along_axis` and `argsort`.
//!
//! A chunked gather along an axis does not concatenate the lane: output block `j` reads
//! only the input blocks its positions fall in (each given with the global position of its
//! first element along the axis), and copies each picked slab once. Positions are global
//! along the axis, so the caller never rebases them per block.
//!
//! `argsort` is the index side of the chunked sort in [`super::sort`]: each block is
//! argsorted on its own (stable), its indices shifted to global positions, and output
//! block `j` is ranks `start..start + len` of the stable merge of the sorted blocks, read
//! with their indices ([`HostArray::merge_rank_indices`]).

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};

use super::sort::{split_at_rank, SortKey};
use super::{HostArray, HostElement};
use crate::dtype::{DType, Element, Scalar};
use crate::error::{Error, Result};

/// The block holding global position `p`: `(part, local position)`, or `None` when no
/// part covers `p`.
fn locate(starts: &[usize], lens: &[usize], p: usize) -> Option<(usize, usize)> {
    let part = starts.partition_point(|&s| s <= p).checked_sub(1)?;
    let local = p - starts[part];
    (local < lens[part]).then_some((part, local))
}

fn check_parts(op: &str, parts: &[&HostArray], starts: &[usize], axis: usize) -> Result<()> {
    let first = parts
        .first()
        .ok_or_else(|| Error::invalid(op, "no blocks to gather from"))?;
    if axis >= first.ndim() {
        return Err(Error::invalid(
            op,
            format!(
                "axis {axis} is out of bounds for blocks of shape {:?}",
                first.shape()
            ),
        ));
    }
    if starts.len() != parts.len() || starts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::invalid(
            op,
            format!(
                "{} blocks need as many strictly increasing start positions; got {starts:?}",
                parts.len()
            ),
        ));
    }
    for p in parts {
        let same_others = p.ndim() == first.ndim()
            && p.shape()
                .iter()
                .zip(first.shape())
                .enumerate()
                .all(|(i, (a, b))| i == axis || a == b);
        if p.dtype() != first.dtype() || !same_others {
            return Err(Error::invalid(
                op,
                format!(
                    "blocks must share dtype and the lengths of the axes other than {axis}: {} {:?} and {} {:?}",
                    first.dtype(),
                    first.shape(),
                    p.dtype(),
                    p.shape()
                ),
            ));
        }
    }
    Ok(())
}

fn views<'a, T: HostElement>(parts: &[&'a HostArray]) -> Result<Vec<ArrayViewD<'a, T>>> {
    parts
        .iter()
        .map(|p| T::view(p).ok_or_else(|| Error::Internal("block dtypes were checked".into())))
        .collect()
}

fn gather_typed<T: HostElement>(
    parts: &[ArrayViewD<'_, T>],
    starts: &[usize],
    lens: &[usize],
    axis: usize,
    picks: &[usize],
) -> Result<HostArray> {
    let mut shape = parts[0].shape().to_vec();
    shape[axis] = picks.len();
    let mut out = ArrayD::<T>::from_elem(IxDyn(&shape), T::default());
    for (k, &p) in picks.iter().enumerate() {
        let (part, local) = locate(starts, lens, p).ok_or_else(|| {
            Error::Internal(format!("position {p} is in none of the gathered blocks"))
        })?;
        out.index_axis_mut(Axis(axis), k)
            .assign(&parts[part].index_axis(Axis(axis), local));
    }
    Ok(T::wrap(out))
}

fn gather_lanes_typed<T: HostElement>(
    parts: &[ArrayViewD<'_, T>],
    starts: &[usize],
    lens: &[usize],
    axis: usize,
    picks: &ArrayViewD<'_, usize>,
) -> Result<HostArray> {
    let mut out = ArrayD::<T>::from_elem(picks.raw_dim(), T::default());
    let mut lanes: Vec<_> = parts
        .iter()
        .map(|p| p.lanes(Axis(axis)).into_iter())
        .collect();
    for (mut target, pick) in out
        .lanes_mut(Axis(axis))
        .into_iter()
        .zip(picks.lanes(Axis(axis)))
    {
        let sources: Vec<_> = lanes
            .iter_mut()
            .map(|l| {
                l.next()
                    .ok_or_else(|| Error::Internal("blocks with fewer lanes than picks".into()))
            })
            .collect::<Result<_>>()?;
        for (o, &p) in target.iter_mut().zip(pick.iter()) {
            let (part, local) = locate(starts, lens, p).ok_or_else(|| {
                Error::Internal(format!("position {p} is in none of the gathered blocks"))
            })?;
            *o = sources[part][local];
        }
    }
    Ok(T::wrap(out))
}

fn argsort_typed<T: SortKey>(a: &ArrayD<T>, axis: usize, offset: usize) -> Result<HostArray> {
    let base = i64::try_from(offset)
        .map_err(|_| Error::invalid("argsort", format!("offset {offset} overflows int64")))?;
    let mut out = ArrayD::<i64>::zeros(a.raw_dim());
    let mut order: Vec<(u64, usize)> = Vec::new();
    for (lane, mut target) in a
        .lanes(Axis(axis))
        .into_iter()
        .zip(out.lanes_mut(Axis(axis)))
    {
        order.clear();
        order.extend(lane.iter().map(|v| v.key()).zip(0..));
        // Stable: equal keys keep their positions' order.
        order.sort_by_key(|&(k, _)| k);
        for (o, &(_, i)) in target.iter_mut().zip(&order) {
            *o = base + i as i64;
        }
    }
    Ok(HostArray::I64(out))
}

fn merge_indices_typed<T: SortKey>(
    parts: &[ArrayViewD<'_, T>],
    indices: &[ArrayViewD<'_, i64>],
    axis: usize,
    start: usize,
    len: usize,
) -> Result<HostArray> {
    let mut shape = parts[0].shape().to_vec();
    shape[axis] = len;
    let mut out = ArrayD::<i64>::zeros(IxDyn(&shape));
    let mut value_lanes: Vec<_> = parts
        .iter()
        .map(|p| p.lanes(Axis(axis)).into_iter())
        .collect();
    let mut index_lanes: Vec<_> = indices
        .iter()
        .map(|p| p.lanes(Axis(axis)).into_iter())
        .collect();
    let mut piece: Vec<(u64, i64)> = Vec::with_capacity(len);
    for mut target in out.lanes_mut(Axis(axis)) {
        let mut keys = Vec::with_capacity(parts.len());
        let mut idx = Vec::with_capacity(parts.len());
        for (v, i) in value_lanes.iter_mut().zip(index_lanes.iter_mut()) {
            let (Some(v), Some(i)) = (v.next(), i.next()) else {
                return Err(Error::Internal(
                    "parts with fewer lanes than the output".into(),
                ));
            };
            keys.push(v);
            idx.push(i);
        }
        let from = split_at_rank(&keys, start);
        let to = split_at_rank(&keys, start + len);
        piece.clear();
        for (((k, i), &a), &b) in keys.iter().zip(&idx).zip(&from).zip(&to) {
            piece.extend(
                k.iter()
                    .skip(a)
                    .take(b - a)
                    .map(|x| x.key())
                    .zip(i.iter().skip(a).take(b - a).copied()),
            );
        }
        // Runs in block order: the stable sort keeps ties in global position order.
        piece.sort_by_key(|&(k, _)| k);
        for (o, &(_, i)) in target.iter_mut().zip(&piece) {
            *o = i;
        }
    }
    Ok(HostArray::I64(out))
}

impl HostArray {
    /// The number of axes.
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// The elements as positions along an axis of length `n`, NumPy's way: an integer
    /// dtype, a negative value counted from the end (`-n <= v < n`).
    ///
    /// # Errors
    /// [`Error::DType`] for a bool or float array; [`Error::Invalid`] naming the first
    /// value out of bounds, the axis and its size (NumPy's `IndexError` message).
    pub fn positions(&self, op: &str, axis: usize, n: usize) -> Result<Vec<usize>> {
        if !self.dtype().is_integer() {
            return Err(Error::dtype(
                op,
                self.dtype(),
                format!(
                    "indices must be of an integer dtype; got {} (use astype(int64), or a boolean mask where one is taken)",
                    self.dtype()
                ),
            ));
        }
        let size = i128::try_from(n).unwrap_or(i128::MAX);
        crate::dispatch_host!(self, a => a
            .iter()
            .map(|v| {
                let v: i128 = match v.to_scalar() {
                    Scalar::U64(u) => i128::from(u),
                    s => i128::from(s.as_i64()),
                };
                let p = if v < 0 { v + size } else { v };
                if p < 0 || p >= size {
                    return Err(Error::invalid(
                        op,
                        format!("index {v} is out of bounds for axis {axis} with size {n}"),
                    ));
                }
                Ok(p as usize)
            })
            .collect())
    }

    /// Gathers positions `picks` along `axis` from `parts`: blocks of one lane of a
    /// chunked array, part `i` holding global positions `starts[i]..` (strictly
    /// increasing; the parts need not be adjacent, only the blocks the picks touch are
    /// given). The result has the parts' shape with `picks.len()` along `axis`.
    ///
    /// ```
    /// use ndarray::{ArrayD, IxDyn};
    /// use tessera_core::HostArray;
    /// let a = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0, 2.0]).unwrap());
    /// let b = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![7.0, 8.0, 9.0]).unwrap());
    /// let got = HostArray::gather(&[&a, &b], &[0, 5], 0, &[6, 0, 6, 1]).unwrap();
    /// assert_eq!(got.to_f64_vec(), vec![8.0, 1.0, 8.0, 2.0]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for no parts, parts that disagree in dtype or the other axes,
    /// starts that are not increasing, or an axis out of bounds; [`Error::Internal`] for a
    /// pick no part covers.
    pub fn gather(
        parts: &[&HostArray],
        starts: &[usize],
        axis: usize,
        picks: &[usize],
    ) -> Result<HostArray> {
        check_parts("gather", parts, starts, axis)?;
        let lens: Vec<usize> = parts.iter().map(|p| p.shape()[axis]).collect();
        crate::dispatch_host!(parts[0], a => gather_like(a, parts, starts, &lens, axis, picks))
    }

    /// Gathers lane by lane: output element `o` is element `picks[o]` (a global position
    /// along `axis`, in the blocks `parts` starting at `starts`) of the lane through `o`,
    /// as `np.take_along_axis`. `picks` has the output's shape, whose axes other than
    /// `axis` are the parts'.
    ///
    /// # Errors
    /// As [`HostArray::gather`], and [`Error::Invalid`] when `picks` has other lengths
    /// than the parts off `axis`.
    pub fn gather_lanes(
        parts: &[&HostArray],
        starts: &[usize],
        axis: usize,
        picks: &ArrayViewD<'_, usize>,
    ) -> Result<HostArray> {
        check_parts("take_along_axis", parts, starts, axis)?;
        let first = parts[0].shape();
        let agree = picks.ndim() == first.len()
            && picks
                .shape()
                .iter()
                .zip(first)
                .enumerate()
                .all(|(i, (a, b))| i == axis || a == b);
        if !agree {
            return Err(Error::invalid(
                "take_along_axis",
                format!(
                    "indices of shape {:?} do not match blocks of shape {first:?} off axis {axis}",
                    picks.shape()
                ),
            ));
        }
        let lens: Vec<usize> = parts.iter().map(|p| p.shape()[axis]).collect();
        crate::dispatch_host!(parts[0], a => gather_lanes_like(a, parts, starts, &lens, axis, picks))
    }

    /// The stable ascending argsort along `axis` (NumPy's order, NaN last), as `int64`
    /// positions plus `offset` (the block's global start along the axis).
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of the array or `offset` overflows.
    pub fn argsort(&self, axis: usize, offset: usize) -> Result<HostArray> {
        if axis >= self.ndim() {
            return Err(Error::invalid(
                "argsort",
                format!(
                    "axis {axis} is out of bounds for an array of shape {:?}",
                    self.shape()
                ),
            ));
        }
        crate::dispatch_host!(self, a => argsort_typed(a, axis, offset))
    }

    /// The indices of global ranks `start..start + len` along `axis` of the stable merge
    /// of `parts` (each sorted ascending along `axis`), read from `indices` (one `int64`
    /// array per part, of the part's shape: the original position of each sorted
    /// element). Ties come from earlier parts first, so with parts in lane order the
    /// merge is the stable argsort of the lane.
    ///
    /// # Errors
    /// [`Error::Invalid`] for no parts, parts that disagree, indices that are not `int64`
    /// of their part's shape, or a rank range past the parts' total length.
    pub fn merge_rank_indices(
        parts: &[&HostArray],
        indices: &[&HostArray],
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<HostArray> {
        let starts: Vec<usize> = (0..parts.len()).collect();
        check_parts("argsort", parts, &starts, axis)?;
        if indices.len() != parts.len()
            || indices
                .iter()
                .zip(parts)
                .any(|(i, p)| i.dtype() != DType::I64 || i.shape() != p.shape())
        {
            return Err(Error::invalid(
                "argsort",
                "every sorted block needs an int64 index block of its shape",
            ));
        }
        let total: usize = parts.iter().map(|p| p.shape()[axis]).sum();
        if start.checked_add(len).is_none_or(|end| end > total) {
            return Err(Error::invalid(
                "argsort",
                format!("ranks {start}..{start}+{len} are past the parts' {total} elements"),
            ));
        }
        let idx = views::<i64>(indices)?;
        crate::dispatch_host!(parts[0], a => merge_indices_like(a, parts, &idx, axis, start, len))
    }
}

fn gather_like<T: HostElement>(
    _like: &ArrayD<T>,
    parts: &[&HostArray],
    starts: &[usize],
    lens: &[usize],
    axis: usize,
    picks: &[usize],
) -> Result<HostArray> {
    gather_typed(&views::<T>(parts)?, starts, lens, axis, picks)
}

fn gather_lanes_like<T: HostElement>(
    _like: &ArrayD<T>,
    parts: &[&HostArray],
    starts: &[usize],
    lens: &[usize],
    axis: usize,
    picks: &ArrayViewD<'_, usize>,
) -> Result<HostArray> {
    gather_lanes_typed(&views::<T>(parts)?, starts, lens, axis, picks)
}

fn merge_indices_like<T: SortKey>(
    _like: &ArrayD<T>,
    parts: &[&HostArray],
    indices: &[ArrayViewD<'_, i64>],
    axis: usize,
    start: usize,
    len: usize,
) -> Result<HostArray> {
    merge_indices_typed(&views::<T>(parts)?, indices, axis, start, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(shape: &[usize], v: &[f64]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap())
    }

    fn i64s(h: &HostArray) -> Vec<i64> {
        h.view_typed::<i64>().unwrap().iter().copied().collect()
    }

    #[test]
    fn positions_wrap_negatives_and_name_the_first_out_of_bounds() {
        let h = HostArray::I32(ArrayD::from_shape_vec(IxDyn(&[3]), vec![0, -1, 2]).unwrap());
        assert_eq!(h.positions("take", 0, 3).unwrap(), vec![0, 2, 2]);
        let err = h.positions("take", 1, 2).unwrap_err().to_string();
        assert!(
            err.contains("index 2 is out of bounds for axis 1 with size 2"),
            "{err}"
        );
        let far = HostArray::U64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![u64::MAX]).unwrap());
        assert!(far.positions("take", 0, 3).is_err());
        let floats = f64s(&[1], &[0.0]);
        assert!(matches!(
            floats.positions("take", 0, 3),
            Err(Error::DType { .. })
        ));
    }

    #[test]
    fn gather_lanes_reads_each_lane_from_blocks_that_are_not_adjacent() {
        // Two blocks of a [2, 6] array along axis 1: positions 0..2 and 4..6.
        let a = f64s(&[2, 2], &[0.0, 1.0, 10.0, 11.0]);
        let b = f64s(&[2, 2], &[4.0, 5.0, 14.0, 15.0]);
        let picks = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![5, 0, 4, 1, 1, 5]).unwrap();
        let got = HostArray::gather_lanes(&[&a, &b], &[0, 4], 1, &picks.view()).unwrap();
        assert_eq!(got.to_f64_vec(), vec![5.0, 0.0, 4.0, 11.0, 11.0, 15.0]);
        let stray = ArrayD::from_shape_vec(IxDyn(&[2, 1]), vec![3, 0]).unwrap();
        assert!(HostArray::gather_lanes(&[&a, &b], &[0, 4], 1, &stray.view()).is_err());
    }

    #[test]
    fn merged_block_argsorts_equal_the_argsort_of_the_whole_lane() {
        let v = [3.0, f64::NAN, 1.0, 3.0, -0.0, 0.0, 1.0, f64::NAN, 2.0];
        let whole = f64s(&[9], &v);
        let want = i64s(&whole.argsort(0, 0).unwrap());
        assert_eq!(want, vec![4, 5, 2, 6, 8, 0, 3, 1, 7]);
        let cuts = [(0usize, 4usize), (4, 6), (6, 9)];
        let blocks: Vec<HostArray> = cuts
            .iter()
            .map(|&(a, b)| f64s(&[b - a], &v[a..b]))
            .collect();
        let sorted: Vec<HostArray> = blocks.iter().map(|b| b.sort(0, false).unwrap()).collect();
        let idx: Vec<HostArray> = blocks
            .iter()
            .zip(&cuts)
            .map(|(b, &(a, _))| b.argsort(0, a).unwrap())
            .collect();
        let s: Vec<&HostArray> = sorted.iter().collect();
        let i: Vec<&HostArray> = idx.iter().collect();
        let mut got = Vec::new();
        for (start, len) in [(0, 2), (2, 5), (7, 2)] {
            got.extend(i64s(
                &HostArray::merge_rank_indices(&s, &i, 0, start, len).unwrap(),
            ));
        }
        assert_eq!(got, want);
    }
}

//! Basic indexing: `start:stop:step` on every axis (negative steps too), integer indices
//! that drop an axis, new axes and an ellipsis — all as lazy affine views.
//!
//! A view's chunks are computed from its input's chunk boundaries without touching data:
//! output chunk boundaries fall where the input chunk changes (as in Dask), so
//! `x[::2, ::2]` on 2000-chunks has 1000-chunks and every output chunk reads one input
//! chunk. The optimizer then pushes the view into the input's program (into a random
//! source: only the kept elements are generated).

use super::{Array, Op};
use crate::chunks::Chunks;
use crate::error::{Error, Result};
use crate::program::AxisMap;

/// One entry of an index expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// `start:stop:step` with Python semantics (negative bounds count from the end).
    Slice {
        /// First index (default: 0, or the end for negative steps).
        start: Option<i64>,
        /// Stop (exclusive; default: the end, or before the beginning for negative steps).
        stop: Option<i64>,
        /// Step (nonzero).
        step: i64,
    },
    /// One position; the axis is dropped.
    At(i64),
    /// A new axis of length 1.
    NewAxis,
    /// `...`: as many full slices as needed.
    Ellipsis,
}

impl Index {
    /// `:` (the whole axis).
    pub const FULL: Index = Index::Slice {
        start: None,
        stop: None,
        step: 1,
    };

    /// `start:stop:step` with optional bounds.
    pub fn slice(start: Option<i64>, stop: Option<i64>, step: i64) -> Index {
        Index::Slice { start, stop, step }
    }

    /// `::step`.
    pub fn step(step: i64) -> Index {
        Index::Slice {
            start: None,
            stop: None,
            step,
        }
    }

    /// `start:stop`.
    pub fn range(start: i64, stop: i64) -> Index {
        Index::Slice {
            start: Some(start),
            stop: Some(stop),
            step: 1,
        }
    }
}

/// Python's `slice.indices(n)` then the element count: `(start, step, len)`.
pub(crate) fn normalize_slice(
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
    n: usize,
) -> (i64, i64, usize) {
    let n = n as i64;
    let (lo_default, hi_default) = if step > 0 { (0, n) } else { (n - 1, -1) };
    // Python's `slice.indices`: negative bounds count from the end, then clamp to the
    // range a walk in the step's direction can start or stop at.
    let clamp = |v: i64| -> i64 {
        let v = if v < 0 { v + n } else { v };
        if step > 0 {
            v.clamp(0, n)
        } else {
            v.clamp(-1, n - 1)
        }
    };
    let s = start.map_or(lo_default, clamp);
    let e = stop.map_or(hi_default, clamp);
    // Counted without overflow for any step, `i64::MIN` and `i64::MAX` included: the span
    // `|e - s|` is at most `n + 1`, and `unsigned_abs` has no overflowing case.
    let span = if step > 0 { e - s } else { s - e };
    let len = if span > 0 {
        (span - 1) as u64 / step.unsigned_abs() + 1
    } else {
        0
    };
    // One element or none: the step is never used, and a canonical 1 keeps a huge step out
    // of later map compositions (`x[::i64::MAX][::2]`).
    let step = if len <= 1 { 1 } else { step };
    (s, step, len as usize)
}

impl Array {
    /// Indexes with a list of [`Index`] entries (missing trailing axes are full slices).
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::{Array, Index};
    /// use tessera_core::DType;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::arange(0.0, 12.0, 1.0, DType::I64, 5, None)?.reshape(&[3, 4])?;
    /// let y = x.slice(&[Index::step(-1), Index::At(1)])?;   // x[::-1, 1]
    /// assert_eq!(y.shape(), vec![3]);
    /// # Ok(()) }
    /// ```
    pub fn slice(&self, index: &[Index]) -> Result<Array> {
        let shape = self.shape();
        let consumed = index
            .iter()
            .filter(|i| matches!(i, Index::Slice { .. } | Index::At(_)))
            .count();
        let ellipses = index
            .iter()
            .filter(|i| matches!(i, Index::Ellipsis))
            .count();
        if ellipses > 1 {
            return Err(Error::invalid(
                "slice",
                "an index can only have a single ellipsis",
            ));
        }
        if consumed > shape.len() {
            return Err(Error::invalid(
                "slice",
                format!(
                    "{consumed} indices for a {}-d array of shape {shape:?}",
                    shape.len()
                ),
            ));
        }
        let mut expanded: Vec<Index> = Vec::new();
        for i in index {
            if let Index::Ellipsis = i {
                expanded.extend(std::iter::repeat_n(Index::FULL, shape.len() - consumed));
            } else {
                expanded.push(*i);
            }
        }
        if ellipses == 0 {
            expanded.extend(std::iter::repeat_n(Index::FULL, shape.len() - consumed));
        }
        let mut maps = Vec::with_capacity(shape.len());
        let mut out_shape = Vec::new();
        let mut axis = 0;
        for i in expanded {
            match i {
                Index::Slice { start, stop, step } => {
                    if step == 0 {
                        return Err(Error::invalid(
                            "slice",
                            format!("axis {axis}: slice step cannot be zero"),
                        ));
                    }
                    let (s, st, len) = normalize_slice(start, stop, step, shape[axis]);
                    maps.push(AxisMap {
                        start: if len == 0 { 0 } else { s },
                        step: st,
                        out_axis: Some(out_shape.len()),
                    });
                    out_shape.push(len);
                    axis += 1;
                }
                Index::At(p) => {
                    let n = shape[axis] as i64;
                    let q = if p < 0 { p + n } else { p };
                    if q < 0 || q >= n {
                        return Err(Error::invalid(
                            "slice",
                            format!("index {p} is out of bounds for axis {axis} with size {n}"),
                        ));
                    }
                    maps.push(AxisMap {
                        start: q,
                        step: 0,
                        out_axis: None,
                    });
                    axis += 1;
                }
                Index::NewAxis => out_shape.push(1),
                Index::Ellipsis => unreachable!("expanded above"),
            }
        }
        self.view(maps, &out_shape)
    }

    /// A lazy affine view: `maps[s]` addresses input axis `s` from output coordinates.
    pub(crate) fn view(&self, maps: Vec<AxisMap>, out_shape: &[usize]) -> Result<Array> {
        let in_chunks = self.chunks();
        let mut sizes: Vec<Option<Vec<usize>>> = vec![None; out_shape.len()];
        for (s, m) in maps.iter().enumerate() {
            let Some(o) = m.out_axis else { continue };
            if sizes[o].is_some() {
                return Err(Error::Internal(format!(
                    "view: two input axes feed output axis {o}"
                )));
            }
            sizes[o] = Some(if m.step == 0 || out_shape[o] == 0 {
                vec![out_shape[o]]
            } else {
                view_axis_chunks(in_chunks.offsets(s), m.start, m.step, out_shape[o])
            });
        }
        let sizes = sizes
            .into_iter()
            .enumerate()
            .map(|(o, s)| s.unwrap_or_else(|| vec![out_shape[o]]))
            .collect();
        let chunks = Chunks::new(out_shape, sizes)?;
        // A view of a view composes into one view.
        if let Op::View(inner, inner_maps) = self.op() {
            let composed = AxisMap::compose(inner_maps, &maps);
            return Ok(Array::new(
                Op::View(inner.clone(), composed),
                self.dtype(),
                chunks,
                self.backend().clone(),
            ));
        }
        Ok(Array::new(
            Op::View(self.clone(), maps),
            self.dtype(),
            chunks,
            self.backend().clone(),
        ))
    }
}

/// Output chunk sizes along an axis read at `start + step * i` for `i < len`, breaking
/// wherever the input chunk changes.
fn view_axis_chunks(offsets: &[usize], start: i64, step: i64, len: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i: i64 = 0;
    let len = len as i64;
    while i < len {
        let c = start + step * i;
        // Input chunk k containing c: offsets[k] <= c < offsets[k+1].
        let k = offsets.partition_point(|&o| o as i64 <= c) - 1;
        let (lo, hi) = (offsets[k] as i64, offsets[k + 1] as i64);
        // Largest i with start + step*i inside [lo, hi), in i128 so that no step overflows.
        let (start_w, step_w) = (i128::from(start), i128::from(step));
        let end = if step > 0 {
            (i128::from(hi) - start_w + step_w - 1) / step_w
        } else {
            (start_w - i128::from(lo)) / -step_w + 1
        };
        let end = end.min(i128::from(len)) as i64;
        out.push((end - i) as usize);
        i = end;
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps at the ends of `i64` count like Python's `slice.indices` and never overflow.
    #[test]
    fn huge_steps_select_the_first_element_or_none() {
        for n in [0usize, 1, 5, 1000] {
            let one = usize::from(n > 0);
            assert_eq!(normalize_slice(None, None, i64::MAX, n).2, one, "n={n}");
            assert_eq!(normalize_slice(None, None, i64::MIN, n).2, one, "n={n}");
            assert_eq!(normalize_slice(None, None, i64::MIN + 1, n).2, one, "n={n}");
            assert_eq!(
                normalize_slice(Some(i64::MIN), Some(i64::MAX), i64::MAX, n).2,
                one
            );
            assert_eq!(
                normalize_slice(Some(i64::MAX), Some(i64::MIN), i64::MIN, n).2,
                one
            );
            assert_eq!(normalize_slice(Some(i64::MAX), None, 1, n).2, 0);
            assert_eq!(normalize_slice(Some(i64::MIN), None, -1, n).2, 0);
        }
        // x[::MIN] of 5 elements is [x[4]]; x[::MAX] is [x[0]].
        assert_eq!(normalize_slice(None, None, i64::MIN, 5), (4, 1, 1));
        assert_eq!(normalize_slice(None, None, i64::MAX, 5), (0, 1, 1));
        // Exhaustive against Python's definition on small cases.
        for n in 0..7usize {
            for step in [-7i64, -3, -2, -1, 1, 2, 3, 7] {
                for start in [None, Some(-9), Some(-2), Some(0), Some(3), Some(9)] {
                    for stop in [None, Some(-9), Some(-1), Some(0), Some(4), Some(9)] {
                        let (s, st, len) = normalize_slice(start, stop, step, n);
                        let want = python_indices(start, stop, step, n as i64);
                        let got: Vec<i64> = (0..len as i64).map(|i| s + st * i).collect();
                        assert_eq!(got, want, "{start:?}:{stop:?}:{step} of {n}");
                    }
                }
            }
        }
    }

    /// `range(*slice(start, stop, step).indices(n))`, written out.
    fn python_indices(start: Option<i64>, stop: Option<i64>, step: i64, n: i64) -> Vec<i64> {
        let adj = |v: i64, lo: i64, hi: i64| {
            let v = if v < 0 { v + n } else { v };
            v.clamp(lo, hi)
        };
        let (s, e) = if step > 0 {
            (
                start.map_or(0, |v| adj(v, 0, n)),
                stop.map_or(n, |v| adj(v, 0, n)),
            )
        } else {
            (
                start.map_or(n - 1, |v| adj(v, -1, n - 1)),
                stop.map_or(-1, |v| adj(v, -1, n - 1)),
            )
        };
        let mut out = Vec::new();
        let mut i = s;
        while (step > 0 && i < e) || (step < 0 && i > e) {
            out.push(i);
            i += step;
        }
        out
    }

    #[test]
    fn python_slice_semantics() {
        assert_eq!(normalize_slice(None, None, 1, 5), (0, 1, 5));
        assert_eq!(normalize_slice(None, None, -1, 5), (4, -1, 5));
        assert_eq!(normalize_slice(None, None, 2, 5), (0, 2, 3));
        assert_eq!(normalize_slice(Some(-2), None, 1, 5), (3, 1, 2));
        assert_eq!(normalize_slice(Some(1), Some(-1), -1, 5), (1, 1, 0)); // empty: step 1
        assert_eq!(normalize_slice(Some(10), Some(-10), -3, 5), (4, -3, 2));
        assert_eq!(normalize_slice(None, None, 1, 0), (0, 1, 0));
    }

    #[test]
    fn view_chunks_follow_input_chunks() {
        // Input chunks [0,4) [4,8) [8,10); take ::2 -> coords 0,2,4,6,8.
        assert_eq!(view_axis_chunks(&[0, 4, 8, 10], 0, 2, 5), vec![2, 2, 1]);
        // Reverse: 9,8,...,0.
        assert_eq!(view_axis_chunks(&[0, 4, 8, 10], 9, -1, 10), vec![2, 4, 4]);
        // 1::3 -> 1,4,7.
        assert_eq!(view_axis_chunks(&[0, 4, 8, 10], 1, 3, 3), vec![1, 2]);
    }
}

//! The tile vocabulary of the fused-program executor.
//!
//! The output region is walked in C order in tiles of [`TILE`] elements; a tile is cut
//! into *runs* along the last axis ([`Run`]), and every leaf of a program is an affine
//! function of the output coordinates, so a run reads it at `base + j*inc` ([`base`],
//! [`inc`]). A tile's values for one node are a [`Buf`], one vector per element family.
//! A reduction addresses its accumulators by affine forms too ([`reduce_target`]).

use tessera_core::chunks::c_strides;
use tessera_core::program::Linear;

/// Elements per tile: small enough that a program's tile buffers stay in L1/L2.
pub const TILE: usize = 2048;

/// Values of one node over a tile, in the compute type of its dtype.
#[derive(Debug)]
pub(crate) enum Buf {
    B(Vec<bool>),
    I(Vec<i64>),
    U(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// A run of consecutive output elements along the last axis.
pub(crate) struct Run {
    /// Offset inside the tile.
    pub(crate) pos: usize,
    /// Output coordinates of the run's first element.
    pub(crate) coords: Coords,
    /// Length.
    pub(crate) len: usize,
}

/// Coordinates stored inline up to 8 dimensions: a tile has one run per row, and a heap
/// allocation per run was most of the per-task cost of small chunks.
#[derive(Clone)]
pub(crate) enum Coords {
    Inline([usize; 8], usize),
    Heap(Vec<usize>),
}

impl Coords {
    pub(crate) fn new(v: &[usize]) -> Coords {
        if v.len() <= 8 {
            let mut a = [0; 8];
            a[..v.len()].copy_from_slice(v);
            Coords::Inline(a, v.len())
        } else {
            Coords::Heap(v.to_vec())
        }
    }
}

impl std::ops::Deref for Coords {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        match self {
            Coords::Inline(a, n) => &a[..*n],
            Coords::Heap(v) => v,
        }
    }
}

/// A linear form's value at `coords`.
#[inline]
pub(crate) fn base(lin: &Linear, coords: &[usize]) -> i64 {
    lin.offset
        + lin
            .coef
            .iter()
            .zip(coords)
            .map(|(c, &x)| c * x as i64)
            .sum::<i64>()
}

/// A linear form's step along the last axis (along a run).
#[inline]
pub(crate) fn inc(lin: &Linear) -> i64 {
    lin.coef.last().copied().unwrap_or(0)
}

/// Every element index of the tile, in order, through a linear form.
/// A leaf's element runs `(first index, step, length)` for a tile's runs: how a random
/// source is sampled (`RandomSpec::sample_runs`).
pub(crate) fn spans(lin: &Linear, runs: &[Run]) -> Vec<(i64, i64, usize)> {
    runs.iter()
        .map(|r| (base(lin, &r.coords), inc(lin), r.len))
        .collect()
}

pub(crate) fn indices(lin: &Linear, runs: &[Run], n: usize) -> Vec<i64> {
    // Built by extension: no zero-fill before the values are written.
    let mut v = Vec::with_capacity(n);
    for r in runs {
        let (b, s) = (base(lin, &r.coords), inc(lin));
        v.extend((0..r.len as i64).map(|j| b + j * s));
    }
    debug_assert_eq!(v.len(), n);
    v
}

/// Whether every linear form reads the output's C order as one arithmetic progression
/// (coefficient `inc · stride` on every axis longer than 1): then a tile is one run
/// whatever rows it spans. A same-shape operand or a slice of whole rows is; a
/// transposed one or a column slice is not.
pub(crate) fn reads_flat<'a>(shape: &[usize], lins: impl IntoIterator<Item = &'a Linear>) -> bool {
    let strides = c_strides(shape);
    lins.into_iter().all(|lin| {
        let step = inc(lin);
        lin.coef
            .iter()
            .zip(&strides)
            .zip(shape)
            .all(|((&c, &s), &n)| n <= 1 || c == step * s as i64)
    })
}

/// The tile `start .. start + len` as one run (see [`reads_flat`]).
pub(crate) fn flat_run(shape: &[usize], start: usize, len: usize) -> Vec<Run> {
    let coords: Vec<usize> = c_strides(shape)
        .iter()
        .zip(shape)
        .map(|(&s, &n)| (start / s.max(1)) % n.max(1))
        .collect();
    vec![Run {
        pos: 0,
        coords: Coords::new(&coords),
        len,
    }]
}

pub(crate) fn runs_for(shape: &[usize], start: usize, len: usize) -> Vec<Run> {
    if shape.is_empty() {
        return vec![Run {
            pos: 0,
            coords: Coords::new(&[]),
            len: 1,
        }];
    }
    let strides = c_strides(shape);
    let mut coords: Vec<usize> = strides
        .iter()
        .zip(shape)
        .map(|(&s, &n)| (start / s) % n.max(1))
        .collect();
    let last = shape.len() - 1;
    // One run per row touched: at most len / row + 2.
    let mut runs = Vec::with_capacity(len / shape[last].max(1) + 2);
    let mut pos = 0;
    while pos < len {
        let l = (shape[last] - coords[last]).min(len - pos);
        runs.push(Run {
            pos,
            coords: Coords::new(&coords),
            len: l,
        });
        pos += l;
        coords[last] += l;
        let mut a = last;
        while coords[a] >= shape[a] && a > 0 {
            coords[a] = 0;
            a -= 1;
            coords[a] += 1;
        }
    }
    runs
}

pub(crate) fn clone_buf(b: &Buf) -> Buf {
    match b {
        Buf::B(v) => Buf::B(v.clone()),
        Buf::I(v) => Buf::I(v.clone()),
        Buf::U(v) => Buf::U(v.clone()),
        Buf::F32(v) => Buf::F32(v.clone()),
        Buf::F64(v) => Buf::F64(v.clone()),
    }
}

/// For a reduction of a region of `shape` over `axes`: the reduced shape (those axes of
/// length 1), the C-order index in it of each element's accumulator, and each element's
/// C-order position among the elements it is reduced with, as linear forms.
pub(crate) fn reduce_target(shape: &[usize], axes: &[usize]) -> (Vec<usize>, Linear, Linear) {
    let mut out_shape = shape.to_vec();
    for &a in axes {
        out_shape[a] = 1;
    }
    let ostr = c_strides(&out_shape);
    let rshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let rstr = c_strides(&rshape);
    let mut target = Linear {
        offset: 0,
        coef: vec![0; shape.len()],
    };
    let mut pos = target.clone();
    for (a, &os) in ostr.iter().enumerate() {
        if let Some(k) = axes.iter().position(|&x| x == a) {
            pos.coef[a] = rstr[k] as i64;
        } else {
            target.coef[a] = os as i64;
        }
    }
    (out_shape, target, pos)
}

//! Shapes, chunk grids and the normalisation of a user's chunk spec.
//!
//! A [`Chunks`] holds, per axis, the sizes of the chunks along it; chunks may be irregular
//! (as in Dask). A user writes a [`ChunkSpec`]: one size for every axis, one entry per axis
//! (a size, explicit sizes, `-1` for the whole axis, or `auto`), or `auto` everywhere.
//!
//! ## Choosing a chunk size
//! Every chunk is one task, and every task costs scheduling time; every chunk in flight
//! costs memory. The lessons of the "large model output" training (seed 004) hold here too:
//! - chunks that are too *small* drown in per-task overhead (tessera's is a few µs, Dask's
//!   about 200 µs, but ten million tiny chunks are still ten million tasks);
//! - chunks that are too *big* run out of memory: each worker thread holds a few at once;
//! - chunk along the axes the computation does *not* reduce or reshape over.
//!
//! `auto` picks chunks near the byte target `array.chunk-size` (default 128 MiB, as Dask),
//! keeping `-1` axes whole and splitting the remaining `auto` axes evenly (square-ish
//! chunks), then spreading sizes so chunks along an axis differ by at most one element.

use crate::error::{Error, Result};

/// The shape of an array: one length per axis.
pub type Shape = Vec<usize>;

/// Number of elements of a shape (1 for 0-d). Callers pass shapes of arrays that exist,
/// whose element count [`Chunks::new`] and [`ChunkSpec::resolve`] have checked; for a
/// shape from elsewhere use [`checked_numel`].
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Number of elements of a shape, or `None` when it overflows `usize`.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n))
}

/// The most elements an array may have (2^60): its size in bytes then fits an `i64` for
/// every dtype, so no byte count in a plan can overflow.
pub const MAX_ELEMENTS: usize = 1 << 60;

/// The most chunks an array may have when no `memory-limit` is set (2^24, about 16.8
/// million): a plan that large already takes gigabytes before any data, and the chunk
/// size lists of a larger grid would be allocated before anything could refuse it.
pub const MAX_CHUNKS: u64 = 1 << 24;

/// About how many bytes one chunk's task takes in a plan (task record, program, dependency
/// lists): a grid of more than `memory-limit / TASK_BYTES` chunks is refused.
pub const TASK_BYTES: u64 = 512;

/// Checks that an array of `shape` can exist: its element count fits [`MAX_ELEMENTS`].
pub fn check_shape(op: &str, shape: &[usize]) -> Result<()> {
    match checked_numel(shape) {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(Error::invalid(
            op,
            format!(
                "shape {shape:?} has more than 2^60 elements (or its element count overflows); \
                 no array that large can be computed"
            ),
        )),
    }
}

/// Checks a chunk grid of `counts` chunks per axis against what a plan can hold: at most
/// [`MAX_CHUNKS`], and with `memory-limit` set, at most `memory-limit / TASK_BYTES`.
/// Called before any per-chunk structure is allocated.
pub fn check_grid(shape: &[usize], counts: &[u64]) -> Result<()> {
    let total = counts
        .iter()
        .try_fold(1u64, |acc, &c| acc.checked_mul(c.max(1)));
    let limit = crate::config::memory_limit()?;
    let fits = |t: u64| match limit {
        Some(bytes) => t.saturating_mul(TASK_BYTES) <= bytes,
        None => true,
    };
    match total {
        Some(t) if t <= MAX_CHUNKS && fits(t) => Ok(()),
        Some(t) if t <= MAX_CHUNKS => Err(Error::MemoryLimit {
            projected: t.saturating_mul(TASK_BYTES),
            limit: limit.unwrap_or(u64::MAX),
            advice: format!(
                "shape {shape:?} in {counts:?} chunks per axis is {t} tasks before any data; \
                 use larger chunks"
            ),
        }),
        _ => Err(Error::invalid(
            "chunks",
            format!(
                "shape {shape:?} in {counts:?} chunks per axis is more than 2^24 chunks; a \
                 task graph that large cannot be held in memory; use larger chunks"
            ),
        )),
    }
}

/// C-order (row-major) strides in elements.
pub fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Chunk sizes along every axis of an array.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Chunks {
    sizes: Vec<Vec<usize>>,
    /// Start offsets per axis (one more than chunks), derived from `sizes` once: lowering
    /// asks for a block's offset once per task, and recomputing made it quadratic.
    offsets: Vec<Vec<usize>>,
}

fn axis_offsets(sizes: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sizes.len() + 1);
    let mut acc = 0;
    out.push(0);
    for &s in sizes {
        acc += s;
        out.push(acc);
    }
    out
}

impl Chunks {
    /// Builds from explicit per-axis sizes, checking them against `shape`, and the grid
    /// against what a plan can hold ([`check_grid`]).
    pub fn new(shape: &[usize], sizes: Vec<Vec<usize>>) -> Result<Chunks> {
        check_shape("chunks", shape)?;
        let counts: Vec<u64> = sizes.iter().map(|s| s.len() as u64).collect();
        check_grid(shape, &counts)?;
        Chunks::with_checked_grid(shape, sizes)
    }

    /// [`Chunks::new`] for a shape and a grid the caller has already passed through
    /// [`check_shape`] and [`check_grid`] (before allocating the sizes): checks the sizes.
    fn with_checked_grid(shape: &[usize], sizes: Vec<Vec<usize>>) -> Result<Chunks> {
        if sizes.len() != shape.len() {
            return Err(Error::invalid(
                "chunks",
                format!(
                    "{} axes of chunk sizes for a {}-d shape {:?}",
                    sizes.len(),
                    shape.len(),
                    shape
                ),
            ));
        }
        for (axis, (s, &n)) in sizes.iter().zip(shape).enumerate() {
            let total = s
                .iter()
                .try_fold(0usize, |acc, &c| acc.checked_add(c))
                .ok_or_else(|| {
                    Error::invalid(
                        "chunks",
                        format!("axis {axis}: the chunk sizes add up to more than usize::MAX"),
                    )
                })?;
            if total != n {
                return Err(Error::invalid(
                    "chunks",
                    format!("axis {axis}: chunk sizes {s:?} add up to {total}, the axis has {n}"),
                ));
            }
            if n > 0 && s.contains(&0) {
                return Err(Error::invalid(
                    "chunks",
                    format!("axis {axis}: zero-size chunk in {s:?} on a non-empty axis"),
                ));
            }
            if n == 0 && s.len() != 1 {
                return Err(Error::invalid(
                    "chunks",
                    format!(
                        "axis {axis}: an empty axis has exactly one chunk of size 0, got {s:?}"
                    ),
                ));
            }
        }
        Ok(Chunks::from_sizes(sizes))
    }

    /// One chunk covering the whole array.
    pub fn single(shape: &[usize]) -> Chunks {
        Chunks::from_sizes(shape.iter().map(|&n| vec![n]).collect())
    }

    /// Regular chunks of at most `size[axis]` elements along each axis.
    pub fn regular(shape: &[usize], size: &[usize]) -> Chunks {
        Chunks::from_sizes(
            shape
                .iter()
                .zip(size)
                .map(|(&n, &c)| split_axis(n, c))
                .collect(),
        )
    }

    /// Per-axis chunk sizes.
    pub fn sizes(&self) -> &[Vec<usize>] {
        &self.sizes
    }

    /// Sizes along one axis.
    pub fn axis(&self, axis: usize) -> &[usize] {
        &self.sizes[axis]
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.sizes.len()
    }

    /// The array shape these chunks tile.
    pub fn shape(&self) -> Shape {
        self.sizes.iter().map(|s| s.iter().sum()).collect()
    }

    /// Number of chunks along each axis.
    pub fn grid(&self) -> Vec<usize> {
        self.sizes.iter().map(|s| s.len()).collect()
    }

    /// Total number of chunks.
    pub fn count(&self) -> usize {
        numel(&self.grid())
    }

    /// Offsets where each chunk starts along `axis` (length = number of chunks + 1).
    pub fn offsets(&self, axis: usize) -> &[usize] {
        &self.offsets[axis]
    }

    /// From sizes already known to be valid.
    fn from_sizes(sizes: Vec<Vec<usize>>) -> Chunks {
        let offsets = sizes.iter().map(|s| axis_offsets(s)).collect();
        Chunks { sizes, offsets }
    }

    /// The shape of the chunk at grid position `block`.
    pub fn block_shape(&self, block: &[usize]) -> Shape {
        block
            .iter()
            .enumerate()
            .map(|(a, &b)| self.sizes[a][b])
            .collect()
    }

    /// The largest chunk shape (per axis maximum).
    pub fn max_block_shape(&self) -> Shape {
        self.sizes
            .iter()
            .map(|s| s.iter().copied().max().unwrap_or(0))
            .collect()
    }

    /// Iterates over every block index in C order.
    pub fn blocks(&self) -> impl Iterator<Item = Vec<usize>> + '_ {
        grid_indices(self.grid())
    }
}

/// Iterates every multi-index of `grid` in C order (one empty index for a 0-d grid).
pub fn grid_indices(grid: Vec<usize>) -> impl Iterator<Item = Vec<usize>> {
    let total = numel(&grid);
    let mut cur = vec![0usize; grid.len()];
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= total {
            return None;
        }
        let out = cur.clone();
        done += 1;
        for a in (0..grid.len()).rev() {
            cur[a] += 1;
            if cur[a] < grid[a] {
                break;
            }
            cur[a] = 0;
        }
        Some(out)
    })
}

/// Splits an axis of `n` elements into chunks of at most `c` (a final smaller one).
pub fn split_axis(n: usize, c: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0];
    }
    let c = c.max(1).min(n);
    let mut v = vec![c; n / c];
    if !n.is_multiple_of(c) {
        v.push(n % c);
    }
    v
}

/// One axis of a user's chunk spec.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisChunks {
    /// Chunks of at most this many elements (`-1` in Dask spelling is [`AxisChunks::Whole`]).
    Size(usize),
    /// Explicit sizes that must add up to the axis length.
    Explicit(Vec<usize>),
    /// The whole axis in one chunk.
    Whole,
    /// Chosen from the byte target.
    Auto,
    /// A negative size other than `-1` in Dask spelling (`[i64; N]`): refused when the
    /// spec is resolved, with the value.
    Negative(i64),
}

/// A user's chunk spec, normalised against a shape and dtype by [`ChunkSpec::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkSpec {
    /// `auto` on every axis.
    Auto,
    /// The same size on every axis.
    Uniform(usize),
    /// One entry per axis.
    PerAxis(Vec<AxisChunks>),
    /// Already-resolved chunks.
    Exact(Chunks),
}

impl From<usize> for ChunkSpec {
    fn from(v: usize) -> Self {
        ChunkSpec::Uniform(v)
    }
}

impl From<&[usize]> for ChunkSpec {
    fn from(v: &[usize]) -> Self {
        ChunkSpec::PerAxis(v.iter().map(|&s| AxisChunks::Size(s)).collect())
    }
}

impl<const N: usize> From<[usize; N]> for ChunkSpec {
    fn from(v: [usize; N]) -> Self {
        ChunkSpec::from(&v[..])
    }
}

/// Dask spelling: `-1` is the whole axis; any other negative size is refused when resolved.
impl<const N: usize> From<[i64; N]> for ChunkSpec {
    fn from(v: [i64; N]) -> Self {
        ChunkSpec::PerAxis(
            v.iter()
                .map(|&s| match s {
                    -1 => AxisChunks::Whole,
                    s if s < 0 => AxisChunks::Negative(s),
                    s => AxisChunks::Size(s as usize),
                })
                .collect(),
        )
    }
}

impl From<Vec<AxisChunks>> for ChunkSpec {
    fn from(v: Vec<AxisChunks>) -> Self {
        ChunkSpec::PerAxis(v)
    }
}

impl From<Chunks> for ChunkSpec {
    fn from(v: Chunks) -> Self {
        ChunkSpec::Exact(v)
    }
}

impl ChunkSpec {
    /// Resolves the spec for an array of `shape` whose elements are `itemsize` bytes,
    /// with `target_bytes` as the `auto` target.
    pub fn resolve(&self, shape: &[usize], itemsize: usize, target_bytes: usize) -> Result<Chunks> {
        let axes: Vec<AxisChunks> = match self {
            ChunkSpec::Exact(c) => {
                if c.shape() != shape {
                    return Err(Error::invalid(
                        "chunks",
                        format!(
                            "chunks tile shape {:?}, the array has shape {:?}",
                            c.shape(),
                            shape
                        ),
                    ));
                }
                return Ok(c.clone());
            }
            ChunkSpec::Auto => vec![AxisChunks::Auto; shape.len()],
            ChunkSpec::Uniform(s) => {
                if *s == 0 {
                    return Err(Error::invalid("chunks", "chunk size must be at least 1"));
                }
                vec![AxisChunks::Size(*s); shape.len()]
            }
            ChunkSpec::PerAxis(v) => {
                if v.len() != shape.len() {
                    return Err(Error::invalid(
                        "chunks",
                        format!(
                            "{} chunk entries for a {}-d shape {:?}",
                            v.len(),
                            shape.len(),
                            shape
                        ),
                    ));
                }
                v.clone()
            }
        };
        check_shape("chunks", shape)?;
        // Refuse a grid the plan could not hold before allocating per-chunk sizes (auto
        // axes count as one here and are checked once their edge is chosen, below).
        let counts: Vec<u64> = axes
            .iter()
            .zip(shape)
            .map(|(spec, &n)| match spec {
                AxisChunks::Size(s) if *s > 0 => n.div_ceil(*s) as u64,
                AxisChunks::Explicit(v) => v.len() as u64,
                _ => 1,
            })
            .collect();
        check_grid(shape, &counts)?;
        let mut sizes: Vec<Option<Vec<usize>>> = Vec::with_capacity(shape.len());
        for (axis, (spec, &n)) in axes.iter().zip(shape).enumerate() {
            sizes.push(match spec {
                AxisChunks::Size(0) => {
                    return Err(Error::invalid(
                        "chunks",
                        format!("axis {axis}: chunk size must be at least 1 (use -1/Whole for the whole axis)"),
                    ))
                }
                AxisChunks::Negative(v) => {
                    return Err(Error::invalid(
                        "chunks",
                        format!("axis {axis}: chunk size {v} is negative; use -1 for the whole axis or a positive size"),
                    ))
                }
                AxisChunks::Size(s) => Some(split_axis(n, *s)),
                AxisChunks::Whole => Some(vec![n]),
                AxisChunks::Explicit(v) => Some(v.clone()),
                AxisChunks::Auto => None,
            });
        }
        // Auto axes share what the byte target leaves after the fixed axes.
        let auto_axes: Vec<usize> = (0..shape.len()).filter(|&a| sizes[a].is_none()).collect();
        if !auto_axes.is_empty() {
            let fixed_elems: f64 = (0..shape.len())
                .filter(|a| sizes[*a].is_some())
                .map(|a| {
                    sizes[a]
                        .as_ref()
                        .unwrap()
                        .iter()
                        .copied()
                        .max()
                        .unwrap_or(0)
                        .max(1) as f64
                })
                .product();
            let budget =
                (target_bytes.max(itemsize) as f64 / itemsize.max(1) as f64 / fixed_elems).max(1.0);
            // Give each auto axis the same edge, capped at its length; redistribute the slack.
            let mut remaining = auto_axes.clone();
            let mut budget_left = budget;
            let mut chosen = vec![0usize; shape.len()];
            while !remaining.is_empty() {
                let edge = budget_left.powf(1.0 / remaining.len() as f64);
                let small: Vec<usize> = remaining
                    .iter()
                    .copied()
                    .filter(|&a| (shape[a].max(1) as f64) <= edge)
                    .collect();
                if small.is_empty() {
                    for &a in &remaining {
                        chosen[a] = (edge.floor() as usize).max(1);
                    }
                    break;
                }
                for &a in &small {
                    chosen[a] = shape[a].max(1);
                    budget_left /= shape[a].max(1) as f64;
                }
                remaining.retain(|a| !small.contains(a));
                budget_left = budget_left.max(1.0);
            }
            let counts: Vec<u64> = (0..shape.len())
                .map(|a| match &sizes[a] {
                    Some(v) => v.len() as u64,
                    None => shape[a].div_ceil(chosen[a].max(1)) as u64,
                })
                .collect();
            check_grid(shape, &counts)?;
            for &a in &auto_axes {
                sizes[a] = Some(balanced_split(shape[a], chosen[a]));
            }
        }
        // Every axis's count went through `check_grid` above, before its sizes existed.
        Chunks::with_checked_grid(shape, sizes.into_iter().map(|s| s.unwrap()).collect())
    }

    /// [`resolve`](ChunkSpec::resolve) for a stored array whose own chunks have the edges
    /// `stored` (one per axis, as h5py and Zarr report them): on the axes the spec leaves
    /// to `auto`, each block is a whole number of stored chunks (at least one, the edge
    /// `auto` chose rounded down), so no stored chunk is read by two blocks. Other axes are
    /// as `resolve` makes them; a `stored` of another rank is ignored.
    ///
    /// # Errors
    /// As [`resolve`](ChunkSpec::resolve).
    pub fn resolve_aligned(
        &self,
        shape: &[usize],
        itemsize: usize,
        target_bytes: usize,
        stored: &[usize],
    ) -> Result<Chunks> {
        let plain = self.resolve(shape, itemsize, target_bytes)?;
        let auto: Vec<bool> = match self {
            ChunkSpec::Auto => vec![true; shape.len()],
            ChunkSpec::PerAxis(v) => v.iter().map(|a| matches!(a, AxisChunks::Auto)).collect(),
            _ => vec![false; shape.len()],
        };
        if stored.len() != shape.len() || !auto.contains(&true) {
            return Ok(plain);
        }
        let sizes = plain
            .sizes()
            .iter()
            .enumerate()
            .map(|(axis, s)| {
                let n = shape[axis];
                if !auto[axis] || n == 0 {
                    return s.clone();
                }
                let edge = s.iter().copied().max().unwrap_or(1);
                let unit = stored[axis].clamp(1, n);
                split_axis(n, (edge / unit).max(1) * unit)
            })
            .collect();
        Chunks::new(shape, sizes)
    }
}

/// Splits `n` into `ceil(n / max)` chunks whose sizes differ by at most one.
pub fn balanced_split(n: usize, max: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0];
    }
    let k = n.div_ceil(max.max(1));
    let base = n / k;
    let extra = n % k;
    (0..k).map(|i| base + usize::from(i < extra)).collect()
}

pub use tessera_config::parse_bytes;

/// Formats a byte count the way Dask's repr does (`7.63 MiB`).
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_auto_blocks_are_whole_stored_chunks_and_fixed_axes_stay() {
        // 2 KiB of f64 is 256 elements: auto picks 16 x 16, a multiple of the 4 x 4 stored.
        let c = ChunkSpec::Auto
            .resolve_aligned(&[64, 64], 8, 2048, &[4, 4])
            .unwrap();
        assert_eq!(c.axis(0), &[16; 4]);
        // Stored edges that auto's edge does not divide: rounded down to 2 stored chunks.
        let c = ChunkSpec::Auto
            .resolve_aligned(&[64, 64], 8, 2048, &[6, 7])
            .unwrap();
        assert_eq!(c.axis(0)[0], 12);
        assert_eq!(c.axis(1)[0], 14);
        assert!(c
            .sizes()
            .iter()
            .all(|s| s[..s.len() - 1].iter().all(|&e| e == s[0])));
        // A stored chunk over the target: one stored chunk a block, not a cut one.
        let c = ChunkSpec::Auto
            .resolve_aligned(&[100, 100], 8, 64, &[10, 50])
            .unwrap();
        assert_eq!((c.axis(0)[0], c.axis(1)[0]), (10, 50));
        // Axes the user fixed are kept; only the auto one aligns.
        let spec = ChunkSpec::PerAxis(vec![AxisChunks::Size(5), AxisChunks::Auto]);
        let c = spec
            .resolve_aligned(&[20, 64], 8, 8 * 5 * 20, &[4, 8])
            .unwrap();
        assert_eq!(c.axis(0), &[5; 4]);
        assert_eq!(c.axis(1)[0], 16);
        // No stored chunks of the array's rank: plain resolve.
        let plain = ChunkSpec::Auto.resolve(&[64, 64], 8, 2048).unwrap();
        let other = ChunkSpec::Auto
            .resolve_aligned(&[64, 64], 8, 2048, &[4])
            .unwrap();
        assert_eq!(plain, other);
    }

    /// Shapes and chunkings at the edges of `usize`: never a panic or an allocation of
    /// the grid before the check; either valid chunks that tile the shape, or an error.
    #[test]
    fn sizes_near_the_overflow_limits_are_checked_not_wrapped() {
        let big = 1usize << 32;
        // 2^32 * 2^32 * 4 elements wrapped to 0 before.
        let e = ChunkSpec::Auto
            .resolve(&[big, big, 4], 8, 128 << 20)
            .unwrap_err();
        assert!(e.to_string().contains("2^60"), "{e}");
        // A chunk list whose sum wraps.
        let e = Chunks::new(&[1], vec![vec![usize::MAX, 2]]).unwrap_err();
        assert!(e.to_string().contains("add up to more than"), "{e}");
        // 2^45 chunks of one element: refused before a 2^45-entry vector is built.
        let e = ChunkSpec::Uniform(1)
            .resolve(&[1 << 45], 8, 128 << 20)
            .unwrap_err();
        assert!(e.to_string().contains("2^24 chunks"), "{e}");
        // The same through auto chunks of a huge array.
        let e = ChunkSpec::Auto.resolve(&[1 << 59], 8, 1 << 10).unwrap_err();
        assert!(e.to_string().contains("2^24 chunks"), "{e}");
        // Negative sizes other than -1.
        let e = ChunkSpec::from([-2i64, 3])
            .resolve(&[4, 6], 8, 1 << 20)
            .unwrap_err();
        assert!(e.to_string().contains("-2 is negative"), "{e}");
        assert_eq!(
            ChunkSpec::from([-1i64, 3])
                .resolve(&[4, 6], 8, 1 << 20)
                .unwrap()
                .grid(),
            vec![1, 2]
        );
        // Random shapes and chunk sizes of every magnitude.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2_000 {
            let ndim = (next() % 4) as usize;
            let shape: Vec<usize> = (0..ndim)
                .map(|_| match next() % 4 {
                    0 => (next() % 10) as usize,
                    1 => 1usize << (next() % 64),
                    2 => usize::MAX - (next() % 3) as usize,
                    _ => (next() >> (next() % 64)) as usize,
                })
                .collect();
            let spec = match next() % 3 {
                // Sizes relative to the axes, so that a valid grid stays small to build.
                0 => ChunkSpec::Uniform(shape.first().copied().unwrap_or(1) >> (next() % 8)),
                1 => ChunkSpec::Auto,
                _ => ChunkSpec::PerAxis(
                    shape
                        .iter()
                        .map(|&n| AxisChunks::Size((n >> (next() % 8)).max(1)))
                        .collect(),
                ),
            };
            if let Ok(c) = spec.resolve(&shape, 8, 128 << 20) {
                assert_eq!(c.shape(), shape, "{spec:?}");
                assert!(c.count() as u64 <= MAX_CHUNKS);
                assert!(checked_numel(&shape).is_some_and(|n| n <= MAX_ELEMENTS));
            }
        }
    }

    #[test]
    fn uniform_and_whole() {
        let c = ChunkSpec::from([3i64, -1])
            .resolve(&[10, 7], 8, 1 << 27)
            .unwrap();
        assert_eq!(c.sizes(), &[vec![3, 3, 3, 1], vec![7]]);
        assert_eq!(c.count(), 4);
        assert_eq!(c.offsets(0), vec![0, 3, 6, 9, 10]);
    }

    #[test]
    fn explicit_must_add_up() {
        let err = ChunkSpec::PerAxis(vec![AxisChunks::Explicit(vec![2, 2])])
            .resolve(&[5], 8, 1 << 20)
            .unwrap_err();
        assert!(
            err.to_string().contains("add up to 4, the axis has 5"),
            "{err}"
        );
    }

    #[test]
    fn auto_hits_byte_target() {
        // 10000x10000 f64 with a 8 MB target: 1000x1000 chunks (8 MB each).
        let c = ChunkSpec::Auto
            .resolve(&[10000, 10000], 8, 8_000_000)
            .unwrap();
        assert_eq!(c.axis(0)[0], 1000);
        assert_eq!(c.axis(1)[0], 1000);
        // A short axis is kept whole and the long one gets the rest of the budget.
        let c = ChunkSpec::Auto
            .resolve(&[4, 1_000_000], 8, 8_000_000)
            .unwrap();
        assert_eq!(c.axis(0), &[4]);
        assert!(c.axis(1).iter().all(|&s| s * 4 * 8 <= 8_000_000 + 32));
        // Whole axes count against the budget.
        let c = ChunkSpec::PerAxis(vec![AxisChunks::Whole, AxisChunks::Auto])
            .resolve(&[1000, 1_000_000], 8, 8_000_000)
            .unwrap();
        assert_eq!(c.axis(1)[0], 1000);
    }

    #[test]
    fn empty_axes_have_one_empty_chunk() {
        let c = ChunkSpec::Uniform(4).resolve(&[0, 5], 8, 1 << 20).unwrap();
        assert_eq!(c.sizes(), &[vec![0], vec![4, 1]]);
        assert_eq!(c.count(), 2);
    }

    #[test]
    fn grid_indices_c_order() {
        let v: Vec<_> = grid_indices(vec![2, 2]).collect();
        assert_eq!(v, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        assert_eq!(grid_indices(vec![]).count(), 1);
        assert_eq!(grid_indices(vec![0, 3]).count(), 0);
    }

    #[test]
    fn bytes_parse_and_format() {
        assert_eq!(parse_bytes("128MiB"), Some(128 << 20));
        assert_eq!(parse_bytes("1 GB"), Some(1_000_000_000));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("12 parsecs"), None);
        assert_eq!(format_bytes(8_000_000), "7.63 MiB");
        assert_eq!(balanced_split(10, 4), vec![4, 3, 3]);
    }
}

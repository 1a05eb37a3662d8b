//! Sparse generators: a random array of given density, and the identity.
//!
//! `random` draws each element's presence independently with probability `density`, as
//! `scipy.sparse.random` does in expectation, by *geometric skipping*: along each row
//! (the last axis) the gap to the next present element is `floor(ln u / ln(1 - p))` for a
//! uniform `u`, so the work is proportional to the elements kept, never to the dense size.
//! The uniforms come from tessera's counter-based Philox stream keyed by the seed, with
//! the row's global index as the counter's stream word, so the array does not depend on
//! the chunking: a chunk walks the rows it covers across the full width and keeps the
//! columns it owns. Values are uniform on `[0, 1)` from a second, independent stream.

use std::sync::Arc;

use tessera_array::Array;
use tessera_core::chunks::c_strides;
use tessera_core::random::{philox4x32_10, unit_f64};
use tessera_core::{BackendRef, ChunkSpec, Chunks, DType, Error, Result, Scalar};

use crate::chunk::{vec1, SparseChunk};
use crate::structure::encode;

/// The uniform in `(0, 1]` at counter `(i, row)` of stream `which`.
fn uniform(seed: u64, which: u32, row: u64, i: u64) -> f64 {
    let r = philox4x32_10(
        [
            i as u32,
            (i >> 32) as u32,
            row as u32,
            (row >> 32) as u32 ^ which,
        ],
        [seed as u32, (seed >> 32) as u32],
    );
    1.0 - unit_f64(r[0], r[1])
}

/// The present columns of global row `row` (width `width`), in increasing order.
fn row_columns(seed: u64, density: f64, row: u64, width: usize, out: &mut Vec<u64>) {
    out.clear();
    if density <= 0.0 || width == 0 {
        return;
    }
    if density >= 1.0 {
        out.extend(0..width as u64);
        return;
    }
    let log_q = (-density).ln_1p();
    let mut col: i64 = -1;
    let mut draw = 0u64;
    loop {
        let u = uniform(seed, 0, row, draw);
        let gap = (u.ln() / log_q).floor();
        if !gap.is_finite() || gap >= width as f64 {
            return;
        }
        col += gap as i64 + 1;
        if col >= width as i64 {
            return;
        }
        out.push(col as u64);
        draw += 1;
    }
}

/// One chunk of the random array: rows `row0..` and columns `col0..` of the full shape.
fn random_chunk(
    seed: u64,
    density: f64,
    full: &[usize],
    origin: &[usize],
    shape: &[usize],
) -> SparseChunk {
    let nd = full.len();
    let width = full[nd - 1];
    let (c0, cn) = (origin[nd - 1] as u64, shape[nd - 1] as u64);
    let lead: Vec<usize> = shape[..nd - 1].to_vec();
    let full_lead = c_strides(&full[..nd - 1]);
    let strides = c_strides(shape);
    let rows: usize = lead.iter().product();
    let mut cols = Vec::new();
    let (mut idx, mut vals) = (Vec::new(), Vec::new());
    let mut c = vec![0usize; nd];
    for r in 0..rows {
        let mut rest = r;
        for a in (0..nd - 1).rev() {
            c[a] = rest % lead[a];
            rest /= lead[a];
        }
        let global: u64 = (0..nd - 1)
            .map(|a| ((c[a] + origin[a]) * full_lead[a]) as u64)
            .sum();
        row_columns(seed, density, global, width, &mut cols);
        for &col in cols.iter().filter(|&&col| col >= c0 && col < c0 + cn) {
            c[nd - 1] = (col - c0) as usize;
            idx.push(encode(&c, &strides));
            // Drawn at the element's own counter, so independent of the skipping.
            vals.push(1.0 - uniform(seed, 1, global, col));
        }
    }
    SparseChunk::from_parts(shape, Scalar::F64(0.0), idx, vec1(vals))
}

/// A random `float64` array on `backend` whose elements are present with probability
/// `density` (values uniform on `[0, 1)`, absent ones 0). At least 1-d.
pub fn random(
    backend: &BackendRef,
    shape: &[usize],
    density: f64,
    chunks: impl Into<ChunkSpec>,
    seed: u64,
) -> Result<Array> {
    if !(0.0..=1.0).contains(&density) {
        return Err(Error::invalid(
            "sparse random",
            format!("density {density} is not in [0, 1]"),
        ));
    }
    if shape.is_empty() {
        return Err(Error::invalid(
            "sparse random",
            "needs at least one dimension",
        ));
    }
    let grid = chunks
        .into()
        .resolve(shape, 8, tessera_core::config::chunk_size_bytes()?)?;
    let parts = grid
        .blocks()
        .map(|b| {
            let origin: Vec<usize> = b
                .iter()
                .enumerate()
                .map(|(a, &i)| grid.offsets(a)[i])
                .collect();
            let bs = grid.block_shape(&b);
            Arc::new(random_chunk(seed, density, shape, &origin, bs.as_slice()))
                as tessera_core::Chunk
        })
        .collect();
    Array::from_chunks(parts, grid, backend.clone())
}

/// The `n x n` identity of `dtype` on `backend`, stored with `n` explicit entries.
pub fn eye(
    backend: &BackendRef,
    n: usize,
    dtype: DType,
    chunks: impl Into<ChunkSpec>,
) -> Result<Array> {
    let shape = [n, n];
    let grid: Chunks = chunks.into().resolve(
        &shape,
        dtype.size(),
        tessera_core::config::chunk_size_bytes()?,
    )?;
    let parts = grid
        .blocks()
        .map(|b| {
            let (r0, c0) = (grid.offsets(0)[b[0]], grid.offsets(1)[b[1]]);
            let bs = grid.block_shape(&b);
            let (h, w) = (bs.as_slice()[0], bs.as_slice()[1]);
            let diag: Vec<u64> = (0..h)
                .filter(|&i| (r0 + i) >= c0 && (r0 + i) < c0 + w)
                .map(|i| (i * w + (r0 + i - c0)) as u64)
                .collect();
            let v = tessera_core::HostArray::full(&[diag.len()], Scalar::one(dtype), dtype);
            Arc::new(SparseChunk::from_parts(
                bs.as_slice(),
                Scalar::zero(dtype),
                diag,
                v,
            )) as tessera_core::Chunk
        })
        .collect();
    Array::from_chunks(parts, grid, backend.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_skipping_hits_the_density_and_ignores_chunking() {
        let full = [40, 5000];
        let one = random_chunk(7, 0.01, &full, &[0, 0], &full);
        let frac = one.nnz() as f64 / 200_000.0;
        assert!((frac - 0.01).abs() < 0.002, "{frac}");
        // The same region from two column chunks.
        let left = random_chunk(7, 0.01, &full, &[0, 0], &[40, 2000]);
        let right = random_chunk(7, 0.01, &full, &[0, 2000], &[40, 3000]);
        let d = one.to_dense().to_f64_vec();
        let (l, r) = (left.to_dense().to_f64_vec(), right.to_dense().to_f64_vec());
        for row in 0..40 {
            assert_eq!(
                &d[row * 5000..row * 5000 + 2000],
                &l[row * 2000..(row + 1) * 2000]
            );
            assert_eq!(
                &d[row * 5000 + 2000..(row + 1) * 5000],
                &r[row * 3000..(row + 1) * 3000]
            );
        }
        assert!(one
            .values()
            .to_f64_vec()
            .iter()
            .all(|&v| (0.0..1.0).contains(&v)));
    }
}

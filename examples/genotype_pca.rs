//! The genomics PCA of seed 000: a genotype matrix (individuals x variants, values 0/1/2
//! from the counter-based `randint`), compressed to 2 bits per genotype with `map_blocks`
//! so four times more data fits in memory, decompressed block by block on the way into
//! `svd_compressed(k = 10)`; prints the top singular values. Then the same with the
//! general tool (feature `zarr`): `persist_compressed` keeps the blocks as Blosc-compressed
//! Zarr chunks in memory, and the SVD read from them must give the same values.
//!
//! ```text
//! cargo run --release --example genotype_pca                    # 10,000 x 4,000
//! cargo run --release --example genotype_pca -- 100000 20000    # individuals variants
//! ```

use std::sync::Arc;
use std::time::Instant;

use ndarray::{ArrayD, IxDyn};
use tessera::chunks::{ChunkSpec, Chunks};
use tessera::linalg::svd_compressed;
use tessera::{Array, DType, Error, HostArray, RandomState, Result};

const BLOCK: usize = 2_000;

/// Bytes per row of a packed block: a 2-byte column count, then four genotypes a byte.
fn packed_width(cols: usize) -> usize {
    2 + cols.div_ceil(4)
}

/// Packs a block of genotypes (0..=3) four to a byte along each row, after a little-endian
/// `u16` holding the block's column count (so a block unpacks without knowing its place).
fn pack(blocks: &[HostArray]) -> Result<HostArray> {
    let g = blocks[0].view_typed::<u8>()?;
    let (rows, cols) = (g.shape()[0], g.shape()[1]);
    let count = u16::try_from(cols).map_err(|_| {
        Error::user_function(
            "map_blocks",
            format!("{cols} columns do not fit the u16 header"),
        )
    })?;
    let width = packed_width(cols);
    let mut out = vec![0u8; rows * width];
    for r in 0..rows {
        out[r * width..r * width + 2].copy_from_slice(&count.to_le_bytes());
    }
    for ((r, c), &v) in g.indexed_iter().map(|(i, v)| ((i[0], i[1]), v)) {
        if v > 3 {
            return Err(Error::user_function(
                "map_blocks",
                format!("genotype {v} does not fit in 2 bits"),
            ));
        }
        out[r * width + 2 + c / 4] |= v << (2 * (c % 4));
    }
    Ok(HostArray::U8(
        ArrayD::from_shape_vec(IxDyn(&[rows, width]), out)
            .map_err(|e| Error::user_function("map_blocks", e.to_string()))?,
    ))
}

/// Unpacks a block back to its genotypes, reading the column count from the header.
fn unpack(blocks: &[HostArray]) -> Result<HostArray> {
    let p = blocks[0].view_typed::<u8>()?;
    let (rows, width) = (p.shape()[0], p.shape()[1]);
    let cols = if rows == 0 {
        0
    } else {
        u16::from_le_bytes([p[[0, 0]], p[[0, 1]]]) as usize
    };
    if width != packed_width(cols) {
        return Err(Error::user_function(
            "map_blocks",
            format!("packed block is {width} bytes wide but its header says {cols} columns"),
        ));
    }
    let flat = p.as_standard_layout();
    let flat = flat.as_slice().unwrap_or(&[]);
    let mut out = Vec::with_capacity(rows * cols);
    for row in flat.chunks_exact(width.max(1)).take(rows) {
        out.extend((0..cols).map(|c| (row[2 + c / 4] >> (2 * (c % 4))) & 3));
    }
    Ok(HostArray::U8(
        ArrayD::from_shape_vec(IxDyn(&[rows, cols]), out)
            .map_err(|e| Error::user_function("map_blocks", e.to_string()))?,
    ))
}

/// The seed's other route: a general-purpose compressed `persist` (Blosc with byte
/// shuffling over Zarr chunks held in memory), checked against the packed run's values.
#[cfg(feature = "zarr")]
fn zarr_compressed(g: &Array, packed_s: &[f64]) -> Result<()> {
    use tessera::io::zarr::{persist_compressed, BloscCompressor, Compression};
    let t = Instant::now();
    let compression = Compression::Blosc {
        cname: BloscCompressor::Zstd,
        clevel: 5,
        shuffle: true,
    };
    let (z, stored) = persist_compressed(g, compression)?;
    println!(
        "stored as Blosc(zstd)-compressed Zarr chunks in memory: {} MB",
        stored.bytes / 1_000_000
    );
    let (n, m) = (g.shape()[0], g.shape()[1]);
    let x = z.astype(DType::F64).rechunk(ChunkSpec::Exact(Chunks::new(
        &[n, m],
        vec![g.chunks().axis(0).to_vec(), vec![m]],
    )?))?;
    let s = svd_compressed(&x, 10, 2, 10, 7)?.s.compute()?.to_f64_vec();
    let worst = s
        .iter()
        .zip(packed_s)
        .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
        .fold(0.0, f64::max);
    if worst > 1e-9 {
        return Err(Error::Internal(format!(
            "the SVD of the Zarr-compressed genotypes differs from the packed one by {worst:e}"
        )));
    }
    println!(
        "same singular values from the Zarr-compressed copy; {:.2} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(not(feature = "zarr"))]
fn zarr_compressed(_g: &Array, _packed_s: &[f64]) -> Result<()> {
    println!("(the Zarr-compressed run needs the `zarr` feature)");
    Ok(())
}

fn main() -> std::process::ExitCode {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (n, m) = (arg(1, 10_000), arg(2, 4_000));
    let run = || -> Result<()> {
        let t = Instant::now();
        let g = RandomState::new(2024).randint(0, 3, DType::U8, &[n, m], BLOCK, None)?;
        // Compress: each block's columns shrink four-fold (declared up front, as in Dask).
        let packed_sizes: Vec<usize> = g
            .chunks()
            .axis(1)
            .iter()
            .map(|&c| packed_width(c))
            .collect();
        let packed_chunks = Chunks::new(
            &[n, packed_sizes.iter().sum()],
            vec![g.chunks().axis(0).to_vec(), packed_sizes.clone()],
        )?;
        let packed =
            Array::map_blocks(&[&g], Arc::new(pack), DType::U8, Some(packed_chunks))?.persist()?;
        println!(
            "genotypes {n} x {m} (uint8, {} MB) stored 2-bit packed: {} MB",
            g.nbytes() / 1_000_000,
            packed.nbytes() / 1_000_000
        );
        // Decompress lazily, block by block, inside every pass of the SVD.
        let col_sizes = g.chunks().axis(1).to_vec();
        let unpacked_chunks = Chunks::new(
            &[n, m],
            vec![g.chunks().axis(0).to_vec(), col_sizes.clone()],
        )?;
        let genotypes = Array::map_blocks(
            &[&packed],
            Arc::new(unpack),
            DType::U8,
            Some(unpacked_chunks),
        )?;
        let same = genotypes.ne(&g)?.any(None, false)?.compute_scalar()?;
        if same.as_bool() {
            return Err(Error::Internal(
                "2-bit round trip changed a genotype".into(),
            ));
        }
        let x = genotypes
            .astype(DType::F64)
            .rechunk(ChunkSpec::Exact(Chunks::new(
                &[n, m],
                vec![g.chunks().axis(0).to_vec(), vec![m]],
            )?))?;
        let d = svd_compressed(&x, 10, 2, 10, 7)?;
        let s = d.s.compute()?.to_f64_vec();
        println!(
            "top singular values: {}",
            s.iter()
                .map(|v| format!("{v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!("{:.2} s", t.elapsed().as_secs_f64());
        zarr_compressed(&g, &s)?;
        Ok(())
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

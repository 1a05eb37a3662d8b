//! The genomics use case of the seeds with a sparse genotype matrix: individuals x
//! variants, values 0/1/2 (copies of the minor allele), mostly 0 for rare variants. The
//! job is a column-mean-centred product `(G - 1 mu^T) w` (the core of a PCA or a GWAS
//! score), written once and run on whichever backend the config picks:
//!
//! ```text
//! cargo run --release --example genotype_sparse                                 # cpu
//! TESSERA_ARRAY_BACKEND=sparse cargo run --release --example genotype_sparse    # sparse
//! ```
//!
//! Centring naively (`G - mu`) makes every element non-zero: a sparse backend would have
//! to store the whole matrix. The job uses the identity `(G - 1 mu^T) w = G w - (mu . w) 1`
//! instead, which keeps `G` sparse; the same code on `cpu` computes the same numbers (and
//! checks them against the naive dense formula).

use std::time::Instant;

use tessera::{config, Array, DType, Result};

const INDIVIDUALS: usize = 20_000;
const VARIANTS: usize = 5_000;
const DENSITY: f64 = 0.02;

/// `G` on `backend`: the present entries of a sparse random matrix become 1 (80%) or 2.
fn genotypes(backend: &str) -> Result<Array> {
    let sparse = tessera::registry::array_backend("sparse")?;
    let u =
        tessera::tessera_sparse::random(&sparse, &[INDIVIDUALS, VARIANTS], DENSITY, 2_500, 2024)?;
    let present = u.gt_scalar(0.0)?.astype(DType::F64);
    let second = u.gt_scalar(0.8)?.astype(DType::F64);
    (&present + &second)?.to_backend(backend)
}

/// `(G - 1 mu^T) w`, without forming the centred matrix.
fn centred_product(g: &Array, w: &Array) -> Result<Array> {
    let mu = g.mean(Some(&[0]), true)?; // 1 x variants
    let gw = g.matmul(w)?; // individuals x 1
    let shift = mu.matmul(w)?; // 1 x 1
    &gw - &shift
}

fn main() -> std::process::ExitCode {
    let run = || -> Result<()> {
        let (backend, from) = config::get("array.backend")?;
        println!("array.backend = {backend} ({from})");
        let g = genotypes(&backend)?.persist()?;
        println!("{g}");
        let w =
            tessera::RandomState::new(7).normal(0.0, 1.0, &[VARIANTS, 1], 2_500, Some("cpu"))?;
        let w = w.to_backend(&backend)?;
        let t = Instant::now();
        let scores = centred_product(&g, &w)?.compute()?.to_f64_vec();
        let secs = t.elapsed().as_secs_f64();
        let norm = scores.iter().map(|v| v * v).sum::<f64>().sqrt();
        println!(
            "centred product: {} scores, |scores| = {norm:.6}, first {:.6}, {secs:.3} s",
            scores.len(),
            scores[0]
        );
        if backend == "cpu" {
            // The naive formula, densely: must agree.
            let gd = g.to_backend("cpu")?;
            let centred = (&gd - &gd.mean(Some(&[0]), true)?)?;
            let naive = centred
                .matmul(&w.to_backend("cpu")?)?
                .compute()?
                .to_f64_vec();
            let worst = scores
                .iter()
                .zip(&naive)
                .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
                .fold(0.0, f64::max);
            println!("naive dense centring agrees to {worst:.1e}");
            if worst > 1e-9 {
                return Err(tessera::Error::Internal(format!(
                    "centring identity off by {worst}"
                )));
            }
        }
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

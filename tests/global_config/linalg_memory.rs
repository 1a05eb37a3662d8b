//! `svd_compressed` under a memory budget that pinning its input would break: it still
//! completes, because every pass regenerates the lazy input block by block. (Its own test
//! binary: `memory-limit` is process-wide.)

use tessera::chunks::{ChunkSpec, Chunks};
use tessera::linalg::svd_compressed;
use tessera::{config, Error, RandomState};

#[test]
fn svd_compressed_recomputes_instead_of_pinning_the_input() {
    let _serial = crate::serial();
    let shape = [16_000, 1_000]; // 128 MB of float64
    let chunks = ChunkSpec::Exact(Chunks::new(&shape, vec![vec![500; 32], vec![1_000]]).unwrap());
    let x = RandomState::new(5)
        .uniform(0.0, 1.0, &shape, chunks, Some("cpu"))
        .unwrap();
    let _limit = config::set(&[("memory-limit", "48MiB"), ("spill-dir", "none")]).unwrap();
    // Keeping the input would need the whole 128 MB: with spilling off, refused before it
    // starts.
    let e = x.persist().unwrap_err();
    assert!(matches!(e, Error::MemoryLimit { .. }), "{e:?}");
    // The randomized SVD makes four passes over it within the budget, spilling nothing.
    let spilled = tessera::spill::stats().values;
    let d = svd_compressed(&x, 5, 1, 5, 3).unwrap();
    let s = d.s.compute().unwrap().to_f64_vec();
    assert_eq!(tessera::spill::stats().values, spilled);
    // Uniform [0, 1): the top singular value is about 0.5 * sqrt(m n).
    let expect = 0.5 * ((shape[0] * shape[1]) as f64).sqrt();
    assert!((s[0] / expect - 1.0).abs() < 0.01, "{} vs {expect}", s[0]);
    assert!(s[1] < 0.05 * s[0], "{s:?}");
}

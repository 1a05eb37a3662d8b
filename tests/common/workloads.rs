//! The workloads the distributed tests run on every rank and in one process: the seed
//! headline, mean/std over axes, the SVD of a tall-skinny array and `svd_compressed`, on
//! chunk grids that split unevenly over 1 to 4 ranks.

use tessera::linalg::{svd, svd_compressed};
use tessera::{DType, HostArray, Index, RandomState};

/// The elements as `f64`, in C order.
pub fn f64s(h: HostArray) -> Vec<f64> {
    h.cast(DType::F64)
        .into_typed::<f64>()
        .unwrap()
        .iter()
        .copied()
        .collect()
}

/// Asserts `a` and `b` agree within float reassociation (relative 1e-9).
pub fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let tol = 1e-9 * x.abs().max(y.abs()).max(1.0);
        assert!((x - y).abs() <= tol, "{what}[{i}]: {x} vs {y}");
    }
}

/// The seed headline `(x + 1)[::2, ::2].sum()` on 300 × 300 in 45-wide (uneven) chunks.
pub fn headline() -> f64 {
    let x = RandomState::new(42)
        .normal(10.0, 1.0, &[300, 300], 45, Some("cpu"))
        .unwrap();
    (&x + 1.0)
        .unwrap()
        .slice(&[Index::step(2), Index::step(2)])
        .unwrap()
        .sum(None, false)
        .unwrap()
        .compute_f64()
        .unwrap()
}

/// Mean and std (ddof 1) of a 40 × 30 × 20 array over three sets of axes.
pub fn moments() -> Vec<Vec<f64>> {
    let x = RandomState::new(7)
        .uniform(-1.0, 3.0, &[40, 30, 20], 11, Some("cpu"))
        .unwrap();
    let mut out = Vec::new();
    for axes in [vec![0], vec![1, 2], vec![0, 1, 2]] {
        out.push(f64s(x.mean(Some(&axes), false).unwrap().compute().unwrap()));
        out.push(f64s(
            x.std(Some(&axes), 1, false).unwrap().compute().unwrap(),
        ));
    }
    out
}

/// Singular values of a 700 × 6 array in 100-row blocks (TSQR).
pub fn tall_svd() -> Vec<f64> {
    let x = RandomState::new(3)
        .normal(0.0, 1.0, &[700, 6], &[100usize, 6][..], Some("cpu"))
        .unwrap();
    f64s(svd(&x).unwrap().s.compute().unwrap())
}

/// The top singular values of a 260 × 90 array by `svd_compressed`.
pub fn compressed_svd() -> Vec<f64> {
    let x = RandomState::new(5)
        .normal(0.0, 1.0, &[260, 90], 50, Some("cpu"))
        .unwrap();
    f64s(
        svd_compressed(&x, 4, 1, 4, 11)
            .unwrap()
            .s
            .compute()
            .unwrap(),
    )
}

/// Writes the pipeline's inputs under `dir`: `trips.csv` (20,000 rows: id, zone 0..400,
/// passengers 0..6, fare in quarters) and `zones.csv` (zone, borough), both from a fixed
/// generator.
pub fn write_frame_inputs(dir: &std::path::Path) {
    use std::fmt::Write as _;
    let mut trips = String::from("id,zone,passengers,fare\n");
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for id in 0..20_000u64 {
        let zone = next() % 400;
        let passengers = next() % 7;
        // Quarters: every sum of them is exact, so the answers do not depend on how the
        // file is split into partitions (which follows the core or rank count).
        let fare = (next() % 400) as f64 / 4.0;
        writeln!(trips, "{id},{zone},{passengers},{fare}").unwrap();
    }
    std::fs::write(dir.join("trips.csv"), trips).unwrap();
    let mut zones = String::from("zone,borough\n");
    for z in 0..400 {
        writeln!(zones, "{z},b{}", z % 5).unwrap();
    }
    std::fs::write(dir.join("zones.csv"), zones).unwrap();
}

/// The rows of a computed frame as `a|b|c` strings, in the frame's order.
pub fn frame_rows(c: &tessera::frame::Computed) -> Vec<String> {
    let cols: Vec<String> = c.schema.fields().iter().map(|f| f.name().clone()).collect();
    (0..c.num_rows())
        .map(|r| {
            cols.iter()
                .map(|n| c.value(n, r).unwrap().to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// CSV → filter → groupby (few groups: tree; many groups: shuffle) → merge (broadcast and
/// shuffle) → sort, on the inputs of [`write_frame_inputs`]; every result's rows (the
/// sorted one in its order, the others sorted as text).
pub fn frame_pipeline(dir: &std::path::Path) -> Vec<Vec<String>> {
    use tessera::frame::{
        col, read_csv, AggFunc, CsvOptions, GroupStrategy, JoinStrategy, JoinType,
    };
    let options = || CsvOptions {
        partition_bytes: 48 << 10,
        ..CsvOptions::default()
    };
    let trips = read_csv(dir.join("trips.csv").to_str().unwrap(), options())
        .unwrap()
        .filter(col("fare").gt(5.0))
        .unwrap();
    let zones = read_csv(dir.join("zones.csv").to_str().unwrap(), options()).unwrap();
    let few = trips
        .groupby(&["passengers"])
        .unwrap()
        .strategy(GroupStrategy::Tree)
        .agg_named(&[
            ("fare", AggFunc::Sum, "total"),
            ("fare", AggFunc::Count, "trips"),
        ])
        .unwrap();
    let many = trips
        .groupby(&["zone"])
        .unwrap()
        .strategy(GroupStrategy::Shuffle)
        .agg_named(&[
            ("fare", AggFunc::Mean, "mean_fare"),
            ("id", AggFunc::Max, "last_id"),
        ])
        .unwrap();
    let broadcast = many
        .merge_on(
            &zones,
            &["zone"],
            &["zone"],
            JoinType::Inner,
            JoinStrategy::Broadcast,
        )
        .unwrap();
    let shuffled = trips
        .merge_on(
            &zones,
            &["zone"],
            &["zone"],
            JoinType::Left,
            JoinStrategy::Shuffle,
        )
        .unwrap()
        .groupby(&["borough"])
        .unwrap()
        .agg_named(&[("fare", AggFunc::Sum, "fares")])
        .unwrap();
    let sorted = broadcast
        .sort_values(&["mean_fare", "zone"], &[false, true])
        .unwrap();
    let sorted_rows = |f: &tessera::frame::DataFrame| {
        let mut rows = frame_rows(&f.compute().unwrap());
        rows.sort();
        rows
    };
    vec![
        sorted_rows(&few),
        sorted_rows(&many),
        sorted_rows(&broadcast),
        sorted_rows(&shuffled),
        frame_rows(&sorted.compute().unwrap()),
    ]
}

/// Writes the trips of [`write_frame_inputs`] (over 5 fares) as Parquet parts and an array
/// as `.npy` under `dir/written`, then reads both back: the rows of the parts grouped by
/// passengers (sorted as text), and the sum of the array. Under `scheduler = "mpi"` every
/// rank writes its own partitions and blocks, and rank 0 commits.
pub fn write_and_read_back(dir: &std::path::Path) -> (Vec<String>, f64) {
    use tessera::frame::{read_parquet, AggFunc};
    let out = dir.join("written");
    std::fs::create_dir_all(&out).unwrap();
    let parts = out.join("trips").join("part-*.parquet");
    trips_over_five(dir)
        .to_parquet(parts.to_str().unwrap())
        .unwrap();
    let grouped = read_parquet(parts.to_str().unwrap())
        .unwrap()
        .groupby(&["passengers"])
        .unwrap()
        .agg_named(&[
            ("fare", AggFunc::Sum, "fares"),
            ("id", AggFunc::Count, "trips"),
        ])
        .unwrap();
    let mut rows = frame_rows(&grouped.compute().unwrap());
    rows.sort();
    let x = RandomState::new(5)
        .normal(2.0, 1.0, &[300, 70], [45usize, 20].as_slice(), Some("cpu"))
        .unwrap();
    tessera::io::npy::to_npy(&x, out.join("x.npy")).unwrap();
    let back =
        tessera::io::npy::from_npy(out.join("x.npy"), [100usize, 70].as_slice(), None).unwrap();
    (rows, back.sum(None, false).unwrap().compute_f64().unwrap())
}

/// The trips of [`write_frame_inputs`] over 5 fares, in partitions of 48 KiB of CSV
/// (several per rank).
pub fn trips_over_five(dir: &std::path::Path) -> tessera::frame::DataFrame {
    use tessera::frame::{col, read_csv, CsvOptions};
    read_csv(
        dir.join("trips.csv").to_str().unwrap(),
        CsvOptions {
            partition_bytes: 48 << 10,
            ..CsvOptions::default()
        },
    )
    .unwrap()
    .filter(col("fare").gt(5.0))
    .unwrap()
}

//! What crossing the plugin boundary costs a dataframe backend: `arrow-frames` (from
//! `plugins/example-frames`) called directly (statically linked) and through its plugin
//! library, per call and per byte. Prints one JSON line per measurement.
//!
//! ```text
//! cargo build --release -p tessera-plugin-example-frames
//! cargo run --release --example frame_plugin_overhead -- target/release/libtessera_plugin_example_frames.so
//! ```
//!
//! The per-call figures are the best of several runs of many calls on a 1-row partition:
//! the fixed cost of a call — the wire message encoded and decoded, the indirect call,
//! `catch_unwind`, the handle boxed, the result's schema fetched through the C Data
//! Interface and checked. The per-byte figures import and export one large batch each
//! way: Arrow C data is zero-copy, so what remains is validation, which is constant per
//! numeric column and linear in the bytes of a string column (UTF-8 is checked).

#[path = "common/timing.rs"]
mod timing;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use tessera::frame::{col, DataFrameBackend, FrameProgram, FrameStep, Partition};
use timing::best_pair;

fn batch(rows: usize) -> RecordBatch {
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..rows as i64).map(|i| i % 97),
    ));
    let v: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64)));
    RecordBatch::try_from_iter(vec![("k", k), ("v", v)]).expect("equal lengths")
}

fn call(op: &str, b: &dyn DataFrameBackend, p: &Partition, program: &FrameProgram) {
    match op {
        "slice" => drop(black_box(b.slice(p, 0, 1))),
        "evaluate" => drop(black_box(b.evaluate(p, program))),
        "hash_partition" => drop(black_box(b.hash_partition(p, &["k".to_string()], 2))),
        _ => drop(black_box(
            b.import_batch(batch(1)).and_then(|q| b.export_batch(&q)),
        )),
    }
}

fn main() -> tessera::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/release/libtessera_plugin_example_frames.so".to_string());
    let direct = tessera_plugin_example_frames::backend();
    let plugin = tessera::plugin::load_frame_plugin(&path)?;
    let program = FrameProgram {
        steps: vec![FrameStep::Project(vec![("w".into(), col("v") * 2.0)])],
    };
    let (pd, pp) = (
        direct.import_batch(batch(1))?,
        plugin.import_batch(batch(1))?,
    );
    for op in ["slice", "evaluate", "hash_partition", "import+export"] {
        let (d, p) = best_pair(
            7,
            5_000,
            &mut || call(op, &direct, &pd, &program),
            &mut || call(op, plugin.as_ref(), &pp, &program),
        );
        println!(
            "{{\"bench\":\"frame_plugin_call\",\"op\":\"{op}\",\"linked_us\":{:.3},\"plugin_us\":{:.3},\"overhead_us\":{:.3}}}",
            d * 1e6,
            p * 1e6,
            (p - d) * 1e6
        );
    }
    // Numbers only (validation is O(1) per column), then with a string column (validated
    // as UTF-8 on import, so per byte).
    let strings: ArrayRef = Arc::new(tessera::frame::arrow_array::StringArray::from_iter_values(
        (0..4 << 20).map(|i| format!("key-{}", i % 1000)),
    ));
    let with_strings = RecordBatch::try_from_iter(vec![("s", strings)]).expect("one column");
    for (what, big) in [("int64+float64", batch(4 << 20)), ("utf8", with_strings)] {
        let bytes = big.get_array_memory_size() as f64;
        let roundtrip = |b: &dyn DataFrameBackend| {
            let t = Instant::now();
            let q = b.import_batch(big.clone()).expect("import");
            black_box(b.export_batch(&q).expect("export"));
            t.elapsed().as_secs_f64()
        };
        let (mut d, mut p) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..5 {
            d = d.min(roundtrip(&direct));
            p = p.min(roundtrip(plugin.as_ref()));
        }
        println!(
            "{{\"bench\":\"frame_plugin_bytes\",\"columns\":\"{what}\",\"bytes\":{bytes},\"linked_ns_per_byte\":{:.4},\"plugin_ns_per_byte\":{:.4},\"overhead_ns_per_byte\":{:.4}}}",
            d * 1e9 / bytes,
            p * 1e9 / bytes,
            (p - d) * 1e9 / bytes
        );
    }
    Ok(())
}

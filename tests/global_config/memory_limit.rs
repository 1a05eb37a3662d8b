//! The memory budget. `memory-limit` is a process-wide setting
//! and would starve the other tests if it were set while they run, hence this binary.

use tessera::{Array, DType};

#[test]
fn memory_limit_refuses_over_budget_plans() {
    let _serial = crate::serial();
    let x = Array::ones(&[2000, 2000], DType::F64, 1000, Some("cpu")).unwrap();
    let _g = tessera::config::set(&[("memory-limit", "1MB")]).unwrap();
    let err = x.compute().unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    assert!(
        err.to_string().contains("memory-limit is 1000000 bytes"),
        "{err}"
    );
}

#[test]
fn a_chunk_grid_over_the_memory_budget_is_refused_at_creation() {
    let _serial = crate::serial();
    let _g = tessera::config::set(&[("memory-limit", "1MB")]).unwrap();
    // 100,000 tasks of about 512 bytes each is 51 MB of plan before any data.
    let err = Array::ones(&[100_000], DType::F64, 1, Some("cpu")).unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    assert!(err.to_string().contains("use larger chunks"), "{err}");
    assert!(Array::ones(&[100_000], DType::F64, 10_000, Some("cpu")).is_ok());
}

#[test]
fn dataframe_plans_over_memory_limit_are_refused_before_running() {
    use tessera::frame::{col, read_csv, AggFunc, CsvOptions};
    let _serial = crate::serial();
    let dir = std::env::temp_dir().join(format!("tessera-frame-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.csv");
    let mut text = String::from("k,x\n");
    for i in 0..100_000 {
        text.push_str(&format!("{},{}.5\n", i % 10, i));
    }
    std::fs::write(&path, text).unwrap(); // about 1.3 MB
    let opts = CsvOptions::default().partition_bytes(32 << 10);
    let df = read_csv(path.to_str().unwrap(), opts).unwrap();
    let _g = tessera::config::set(&[("memory-limit", "1MB")]).unwrap();
    // Streams: one small range per worker at a time, ten groups out.
    let g = df
        .groupby(&["k"])
        .unwrap()
        .agg(&[("x", AggFunc::Sum)])
        .unwrap();
    assert_eq!(g.len().unwrap(), 10);
    assert_eq!(df.filter(col("k").eq(3)).unwrap().len().unwrap(), 10_000);
    // Collecting every row, or sorting them, holds the whole file.
    for e in [
        df.compute().map(|_| ()).unwrap_err(),
        df.sort_values(&["x"], &[true])
            .unwrap()
            .compute()
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(matches!(e, tessera::Error::MemoryLimit { .. }), "{e:?}");
        assert!(e.to_string().contains("frame plan holds"), "{e}");
    }
    drop(_g);
    assert_eq!(df.compute().unwrap().num_rows(), 100_000);
    std::fs::remove_dir_all(&dir).ok();
}

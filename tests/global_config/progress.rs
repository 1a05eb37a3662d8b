//! Progress reports reach the application's callback, for array and dataframe plans.

use std::sync::{Arc, Mutex};

use tessera::frame::{col, lit, DataFrame};
use tessera::observe::{set_progress_callback, Progress};
use tessera::{Array, DType};
use tessera_cpu_frame as _;

use crate::serial;

/// Runs `f` with a callback recording every report, then removes it.
fn recording(f: impl FnOnce()) -> Vec<Progress> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let previous = set_progress_callback(Some(Arc::new(move |p: &Progress| {
        log.lock().unwrap().push(p.clone());
    })));
    f();
    set_progress_callback(previous);
    seen.lock().unwrap().clone()
}

#[test]
fn an_array_compute_reports_every_task_and_ends_finished() {
    let _s = serial();
    let x = Array::ones(&[400, 400], DType::F64, 20, None).unwrap();
    let y = (&x + 1.0).unwrap().sum(None, false).unwrap();
    let tasks = y.num_tasks().unwrap();
    let reports = recording(|| assert_eq!(y.compute_f64().unwrap(), 2.0 * 160_000.0));
    let last = reports.last().expect("at least the final report");
    assert!(last.finished);
    assert_eq!(last.stage, "compute");
    assert_eq!((last.done, last.total), (tasks, tasks));
    assert!(last.bytes > 0);
    // Reports never go backwards.
    assert!(reports.windows(2).all(|w| w[0].done <= w[1].done));
}

#[test]
fn a_dataframe_plan_reports_its_stages() {
    let _s = serial();
    let k = Array::arange(0.0, 1000.0, 1.0, DType::I64, 100, None).unwrap();
    let v = Array::ones(&[1000], DType::F64, 100, None).unwrap();
    let df = DataFrame::from_arrays(vec![("k", &k), ("v", &v)]).unwrap();
    let grouped = df
        .with_column("g", col("k") % lit(7i64))
        .unwrap()
        .groupby(&["g"])
        .unwrap()
        .sum("v")
        .unwrap();
    let reports = recording(|| {
        assert_eq!(grouped.compute().unwrap().num_rows(), 7);
    });
    let finished: Vec<&Progress> = reports.iter().filter(|p| p.finished).collect();
    assert!(!finished.is_empty(), "{reports:?}");
    assert!(finished.iter().all(|p| p.done == p.total), "{finished:?}");
    assert!(finished.iter().any(|p| p.bytes > 0), "{finished:?}");
    assert!(
        finished.iter().any(|p| p.stage.starts_with("aggregate")),
        "{:?}",
        finished.iter().map(|p| &p.stage).collect::<Vec<_>>()
    );
}

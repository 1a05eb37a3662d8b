//! Cancelling a running computation (`tessera::cancel`): the array scheduler and the
//! dataframe stages stop at their next task boundary with `Error::Cancelled`, start no
//! further task, and leave the process able to run the same plan again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tessera::cancel::CancelToken;
use tessera::frame::arrow_array::{Int64Array, RecordBatch};
use tessera::frame::DataFrame;
use tessera::{Array, DType, Error, HostArray};

#[test]
fn an_array_compute_cancelled_mid_run_stops_and_the_next_one_runs() {
    let token = CancelToken::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let (t, r) = (token.clone(), ran.clone());
    let x = Array::ones(&[4000, 10], DType::F64, &[10usize, 10][..], None).unwrap();
    let blocks = x.chunks().count();
    let y = Array::map_blocks(
        &[&x],
        Arc::new(move |b: &[HostArray]| {
            // The third block cancels: every task after it must not start.
            if r.fetch_add(1, Ordering::SeqCst) == 2 {
                t.cancel();
            }
            Ok(b[0].clone())
        }),
        DType::F64,
        None,
    )
    .unwrap()
    .sum(None, false)
    .unwrap();
    let err = token.scope(|| y.compute()).unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    let started = ran.load(Ordering::SeqCst);
    assert!(
        started < blocks / 2,
        "{started} of {blocks} blocks ran after the cancel at the third"
    );
    // Outside the cancelled scope the same plan runs to the end.
    assert_eq!(y.compute_f64().unwrap(), 40_000.0);
}

#[test]
fn a_frame_compute_cancelled_mid_run_stops_and_the_next_one_runs() {
    let n = 200;
    let batches: Vec<RecordBatch> = (0..n)
        .map(|i| {
            RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![i as i64; 10])) as _)])
                .unwrap()
        })
        .collect();
    let df = DataFrame::from_record_batches(batches, None).unwrap();
    let token = CancelToken::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let (t, r) = (token.clone(), ran.clone());
    let mapped = df
        .map_partitions(move |b| {
            if b.num_rows() > 0 && r.fetch_add(1, Ordering::SeqCst) == 2 {
                t.cancel();
            }
            Ok(b)
        })
        .unwrap();
    let err = token.scope(|| mapped.compute()).unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    let started = ran.load(Ordering::SeqCst);
    assert!(started < n / 2, "{started} of {n} partitions ran");
    assert_eq!(mapped.compute().unwrap().num_rows(), n * 10);
}

#[test]
fn a_token_cancelled_before_the_compute_starts_nothing() {
    let token = CancelToken::new();
    token.cancel();
    let x = Array::ones(&[100], DType::F64, 10, None).unwrap();
    assert!(matches!(
        token.scope(|| x.sum(None, false).unwrap().compute()),
        Err(Error::Cancelled)
    ));
    assert_eq!(x.sum(None, false).unwrap().compute_f64().unwrap(), 100.0);
}

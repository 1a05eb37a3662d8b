//! Arrays read from and written to storage, one block per task.
//!
//! A storage format (a `.npy` file, a Zarr array, a NetCDF variable) plugs in here through
//! two small traits, so that the engine knows nothing about formats and a format knows
//! nothing about the engine:
//!
//! - [`BlockSource`]: reads any rectangular region of a stored array. [`Array::from_source`]
//!   makes a lazy array whose every block is one read task; slicing, reductions and every
//!   other op consume those tasks like any other chunk, so a slice of a stored array reads
//!   only the blocks it touches, and a reduction streams block by block.
//! - [`BlockSink`]: writes one block of an array at its place. [`Array::store`] runs the
//!   array's plan with one write task per block, each fed by the task that computes that
//!   block; a block is written as soon as it exists and dropped after, so an array larger
//!   than memory is written in bounded memory. Committing the whole (metadata last, a
//!   rename) is the format's job once `store` returns.
//!
//! Both run inside the scheduler's task boundary: an error names the source or sink
//! ([`BlockSource::describe`]) and the block, and a panic in a format's decoder is caught
//! and reported as an error of that task.

use std::sync::Arc;

use super::{Array, Op};
use crate::block_io::{BlockSink, BlockSource, StoreSummary};
use crate::chunks::Chunks;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::program::ArrayOp;
use crate::registry::resolve_array_backend;

impl Array {
    /// A lazy array over a stored one: each block of `chunks` is read by one task when a
    /// plan needs it. `dtype` and the shape of `chunks` must be what the source holds.
    /// `backend` picks the backend the blocks go to (`None`: config `array.backend`).
    ///
    /// Storage formats call this (`tessera::io::from_npy`, `from_zarr`); users rarely do.
    ///
    /// # Errors
    /// An unknown backend, or one that cannot hold `dtype`.
    pub fn from_source(
        source: Arc<dyn BlockSource>,
        dtype: DType,
        chunks: Chunks,
        backend: Option<&str>,
    ) -> Result<Array> {
        let b = resolve_array_backend(backend)?;
        b.capabilities().check(b.name(), ArrayOp::FromHost, dtype)?;
        Ok(Array::new(Op::Source(source), dtype, chunks, b))
    }

    /// Computes the array block by block into `sink`: one write task per block, fed by the
    /// task that computes it, so no more than the plan's working set is ever in memory.
    /// The blocks are written in no particular order and concurrently.
    ///
    /// Under `scheduler = "mpi"` each block is written by the rank that computes it, and
    /// `store` returns on every rank only once every block of every rank is written: a
    /// format commits after it (from rank 0), as `to_npy` and `to_zarr` do.
    ///
    /// # Errors
    /// The first error of the plan or of a write (the others are not attempted once one
    /// failed); a sink must therefore treat a failed `store` as an unfinished write and
    /// not commit it. Over several ranks, a sink that is not
    /// [`shared_by_ranks`](BlockSink::shared_by_ranks).
    pub fn store(&self, sink: Arc<dyn BlockSink>) -> Result<StoreSummary> {
        let written = self.store_plan(sink)?;
        let host = written.compute()?;
        let counts = host.into_typed::<u64>()?;
        Ok(StoreSummary {
            blocks: counts.len(),
            bytes: counts.iter().sum(),
        })
    }

    /// The lazy plan of [`store`](Array::store): an array with one element per block of
    /// this one, the bytes its write task wrote; computing it does the writes. Computed
    /// together with other arrays ([`crate::exec::compute_many`]), what they share runs
    /// once: several arrays stored from one source read it once, as Dask's `store` of
    /// several sources does.
    ///
    /// # Errors
    /// Over several ranks, a sink that is not [`shared_by_ranks`](BlockSink::shared_by_ranks).
    pub fn store_plan(&self, sink: Arc<dyn BlockSink>) -> Result<Array> {
        if !sink.shared_by_ranks() {
            tessera_runtime::cluster::refuse_distributed_write(&sink.describe())?;
        }
        let grid = self.chunks().grid();
        let ones: Vec<Vec<usize>> = grid.iter().map(|&n| vec![1; n]).collect();
        let chunks = Chunks::new(&grid, ones).map_err(|e| {
            Error::Internal(format!("the write grid of {:?}: {e}", self.chunks().grid()))
        })?;
        Ok(Array::new(
            Op::Store(self.clone(), sink),
            DType::U64,
            chunks,
            self.backend().clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostArray;
    use crate::Index;
    use std::ops::Range;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A source over an in-memory C-order f64 array that counts its reads.
    struct Counting {
        shape: Vec<usize>,
        reads: AtomicUsize,
    }

    impl Counting {
        fn value(&self, idx: &[usize]) -> f64 {
            idx.iter().fold(0.0, |acc, &i| acc * 100.0 + i as f64)
        }
    }

    impl BlockSource for Counting {
        fn describe(&self) -> String {
            "counting test source".into()
        }

        fn read(&self, region: &[Range<usize>]) -> Result<HostArray> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let shape: Vec<usize> = region.iter().map(|r| r.len()).collect();
            let a = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&shape), |ix| {
                let idx: Vec<usize> = (0..shape.len()).map(|k| ix[k] + region[k].start).collect();
                self.value(&idx)
            });
            Ok(HostArray::F64(a))
        }
    }

    fn counting(shape: &[usize]) -> Arc<Counting> {
        Arc::new(Counting {
            shape: shape.to_vec(),
            reads: AtomicUsize::new(0),
        })
    }

    /// A lazy cpu array over `src` in blocks of `block`.
    fn counted(src: &Arc<Counting>, block: &[usize]) -> Array {
        Array::from_source(
            src.clone(),
            DType::F64,
            Chunks::regular(&src.shape, block),
            Some("cpu"),
        )
        .unwrap()
    }

    #[test]
    fn a_source_reads_each_block_once_and_a_slice_only_the_blocks_it_touches() {
        let src = counting(&[10, 6]);
        let a = counted(&src, &[3, 4]);
        let total = a.sum(None, false).unwrap().compute_f64().unwrap();
        let want: f64 = (0..10)
            .flat_map(|i| (0..6).map(move |j| (i * 100 + j) as f64))
            .sum();
        assert_eq!(total, want);
        assert_eq!(src.reads.load(Ordering::Relaxed), 8, "4 x 2 blocks");

        src.reads.store(0, Ordering::Relaxed);
        // Rows 4..6 lie in block row 1 only; columns 0..6 step 5 touch both block columns.
        let s = a
            .slice(&[Index::slice(Some(4), Some(6), 1), Index::step(5)])
            .unwrap();
        let h = s.compute().unwrap().into_typed::<f64>().unwrap();
        assert_eq!(h.shape(), &[2, 2]);
        assert_eq!(
            h.iter().copied().collect::<Vec<_>>(),
            vec![400.0, 405.0, 500.0, 505.0]
        );
        assert_eq!(src.reads.load(Ordering::Relaxed), 2);
    }

    struct Failing;

    impl BlockSource for Failing {
        fn describe(&self) -> String {
            "failing test source".into()
        }

        fn read(&self, _region: &[Range<usize>]) -> Result<HostArray> {
            panic!("decoder bug")
        }
    }

    #[test]
    fn a_panicking_source_is_an_error_of_its_task() {
        let a = Array::from_source(
            Arc::new(Failing),
            DType::F64,
            Chunks::regular(&[4], &[2]),
            Some("cpu"),
        )
        .unwrap();
        let err = a.compute().unwrap_err().to_string();
        assert!(err.contains("failing test source"), "{err}");
        assert!(err.contains("decoder bug"), "{err}");
    }

    /// A sink that records each region and the block's sum.
    #[derive(Default)]
    struct Recording {
        seen: Mutex<Vec<(Vec<Range<usize>>, f64)>>,
    }

    impl BlockSink for Recording {
        fn describe(&self) -> String {
            "recording test sink".into()
        }

        fn write(&self, region: &[Range<usize>], data: &HostArray) -> Result<u64> {
            let sum = data.to_f64_vec().iter().sum();
            self.seen.lock().unwrap().push((region.to_vec(), sum));
            Ok(data.nbytes() as u64)
        }
    }

    #[test]
    fn store_writes_every_block_at_its_region() {
        let a = Array::arange(0.0, 12.0, 1.0, DType::F64, 5, Some("cpu")).unwrap();
        let sink = Arc::new(Recording::default());
        let summary = (&a * 2.0).unwrap().store(sink.clone()).unwrap();
        assert_eq!(summary.blocks, 3);
        assert_eq!(summary.bytes, 12 * 8);
        let mut seen = sink.seen.lock().unwrap().clone();
        seen.sort_by_key(|(r, _)| r[0].start);
        let regions: Vec<Range<usize>> = seen.iter().map(|(r, _)| r[0].clone()).collect();
        assert_eq!(regions, [0..5, 5..10, 10..12]);
        let sums: Vec<f64> = seen.iter().map(|(_, s)| *s).collect();
        assert_eq!(sums, [20.0, 70.0, 42.0]);
    }

    #[test]
    fn two_store_plans_computed_together_read_their_shared_source_once() {
        let src = counting(&[6, 4]);
        let a = counted(&src, &[3, 4]);
        let (one, two) = (
            Arc::new(Recording::default()),
            Arc::new(Recording::default()),
        );
        let plans = [
            (&a + 1.0).unwrap().store_plan(one.clone()).unwrap(),
            (&a * 2.0).unwrap().store_plan(two.clone()).unwrap(),
        ];
        assert!(
            one.seen.lock().unwrap().is_empty(),
            "a plan writes nothing until computed"
        );
        let written = crate::exec::compute_many(&plans).unwrap();
        assert_eq!(
            src.reads.load(Ordering::Relaxed),
            2,
            "one read per block, not per plan"
        );
        assert_eq!(written[0].to_f64_vec(), [96.0, 96.0]);
        assert_eq!(one.seen.lock().unwrap().len(), 2);
        let doubled: f64 = two.seen.lock().unwrap().iter().map(|(_, s)| s).sum();
        let values: f64 = (0..6)
            .flat_map(|i| (0..4).map(move |j| (i * 100 + j) as f64))
            .sum();
        assert_eq!(doubled, 2.0 * values);
    }

    struct Refusing;

    impl BlockSink for Refusing {
        fn describe(&self) -> String {
            "refusing test sink".into()
        }

        fn write(&self, region: &[Range<usize>], _data: &HostArray) -> Result<u64> {
            Err(Error::invalid("write", format!("no room for {region:?}")))
        }
    }

    #[test]
    fn a_failing_sink_fails_the_store() {
        let a = Array::ones(&[4], DType::F32, 2, Some("cpu")).unwrap();
        let err = a.store(Arc::new(Refusing)).unwrap_err().to_string();
        assert!(err.contains("no room for"), "{err}");
    }
}

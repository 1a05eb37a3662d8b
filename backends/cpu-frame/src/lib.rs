//! # tessera-cpu-frame
//!
//! The reference dataframe backend: partitions are Arrow `RecordBatch`es, kernels are
//! arrow's compute kernels plus the groupby/join/sort loops in this crate; parallelism
//! across partitions comes from the frame engine's scheduler (rayon).
//!
//! A crate of its own, apart from the array backend (`tessera-cpu`), so that array code
//! (and its tests, and the seed headline) never waits for arrow's kernel crates to
//! compile.
//!
//! Registered as the `cpu` dataframe backend through `inventory`; name the crate
//! (`use tessera_cpu_frame as _;`) in a binary that does not otherwise use it, or the
//! linker drops the registration.

mod aggregate;
mod comoments;
mod eval;
mod filter;
mod join;
mod keys;
mod program;
mod selection;
mod sort;
mod temporal;
mod top_values;
mod views;
mod window;

use std::any::Any;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array};
use arrow_schema::SchemaRef;
use tessera_core::frame::{
    downcast_partition, AggSpec, DataFrameBackend, FrameCapabilities, FrameProgram, JoinSpec,
    Partition, PartitionData, SortKey, StoredForms, WindowSpec,
};
use tessera_core::{Error, Result};

use program::run_program;

tessera_core::inventory::submit! {
    tessera_core::registry::DataFrameBackendFactory::new("cpu", || Ok(Arc::new(CpuFrameBackend::default())))
}

/// A CPU partition: one Arrow batch.
#[derive(Debug, Clone)]
pub struct CpuPartition {
    /// The rows.
    pub batch: RecordBatch,
    /// The hash table of this batch as the small side of a broadcast join, built once by
    /// `prepare_broadcast` and probed by every partition of the large side.
    join_table: Option<Arc<join::BuildTable>>,
    /// The owning backend's registry name (`cpu`, or another given to
    /// [`CpuFrameBackend::named`]).
    backend: &'static str,
}

impl PartitionData for CpuPartition {
    fn backend(&self) -> &str {
        self.backend
    }
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }
    fn schema(&self) -> SchemaRef {
        self.batch.schema()
    }
    /// The batch's buffers, and a broadcast side's hash table.
    fn nbytes(&self) -> usize {
        self.batch.get_array_memory_size() + self.join_table.as_ref().map_or(0, |t| t.bytes())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The CPU dataframe backend.
#[derive(Debug, Clone, Copy)]
pub struct CpuFrameBackend {
    name: &'static str,
}

impl Default for CpuFrameBackend {
    /// The reference backend, registered as `cpu`.
    fn default() -> CpuFrameBackend {
        CpuFrameBackend { name: "cpu" }
    }
}

impl CpuFrameBackend {
    /// The CPU kernels under another registry name — shipped in a plugin library, or
    /// registered a second time beside `cpu` — whose partitions carry that name.
    pub fn named(name: &'static str) -> CpuFrameBackend {
        CpuFrameBackend { name }
    }

    fn batch<'a>(&self, p: &'a Partition, op: &str) -> Result<&'a RecordBatch> {
        Ok(&downcast_partition::<CpuPartition>(p, self.name, op)?.batch)
    }

    fn wrap(&self, batch: RecordBatch) -> Partition {
        Arc::new(CpuPartition {
            batch,
            join_table: None,
            backend: self.name,
        })
    }

    /// Splits `batch` by an output index per row, keeping row order within each output.
    fn scatter(&self, batch: &RecordBatch, ids: &[u32], n: usize) -> Result<Vec<Partition>> {
        // Compacted once here, not by each of the `n` takes below, which would otherwise
        // each clone the input's buffer lists.
        let batch = &views::compact_batch(batch.clone())?;
        let mut idx: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, &d) in ids.iter().enumerate() {
            idx[d as usize].push(i as u32);
        }
        idx.into_iter()
            .map(|rows| {
                let out = arrow_select::take::take_record_batch(batch, &UInt32Array::from(rows))
                    .map_err(|e| Error::arrow("partition", e))?;
                Ok(self.wrap(views::compact_batch(out)?))
            })
            .collect()
    }
}

impl DataFrameBackend for CpuFrameBackend {
    fn name(&self) -> &str {
        self.name
    }

    fn import_batch(&self, batch: RecordBatch) -> Result<Partition> {
        Ok(self.wrap(batch))
    }

    fn export_batch(&self, part: &Partition) -> Result<RecordBatch> {
        Ok(self.batch(part, "to_record_batch")?.clone())
    }

    fn capabilities(&self) -> FrameCapabilities {
        FrameCapabilities {
            windows: true,
            filter_joins: true,
            stored_forms: StoredForms {
                dictionary_keys: true,
                narrow_decimals: true,
                view_keys: true,
            },
            ..FrameCapabilities::default()
        }
    }

    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition> {
        Ok(self.wrap(run_program(self.batch(part, "evaluate")?, program)?))
    }

    fn hash_partition(
        &self,
        part: &Partition,
        keys: &[String],
        n: usize,
    ) -> Result<Vec<Partition>> {
        let b = self.batch(part, "hash_partition")?;
        let cols = keys
            .iter()
            .map(|k| {
                b.column_by_name(k)
                    .cloned()
                    .ok_or_else(|| Error::invalid("hash_partition", format!("no column '{k}'")))
            })
            .collect::<Result<Vec<_>>>()?;
        let hashes = keys::groups::hash_rows(&cols, b.num_rows())?;
        let ids: Vec<u32> = hashes.iter().map(|h| (h % n as u64) as u32).collect();
        self.scatter(b, &ids, n)
    }

    fn range_partition(
        &self,
        part: &Partition,
        by: &[SortKey],
        bounds: &RecordBatch,
    ) -> Result<Vec<Partition>> {
        let b = self.batch(part, "range_partition")?;
        let ids = sort::range_ids(b, by, bounds)?;
        self.scatter(b, &ids, bounds.num_rows() + 1)
    }

    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(self.wrap(aggregate::partial(
            self.batch(part, "aggregate")?,
            keys,
            aggs,
        )?))
    }

    fn aggregate_partial_of(
        &self,
        part: &Partition,
        program: &FrameProgram,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(self.wrap(selection::partial_of(
            self.batch(part, "aggregate")?,
            program,
            keys,
            aggs,
        )?))
    }

    fn aggregate_combine(
        &self,
        parts: &[Partition],
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let all = self.concat(parts)?;
        Ok(self.wrap(aggregate::combine(
            self.batch(&all, "aggregate")?,
            keys,
            aggs,
        )?))
    }

    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(self.wrap(aggregate::finalize(
            self.batch(state, "aggregate")?,
            keys,
            aggs,
        )?))
    }

    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let l = self.batch(left, "merge")?;
        let r = downcast_partition::<CpuPartition>(right, self.name, "merge")?;
        let (table, r) = (r.join_table.as_deref(), &r.batch);
        let schema = spec.output_schema(&l.schema(), &r.schema())?;
        Ok(self.wrap(join::join(l, r, table, spec, schema)?))
    }

    fn prepare_broadcast(&self, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let r = self.batch(right, "merge")?;
        Ok(Arc::new(CpuPartition {
            join_table: Some(Arc::new(join::build(r, spec)?)),
            batch: r.clone(),
            backend: self.name,
        }))
    }

    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition> {
        Ok(self.wrap(sort::sort_batch(self.batch(part, "sort")?, by)?))
    }

    fn sort_limit(&self, part: &Partition, by: &[SortKey], n: usize) -> Result<Partition> {
        Ok(self.wrap(sort::sort_limit_batch(self.batch(part, "sort")?, by, n)?))
    }

    fn concat(&self, parts: &[Partition]) -> Result<Partition> {
        let batches = parts
            .iter()
            .map(|p| self.batch(p, "concat").cloned())
            .collect::<Result<Vec<_>>>()?;
        let Some(first) = batches.first() else {
            return Err(Error::invalid("concat", "no partitions"));
        };
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        if first.num_columns() == 0 {
            return Ok(self.wrap(
                RecordBatch::try_new_with_options(
                    first.schema(),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(rows)),
                )
                .map_err(|e| Error::arrow("concat", e))?,
            ));
        }
        Ok(self.wrap(
            arrow_select::concat::concat_batches(&first.schema(), &batches)
                .map_err(|e| Error::arrow("concat", e))?,
        ))
    }

    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition> {
        let b = self.batch(part, "slice")?;
        let offset = offset.min(b.num_rows());
        let len = len.min(b.num_rows() - offset);
        Ok(self.wrap(b.slice(offset, len)))
    }

    fn window(
        &self,
        part: &Partition,
        spec: &WindowSpec,
        carry: Option<&Partition>,
    ) -> Result<Partition> {
        let carry = carry.map(|c| self.batch(c, "window")).transpose()?;
        Ok(self.wrap(window::window(self.batch(part, "window")?, spec, carry)?))
    }

    fn window_carry(&self, part: &Partition, spec: &WindowSpec) -> Result<Partition> {
        Ok(self.wrap(window::carry(self.batch(part, "window")?, spec)?))
    }

    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition> {
        let b = self.batch(part, "take")?;
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= b.num_rows()) {
            return Err(Error::invalid(
                "take",
                format!("row {bad} of a {}-row partition", b.num_rows()),
            ));
        }
        let idx = UInt64Array::from(indices.to_vec());
        Ok(self.wrap(
            arrow_select::take::take_record_batch(b, &idx).map_err(|e| Error::arrow("take", e))?,
        ))
    }
}

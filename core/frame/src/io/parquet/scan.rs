//! [`ParquetSource`] as a plan's scan sees it: the [`FileSource`] the optimizer and the
//! executor call — schema, partitions (row groups), pruning by statistics (`prune`), reads.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{prune, ParquetSource};
use crate::backend::StoredForms;
use crate::error::Result;
use crate::plan::{ColumnPredicate, FileSource, ScanFilter};

impl FileSource for ParquetSource {
    fn format(&self) -> &'static str {
        "parquet"
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn partitions(&self) -> usize {
        self.groups.len()
    }

    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        let (f, g) = *self.groups.get(partition)?;
        u64::try_from(self.files[f].1.row_group(g).total_byte_size()).ok()
    }

    fn describe(&self) -> String {
        self.display.clone()
    }

    /// Asks the system to read the row group's projected column chunks ahead
    /// ([`StoredFile::will_need`](tessera_io::file::StoredFile::will_need)).
    fn prefetch(&self, partition: usize, projection: Option<&[usize]>) {
        let Some(&(f, g)) = self.groups.get(partition) else {
            return;
        };
        let (file, md) = &self.files[f];
        let rg = md.row_group(g);
        let schema = md.file_metadata().schema_descr();
        for leaf in 0..rg.num_columns() {
            let root = schema.get_column_root_idx(leaf);
            if projection.is_none_or(|p| p.contains(&root)) {
                let (start, len) = rg.column(leaf).byte_range();
                file.will_need(start..start.saturating_add(len));
            }
        }
    }

    fn prune(&self, predicates: &[ColumnPredicate]) -> Option<Vec<usize>> {
        Some(prune::row_groups(self, predicates))
    }

    fn read(&self, partition: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        self.read_caught(partition, projection, None, &[], StoredForms::default())
    }

    fn read_filtered(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: &ScanFilter<'_>,
    ) -> Result<RecordBatch> {
        self.read_caught(
            partition,
            projection,
            Some(filter),
            &[],
            StoredForms::default(),
        )
    }

    fn read_coded(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        coded: &[usize],
        forms: StoredForms,
    ) -> Result<RecordBatch> {
        self.read_caught(partition, projection, None, coded, forms)
    }
}

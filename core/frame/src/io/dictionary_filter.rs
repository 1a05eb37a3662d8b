//! A scan's filter tested on Parquet dictionaries while a row group is read.
//!
//! Writers dictionary-encode low-cardinality string columns (TPC-H's ship modes, order
//! statuses, brands): a column chunk then stores each distinct string once and a small
//! integer per row. Decoded the usual way, every row gets its own string (a 16-byte view
//! built per row), and the filter after the scan compares every row's string. When a
//! conjunct of the filter over the scan reads one such column only, its value on a row
//! depends on the row's string alone, so it is evaluated once per dictionary entry (and
//! once for null) by the frame backend, and each row looks its key up in that table.
//! The column is read as Arrow's `Dictionary(Int32, Utf8)`, the rows no conjunct keeps
//! are dropped (keys are cheap to filter), and only the kept rows' strings are built,
//! in the column's own type. TPC-H Q19 keeps some 7% of `lineitem` on its ship mode and
//! instruction this way.
//!
//! When rows are tested, decimals of up to 18 digits stored as `INT64` are read as Arrow's
//! `Decimal64` (the stored values, where the reader would widen each to 128 bits) and
//! widened to the frame's `Decimal128` after the rows are dropped: Q19's quantity, price
//! and discount are widened for the kept 7%.
//!
//! The filter still runs after the read, whole: rows kept here are a superset of the rows
//! it keeps. A conjunct whose evaluation fails here (a cast some dictionary entry does not
//! survive) is left to it. A column chunk with a data page that is not
//! dictionary-encoded (the writer fell back to plain pages: mostly distinct strings), or
//! whose page encodings the file does not record, is read as before.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::ScanFilter;

use super::coded_columns::{
    all_pages_dictionary, coded_schema, dictionary_value_type, int64_decimal,
};

/// The dictionary-encoded string columns of one row group's read that the filter tests,
/// each with the conjunction of the filter's conjuncts that read it alone.
#[derive(Debug, Default)]
pub(crate) struct DictionaryTests {
    /// `(root column index in the file, conjunction)`, by column.
    columns: Vec<(usize, Expr)>,
    /// Root columns of decimals of at most 18 digits stored as `INT64`, read as
    /// `Decimal64` (the stored values, no conversion) and widened to the frame's
    /// `Decimal128` after the rows are dropped, only the kept ones.
    narrowed: Vec<usize>,
}

impl DictionaryTests {
    /// The tests of `predicate` for row group `group` of a file whose Arrow schema is
    /// `file_schema`, reading the root columns `roots` (sorted).
    pub(crate) fn plan(
        predicate: &Expr,
        file_schema: &Schema,
        md: &ParquetMetaData,
        group: usize,
        roots: &[usize],
    ) -> DictionaryTests {
        let rg = md.row_group(group);
        let descr = md.file_metadata().schema_descr();
        let mut columns: Vec<(usize, Expr)> = Vec::new();
        for conjunct in predicate.conjuncts() {
            let mut read = std::collections::BTreeSet::new();
            conjunct.columns_into(&mut read);
            let (Some(name), 1) = (read.first(), read.len()) else {
                continue;
            };
            let Ok(root) = file_schema.index_of(name) else {
                continue;
            };
            if roots.binary_search(&root).is_err()
                || dictionary_value_type(file_schema.field(root).data_type()).is_none()
            {
                continue;
            }
            // One leaf under the root (a flat string column), every data page of it
            // dictionary-encoded.
            let mut leaves =
                (0..rg.num_columns()).filter(|&l| descr.get_column_root_idx(l) == root);
            let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
                continue;
            };
            if !all_pages_dictionary(rg.column(leaf)) {
                continue;
            }
            match columns.iter_mut().find(|(r, _)| *r == root) {
                Some((_, e)) => *e = e.clone().and(conjunct.clone()),
                None => columns.push((root, conjunct.clone())),
            }
        }
        let narrowed = if columns.is_empty() {
            Vec::new()
        } else {
            roots
                .iter()
                .copied()
                .filter(|&root| int64_decimal(file_schema, md, root))
                .collect()
        };
        DictionaryTests { columns, narrowed }
    }

    /// Whether no column is tested.
    pub(crate) fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// `file_schema` with each tested column read as a dictionary of its strings and each
    /// narrowed decimal as `Decimal64`, for the reader's schema hint.
    pub(crate) fn read_schema(&self, file_schema: &Schema) -> SchemaRef {
        let at: Vec<usize> = self
            .columns
            .iter()
            .map(|(r, _)| *r)
            .chain(self.narrowed.iter().copied())
            .collect();
        coded_schema(file_schema, &at, &[])
    }

    /// Applies the tests to `batch`, the read of root columns `roots` (in that order),
    /// whose tested columns are dictionaries: rows no test keeps are dropped when that is
    /// at least half of them, and each tested column comes back in its type in `schema`
    /// (the frame's, for the same roots). Gives the columns and their row count.
    ///
    /// # Errors
    /// Arrow errors filtering, taking or casting a column.
    pub(crate) fn apply(
        &self,
        batch: &RecordBatch,
        roots: &[usize],
        schema: &Schema,
        filter: &ScanFilter<'_>,
    ) -> Result<(Vec<ArrayRef>, usize)> {
        let at = |e| Error::arrow("read_parquet", e);
        let rows = batch.num_rows();
        let mut keep: Option<BooleanBuffer> = None;
        for (root, test) in &self.columns {
            let Ok(k) = roots.binary_search(root) else {
                continue;
            };
            let Some(dict) = batch.column(k).as_dictionary_opt::<Int32Type>() else {
                continue;
            };
            let Some(hits) = rows_kept(dict, schema.field(k), test, filter)? else {
                continue;
            };
            keep = Some(match keep {
                Some(k) => &k & &hits,
                None => hits,
            });
        }
        let batch = match keep {
            Some(keep) if keep.count_set_bits() <= rows / 2 => {
                arrow_select::filter::filter_record_batch(batch, &BooleanArray::new(keep, None))
                    .map_err(at)?
            }
            _ => batch.clone(),
        };
        // The tested columns in the frame's types: the distinct strings cast once, then
        // taken by key.
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| match c.as_dictionary_opt::<Int32Type>() {
                Some(dict) if !matches!(f.data_type(), DataType::Dictionary(_, _)) => {
                    let values = arrow_cast::cast(dict.values(), f.data_type()).map_err(at)?;
                    arrow_select::take::take(&values, dict.keys(), None).map_err(at)
                }
                _ => Ok(c.clone()),
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok((columns, batch.num_rows()))
    }
}

/// The rows of `dict` for which `test` is true, by evaluating it once per distinct value
/// (and once for null) in `field`'s type; `None` when the evaluation fails or does not
/// give booleans (the filter after the read then decides alone).
fn rows_kept(
    dict: &arrow_array::DictionaryArray<Int32Type>,
    field: &Field,
    test: &Expr,
    filter: &ScanFilter<'_>,
) -> Result<Option<BooleanBuffer>> {
    let at = |e| Error::arrow("read_parquet", e);
    let n = dict.values().len();
    let values = arrow_cast::cast(dict.values(), field.data_type()).map_err(at)?;
    let with_null = arrow_select::concat::concat(&[
        values.as_ref(),
        arrow_array::new_null_array(field.data_type(), 1).as_ref(),
    ])
    .map_err(at)?;
    let distinct = RecordBatch::try_new(
        Arc::new(Schema::new(vec![field.clone().with_nullable(true)])),
        vec![with_null],
    )
    .map_err(at)?;
    let Ok(truth) = (filter.evaluate)(&distinct, test) else {
        return Ok(None);
    };
    let Some(truth) = truth.as_boolean_opt() else {
        return Ok(None);
    };
    if truth.len() != n + 1 {
        return Ok(None);
    }
    let table: Vec<bool> = (0..=n)
        .map(|i| truth.is_valid(i) && truth.value(i))
        .collect();
    let keys = dict.keys().values();
    // A key out of range (none are: the reader checks them) reads the null entry.
    let hits = BooleanBuffer::collect_bool(keys.len(), |i| {
        table[usize::try_from(keys[i]).unwrap_or(n).min(n)]
    });
    Ok(Some(match dict.keys().nulls() {
        Some(nulls) if table[n] => &hits | &(!nulls.inner()),
        Some(nulls) => &hits & nulls.inner(),
        None => hits,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{DataFrameBackend, FrameProgram, FrameStep};
    use crate::expr::{col, lit};
    use crate::io::parquet::ParquetSource;
    use crate::plan::FileSource;
    use arrow_array::{Int64Array, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    const MODES: [Option<&str>; 6] = [
        Some("AIR"),
        Some("RAIL"),
        Some("SHIP"),
        Some("TRUCK"),
        Some("MAIL"),
        None,
    ];

    /// 600 rows in row groups of 200: `mode` cycles through five strings and null
    /// (dictionary-encoded), `note` is a distinct string per row (plain pages once the
    /// small dictionary is full), `id` is the row number, `price` a `decimal(15, 2)`
    /// (stored as `INT64`); pages of 20 rows.
    fn write(path: &std::path::Path) {
        let modes: StringArray = (0..600).map(|i| MODES[i % 6]).collect();
        let notes: StringArray = (0..600)
            .map(|i| Some(format!("note number {i:05} of the file")))
            .collect();
        let batch = RecordBatch::try_from_iter([
            ("mode", Arc::new(modes) as ArrayRef),
            ("note", Arc::new(notes) as ArrayRef),
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..600)) as ArrayRef,
            ),
            (
                "price",
                Arc::new(
                    arrow_array::Decimal128Array::from_iter_values((0..600).map(|i| i * 101 - 7))
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ) as ArrayRef,
            ),
        ])
        .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_size(200)
            .set_dictionary_page_size_limit(256)
            .set_write_batch_size(10)
            .set_data_page_row_count_limit(20)
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// The CPU backend's evaluator, as the scan pipeline passes it.
    fn evaluate(batch: &RecordBatch, e: &Expr) -> Result<ArrayRef> {
        let backend = tessera_cpu_frame::CpuFrameBackend::default();
        let part = backend.import_batch(batch.clone())?;
        let program = FrameProgram {
            steps: vec![FrameStep::Project(vec![("value".into(), e.clone())])],
        };
        Ok(backend
            .export_batch(&backend.evaluate(&part, &program)?)?
            .column(0)
            .clone())
    }

    /// `batch` filtered by `predicate` on the CPU backend.
    fn filtered(batch: RecordBatch, predicate: &Expr) -> RecordBatch {
        let backend = tessera_cpu_frame::CpuFrameBackend::default();
        let part = backend.import_batch(batch).unwrap();
        let program = FrameProgram {
            steps: vec![FrameStep::Filter(predicate.clone())],
        };
        backend
            .export_batch(&backend.evaluate(&part, &program).unwrap())
            .unwrap()
    }

    /// Every row group read through the filter: `(rows read, rows after the filter)`,
    /// checking that the filter then gives what it gives on the plain read.
    fn read_through(source: &ParquetSource, predicate: &Expr) -> (usize, usize) {
        let filter = ScanFilter {
            predicate,
            evaluate: &evaluate,
        };
        let (mut read, mut kept) = (0, 0);
        for g in 0..source.partitions() {
            let early = source.read_filtered(g, None, &filter).unwrap();
            let plain = source.read(g, None).unwrap();
            assert_eq!(early.schema(), plain.schema(), "row group {g}");
            let (early, plain) = (
                filtered(early.clone(), predicate),
                filtered(plain, predicate),
            );
            assert_eq!(early, plain, "row group {g} under {predicate}");
            read += source.read_filtered(g, None, &filter).unwrap().num_rows();
            kept += early.num_rows();
        }
        (read, kept)
    }

    fn source(name: &str) -> (std::path::PathBuf, ParquetSource) {
        let dir = std::env::temp_dir().join(format!("tessera-dict-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        write(&path);
        let source = ParquetSource::open(path.to_str().unwrap()).unwrap();
        (dir, source)
    }

    #[test]
    fn a_selective_test_on_a_dictionary_column_drops_rows_while_reading() {
        let (dir, source) = source("selective");
        // Two modes of six, and a conjunct on another column left to the filter.
        let p = col("mode")
            .is_in(["AIR", "MAIL"])
            .and(col("id").gt(lit(100i64)));
        let (read, kept) = read_through(&source, &p);
        assert_eq!(read, 200, "the rows of AIR and MAIL only");
        assert_eq!(
            kept,
            (101..600).filter(|i| i % 6 == 0 || i % 6 == 4).count()
        );
        // Two conjuncts on the same column are tested together.
        let p = col("mode")
            .gt_eq(lit("MAIL"))
            .and(col("mode").lt(lit("SHIP")));
        assert_eq!(read_through(&source, &p), (200, 200), "MAIL and RAIL");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn null_strings_are_kept_exactly_when_the_test_is_true_on_null() {
        let (dir, source) = source("nulls");
        let p = col("mode").is_null().or(col("mode").eq(lit("SHIP")));
        assert_eq!(read_through(&source, &p), (200, 200));
        // Null is not "not AIR": the filter drops it, and so may the read (here it
        // keeps more than half, so the read leaves the rows to the filter).
        let p = col("mode").not_eq(lit("AIR"));
        assert_eq!(read_through(&source, &p), (600, 400));
        let p = col("mode").eq(lit("TRUCK"));
        assert_eq!(read_through(&source, &p), (100, 100));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn plain_encoded_columns_and_tests_of_several_columns_read_every_row() {
        let (dir, source) = source("plain");
        let md = source.file_metadata(0);
        let schema = source.schema();
        let note = col("note").like("note number 0000%");
        assert!(
            DictionaryTests::plan(&note, &schema, md, 0, &[0, 1, 2]).is_empty(),
            "the note column fell back to plain pages"
        );
        assert_eq!(read_through(&source, &note), (600, 10));
        // A conjunct reading two columns is the filter's alone.
        let both = col("mode").eq(lit("AIR")).or(col("id").lt(lit(3i64)));
        assert!(DictionaryTests::plan(&both, &schema, md, 0, &[0, 1, 2]).is_empty());
        assert_eq!(read_through(&source, &both), (600, 102));
        // The tested column outside the read's columns is not tested.
        let air = col("mode").eq(lit("AIR"));
        assert!(DictionaryTests::plan(&air, &schema, md, 0, &[1, 2]).is_empty());
        let tests = DictionaryTests::plan(&air, &schema, md, 0, &[0, 2, 3]);
        assert!(!tests.is_empty());
        // The decimal is read as `Decimal64` and widened after the test (the reads
        // below check that it comes back as the plain read gives it).
        assert_eq!(tests.narrowed, [3]);
        assert_eq!(
            tests.read_schema(&schema).field(3).data_type(),
            &DataType::Decimal64(15, 2)
        );
        assert_eq!(read_through(&source, &air), (100, 100));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_test_the_backend_cannot_evaluate_is_left_to_the_filter() {
        let (dir, source) = source("failing");
        let p = col("mode").eq(lit("AIR"));
        let failing = |_: &RecordBatch, _: &Expr| -> Result<ArrayRef> {
            Err(Error::invalid("evaluate", "not on this backend"))
        };
        let not_boolean = |b: &RecordBatch, _: &Expr| -> Result<ArrayRef> {
            Ok(Arc::new(Int64Array::from(vec![1; b.num_rows()])))
        };
        type Evaluate = dyn Fn(&RecordBatch, &Expr) -> Result<ArrayRef> + Send + Sync;
        let evaluators: [&Evaluate; 2] = [&failing, &not_boolean];
        for evaluate in evaluators {
            let filter = ScanFilter {
                predicate: &p,
                evaluate,
            };
            let batch = source.read_filtered(0, None, &filter).unwrap();
            assert_eq!(batch.num_rows(), 200);
            assert_eq!(batch.schema(), source.read(0, None).unwrap().schema());
        }
        let filter = ScanFilter {
            predicate: &p,
            evaluate: &evaluate,
        };
        assert_eq!(
            source.read_filtered(0, None, &filter).unwrap().num_rows(),
            34
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

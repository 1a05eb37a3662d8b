//! List columns to rows (`explode`, as pandas' `DataFrame.explode`), and what it enables:
//! the `n` largest or smallest values of each group as rows (pandas'
//! `groupby(k)[c].nlargest(n)`), from the bounded per-group selection of
//! [`AggFunc::Largest`] — the rows are never sorted.
//!
//! `explode` runs on the host over each partition (Arrow's `take` of the other columns,
//! the list's values as the column): a backend-independent step, like `map_partitions`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};

use crate::api::dataframe::DataFrame;
use crate::api::groupby::GroupBy;
use crate::backend::AggSpec;
use crate::error::{Error, Result};
use crate::expr::col;
use crate::AggFunc;

/// `batch` with each element of its list column `i` on a row of its own, the other
/// columns repeated; a null or empty list gives one row holding null.
fn explode_batch(batch: &RecordBatch, i: usize, schema: Arc<Schema>) -> Result<RecordBatch> {
    let list = batch.column(i).as_list::<i32>();
    let offsets = list.offsets();
    let (mut rows, mut take_values): (Vec<u32>, Vec<Option<u32>>) = (Vec::new(), Vec::new());
    for r in 0..list.len() {
        let (lo, hi) = (offsets[r] as u32, offsets[r + 1] as u32);
        if list.is_null(r) || lo == hi {
            rows.push(r as u32);
            take_values.push(None);
        } else {
            for v in lo..hi {
                rows.push(r as u32);
                take_values.push(Some(v));
            }
        }
    }
    let rows = UInt32Array::from(rows);
    let picks = UInt32Array::from(take_values);
    let arrow = |e| Error::arrow("explode", e);
    let columns = batch
        .columns()
        .iter()
        .enumerate()
        .map(|(c, a)| {
            if c == i {
                arrow_select::take::take(list.values().as_ref(), &picks, None).map_err(arrow)
            } else {
                arrow_select::take::take(a.as_ref(), &rows, None).map_err(arrow)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, columns).map_err(arrow)
}

impl DataFrame {
    /// Each element of the list column `column` on a row of its own, the other columns
    /// repeated (pandas' `explode`); a null or empty list gives one row holding null.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming a missing column or one that is not a list.
    pub fn explode(&self, column: &str) -> Result<DataFrame> {
        let schema = self.schema();
        let i = schema.index_of(column).map_err(|_| {
            Error::invalid(
                "explode",
                format!(
                    "no column '{column}'; columns: {}",
                    self.columns().join(", ")
                ),
            )
        })?;
        let DataType::List(item) = schema.field(i).data_type() else {
            return Err(Error::invalid(
                "explode",
                format!(
                    "column '{column}' is {}, not a list",
                    schema.field(i).data_type()
                ),
            ));
        };
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| (**f).clone()).collect();
        fields[i] = Field::new(column, item.data_type().clone(), true);
        let out = Arc::new(Schema::new(fields));
        let target = out.clone();
        self.map_partitions_with_schema(move |b| explode_batch(&b, i, target.clone()), out)
    }
}

impl GroupBy {
    /// The `n` largest values of `column` in each group, as rows of the keys and the
    /// value, largest first within a group (pandas' `groupby(keys)[column].nlargest(n)`;
    /// nulls and NaN left out, ties by row order). Each partition keeps a bounded
    /// selection of `n` per group ([`AggFunc::Largest`]): no row is sorted.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::DataFrame;
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![1, 2, 1, 1, 2]))),
    ///         ("v", Arc::new(Int64Array::from(vec![5, 7, 9, 1, 3]))),
    ///     ],
    ///     2,
    /// )?;
    /// let top = df.groupby(&["k"])?.nlargest(2, "v")?.sort_values(&["k"], &[true])?;
    /// assert_eq!(top.len()?, 4); // k=1: 9, 5; k=2: 7, 3
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A missing column, one that cannot be ordered, or `n` of 0 or above `u32::MAX`.
    pub fn nlargest(&self, n: usize, column: &str) -> Result<DataFrame> {
        self.top_values(n, column, AggFunc::Largest)
    }

    /// The `n` smallest values of `column` in each group, smallest first; see
    /// [`GroupBy::nlargest`].
    ///
    /// # Errors
    /// As [`GroupBy::nlargest`].
    pub fn nsmallest(&self, n: usize, column: &str) -> Result<DataFrame> {
        self.top_values(n, column, AggFunc::Smallest)
    }

    fn top_values(&self, n: usize, column: &str, func: fn(u32) -> AggFunc) -> Result<DataFrame> {
        let k = u32::try_from(n).ok().filter(|&k| k > 0).ok_or_else(|| {
            Error::invalid(
                func(1).name(),
                format!("n must be from 1 to {}, got {n}", u32::MAX),
            )
        })?;
        self.agg_specs(vec![AggSpec::new(column, func(k), column)])?
            .explode(column)?
            .filter(col(column).is_not_null())
    }
}

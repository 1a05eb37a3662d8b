//! Counts that need not read the column they count.
//!
//! `count(c)` is the number of non-null values of `c`. Where `c` cannot hold a null (its
//! field is not nullable: Parquet's `required` columns, TPC-H's every column), that is the
//! number of rows, which any other column that cannot hold a null counts too. When the
//! aggregation reads such a column anyway (a key, or the column of another aggregation),
//! the count is taken over it, and `c` is not read at all: TPC-H Q1 counts `l_orderkey`,
//! which nothing else reads, and decoding it was a tenth of the query.

use arrow_schema::Schema;

use crate::backend::{AggFunc, AggSpec};

/// `aggs` with each count of a column that holds no nulls moved onto a non-nullable
/// column the aggregation reads for another reason (a key first), where there is one.
pub(crate) fn counts_on_read_columns(
    input: &Schema,
    keys: &[String],
    aggs: &[AggSpec],
) -> Vec<AggSpec> {
    let no_nulls = |c: &str| input.field_with_name(c).is_ok_and(|f| !f.is_nullable());
    let movable = |a: &AggSpec| a.func == AggFunc::Count && no_nulls(&a.column);
    // Columns read whatever the counts count.
    let read = keys
        .iter()
        .chain(aggs.iter().filter(|a| !movable(a)).map(|a| &a.column))
        .find(|c| no_nulls(c));
    aggs.iter()
        .map(|a| match read {
            Some(c) if movable(a) => AggSpec {
                column: c.clone(),
                ..a.clone()
            },
            _ => a.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("k", DataType::Utf8, false),
            Field::new("maybe", DataType::Utf8, true),
            Field::new("x", DataType::Int64, false),
            Field::new("id", DataType::Int64, false),
            Field::new("n", DataType::Int64, true),
        ])
    }

    fn columns(aggs: &[AggSpec]) -> Vec<&str> {
        aggs.iter().map(|a| a.column.as_str()).collect()
    }

    #[test]
    fn a_count_of_a_column_without_nulls_moves_to_a_key_or_an_aggregated_column() {
        let s = schema();
        let aggs = [
            AggSpec::new("x", AggFunc::Sum, "sx"),
            AggSpec::new("id", AggFunc::Count, "count"),
        ];
        let keys = ["k".to_string()];
        let moved = counts_on_read_columns(&s, &keys, &aggs);
        assert_eq!(columns(&moved), ["x", "k"]);
        assert_eq!(moved[1].output, "count");
        assert_eq!(moved[1].func, AggFunc::Count);
        // A nullable key is passed over for the aggregated column.
        let keys = ["maybe".to_string()];
        assert_eq!(
            columns(&counts_on_read_columns(&s, &keys, &aggs)),
            ["x", "x"]
        );
    }

    #[test]
    fn counts_of_nullable_columns_and_counts_alone_stay() {
        let s = schema();
        // `n` may hold nulls: its count is not the row count.
        let aggs = [
            AggSpec::new("x", AggFunc::Sum, "sx"),
            AggSpec::new("n", AggFunc::Count, "count"),
        ];
        assert_eq!(columns(&counts_on_read_columns(&s, &[], &aggs)), ["x", "n"]);
        // Nothing else is read without nulls: the count reads its own column.
        let aggs = [
            AggSpec::new("n", AggFunc::Sum, "sn"),
            AggSpec::new("id", AggFunc::Count, "count"),
        ];
        let keys = ["maybe".to_string()];
        assert_eq!(
            columns(&counts_on_read_columns(&s, &keys, &aggs)),
            ["n", "id"]
        );
        // Two counts with nothing else: neither is moved onto the other.
        let aggs = [
            AggSpec::new("id", AggFunc::Count, "a"),
            AggSpec::new("x", AggFunc::Count, "b"),
        ];
        assert_eq!(
            columns(&counts_on_read_columns(&s, &[], &aggs)),
            ["id", "x"]
        );
    }
}

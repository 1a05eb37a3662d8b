//! Hive-style partition directories: `sales/year=2024/month=01/part-0.parquet` gives the
//! rows of that file the columns `year = 2024` and `month = 1`.
//!
//! Spark, pyarrow (`partitioning="hive"`), DuckDB and Polars write and read datasets laid
//! out this way. The partition columns are not stored in the files: they come from the
//! path, one value per file, typed `Int64` when every value of a key is an integer and
//! `Utf8` otherwise (`__HIVE_DEFAULT_PARTITION__` is null, as Hive writes it). A filter on
//! a partition column drops whole files before anything is read.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, Int64Array, StringArray};
use arrow_schema::{DataType, Field};

use crate::error::{Error, Result};
use crate::expr::{BinaryOp, Literal};
use crate::plan::ColumnPredicate;

/// The value Hive writes for a null partition key.
const NULL_VALUE: &str = "__HIVE_DEFAULT_PARTITION__";

/// The partition keys of a dataset and each file's values.
#[derive(Debug, Clone, Default)]
pub(crate) struct HivePartitions {
    /// (name, type) per key, in path order.
    pub keys: Vec<(String, DataType)>,
    /// Per file, per key: the value (None: null).
    values: Vec<Vec<Option<String>>>,
}

impl HivePartitions {
    /// The partitions of `files` (paths or URLs) below `root`; none when the paths hold no
    /// `key=value` directories.
    ///
    /// # Errors
    /// Files that disagree on the keys (or their order) — a dataset whose layout is not
    /// one partitioning.
    pub(crate) fn from_paths(root: &str, files: &[&str]) -> Result<HivePartitions> {
        let root = root.trim_end_matches('/');
        let mut keys: Option<Vec<String>> = None;
        let mut values = Vec::with_capacity(files.len());
        for f in files {
            let rel = f.strip_prefix(root).unwrap_or(f).trim_start_matches('/');
            let dirs: Vec<&str> = rel.split('/').collect();
            let pairs: Vec<(String, Option<String>)> = dirs[..dirs.len().saturating_sub(1)]
                .iter()
                .filter_map(|d| d.split_once('='))
                .map(|(k, v)| {
                    let v = percent_decode(v);
                    (k.to_string(), (v != NULL_VALUE).then_some(v))
                })
                .collect();
            let names: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
            match &keys {
                None => keys = Some(names),
                Some(k) if *k == names => {}
                Some(k) => {
                    return Err(Error::invalid(
                        "read_parquet",
                        format!(
                            "{f}: partition directories {names:?} differ from the dataset's {k:?}; every file of a hive-partitioned dataset sits under the same keys"
                        ),
                    ))
                }
            }
            values.push(pairs.into_iter().map(|(_, v)| v).collect::<Vec<_>>());
        }
        let names = keys.unwrap_or_default();
        let keys = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let ints = values
                    .iter()
                    .filter_map(|v: &Vec<Option<String>>| v[i].as_deref())
                    .all(|v| v.parse::<i64>().is_ok());
                let ty = if ints {
                    DataType::Int64
                } else {
                    DataType::Utf8
                };
                (name.clone(), ty)
            })
            .collect();
        Ok(HivePartitions { keys, values })
    }

    /// True when the dataset has partition columns.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The partition columns as fields (nullable).
    pub(crate) fn fields(&self) -> Vec<Field> {
        self.keys
            .iter()
            .map(|(n, t)| Field::new(n, t.clone(), true))
            .collect()
    }

    /// Key `key`'s value for file `file` as a column of `rows` equal values.
    pub(crate) fn column(&self, file: usize, key: usize, rows: usize) -> ArrayRef {
        let (_, ty) = &self.keys[key];
        match (&self.values[file][key], ty) {
            (None, ty) => new_null_array(ty, rows),
            (Some(v), DataType::Int64) => {
                Arc::new(Int64Array::from_value(v.parse().unwrap_or_default(), rows))
            }
            (Some(v), _) => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                v.as_str(),
                rows,
            ))),
        }
    }

    /// Whether file `file` may hold rows satisfying every predicate on a partition column
    /// (predicates on other columns are left to the row-group statistics).
    pub(crate) fn may_match(&self, file: usize, predicates: &[ColumnPredicate]) -> bool {
        predicates.iter().all(|p| {
            let Some(k) = self.keys.iter().position(|(n, _)| *n == p.column) else {
                return true;
            };
            let Some(v) = &self.values[file][k] else {
                // A null never satisfies a comparison.
                return false;
            };
            match (&self.keys[k].1, &p.value) {
                (DataType::Int64, Literal::Int(lit)) => {
                    compare(v.parse::<i64>().unwrap_or_default().cmp(lit), p.op)
                }
                (DataType::Int64, Literal::Float(lit)) => v
                    .parse::<f64>()
                    .ok()
                    .and_then(|x| x.partial_cmp(lit))
                    .is_none_or(|o| compare(o, p.op)),
                (_, Literal::Str(lit)) => compare(v.as_str().cmp(lit.as_str()), p.op),
                _ => true,
            }
        })
    }
}

fn compare(o: std::cmp::Ordering, op: BinaryOp) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinaryOp::Eq => o == Equal,
        BinaryOp::NotEq => o != Equal,
        BinaryOp::Lt => o == Less,
        BinaryOp::LtEq => o != Greater,
        BinaryOp::Gt => o == Greater,
        BinaryOp::GtEq => o != Less,
        _ => true,
    }
}

/// `%XX` escapes (Hive and pyarrow escape `/`, `=`, `%` and spaces in values) decoded;
/// anything malformed is kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pred(column: &str, op: BinaryOp, value: Literal) -> ColumnPredicate {
        ColumnPredicate {
            column: column.into(),
            op,
            value,
        }
    }

    #[test]
    fn keys_values_and_types_come_from_the_paths() {
        let files = [
            "/d/year=2023/city=New%20York/a.parquet",
            "/d/year=2024/city=Paris/b.parquet",
            "/d/year=2024/city=__HIVE_DEFAULT_PARTITION__/c.parquet",
        ];
        let h = HivePartitions::from_paths("/d/", &files).unwrap();
        assert_eq!(
            h.keys,
            vec![
                ("year".to_string(), DataType::Int64),
                ("city".to_string(), DataType::Utf8)
            ]
        );
        let city = h.column(0, 1, 2);
        let city = city.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(city.value(1), "New York");
        assert_eq!(h.column(2, 1, 3).null_count(), 3);
        let eq_2024 = [pred("year", BinaryOp::Eq, Literal::Int(2024))];
        assert_eq!(
            (0..3).map(|f| h.may_match(f, &eq_2024)).collect::<Vec<_>>(),
            [false, true, true]
        );
        let paris = [pred("city", BinaryOp::Eq, Literal::Str("Paris".into()))];
        assert_eq!(
            (0..3).map(|f| h.may_match(f, &paris)).collect::<Vec<_>>(),
            [false, true, false]
        );
        let other = [pred("fare", BinaryOp::Gt, Literal::Float(1.0))];
        assert!((0..3).all(|f| h.may_match(f, &other)));
    }

    #[test]
    fn files_under_different_keys_are_an_error() {
        let err = HivePartitions::from_paths("/d", &["/d/a=1/x.parquet", "/d/b=1/y.parquet"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("differ from the dataset's"), "{err}");
        let none = HivePartitions::from_paths("/d", &["/d/x.parquet"]).unwrap();
        assert!(none.is_empty());
    }
}

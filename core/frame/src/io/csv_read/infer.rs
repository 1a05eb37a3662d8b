//! Schema inference: each column's type from a sample of its values (integer, float,
//! boolean, timestamp for `parse_dates` columns, else string), with `dtype` overrides.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, Result};
use crate::io::parse::{parse_bool, parse_f64, parse_i64};

use super::options::CsvOptions;
use super::tokenizer::{record_end, split_record, strip_cr};

/// Infers column types from the first `infer_rows` records.
pub(crate) fn infer_schema(
    path: &str,
    data: &[u8],
    names: &[String],
    o: &CsvOptions,
) -> Result<SchemaRef> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Null,
        Bool,
        Int,
        Float,
        Str,
    }
    let mut kinds = vec![Kind::Null; names.len()];
    let mut pos = 0;
    let mut rows = 0;
    while pos < data.len() && rows < o.infer_rows {
        let end = record_end(data, pos, o.quote);
        if end == data.len() && rows > 0 {
            break; // a record cut by the 4 MiB prefix
        }
        let line = strip_cr(&data[pos..end]);
        pos = end + 1;
        if line.is_empty() {
            continue;
        }
        rows += 1;
        for (k, field) in kinds
            .iter_mut()
            .zip(split_record(line, o.delimiter, o.quote))
        {
            if o.null_values.iter().any(|n| n.as_bytes() == &*field) || *k == Kind::Str {
                continue;
            }
            let this = if parse_i64(&field).is_some() {
                Kind::Int
            } else if parse_f64(&field).is_some() {
                Kind::Float
            } else if parse_bool(&field).is_some() {
                Kind::Bool
            } else {
                Kind::Str
            };
            *k = match (*k, this) {
                (Kind::Null, t) => t,
                (a, b) if a == b => a,
                (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Kind::Float,
                _ => Kind::Str,
            };
        }
    }
    for d in &o.parse_dates {
        if !names.contains(d) {
            return Err(Error::invalid(
                "read_csv",
                format!(
                    "parse_dates names '{d}', which {} does not have; columns: {}",
                    path,
                    names.join(", ")
                ),
            ));
        }
    }
    let mut fields = Vec::with_capacity(names.len());
    for (name, k) in names.iter().zip(kinds) {
        let mut t = match k {
            Kind::Bool => DataType::Boolean,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::Null | Kind::Str => DataType::Utf8,
        };
        if o.parse_dates.contains(name) {
            t = DataType::Timestamp(TimeUnit::Microsecond, None);
        }
        if let Some((_, o)) = o.dtypes.iter().find(|(c, _)| c == name) {
            t = o.clone();
        }
        if !matches!(
            t,
            DataType::Boolean
                | DataType::Int64
                | DataType::Float64
                | DataType::Utf8
                | DataType::Timestamp(TimeUnit::Microsecond, None)
        ) {
            return Err(Error::invalid(
                "read_csv",
                format!("column '{name}': cannot read {t} from CSV; use Int64, Float64, Boolean, Utf8 or Timestamp(Microsecond) and cast"),
            ));
        }
        fields.push(Field::new(name, t, true));
    }
    for (c, _) in &o.dtypes {
        if !names.contains(c) {
            return Err(Error::invalid(
                "read_csv",
                format!(
                    "a dtype override names '{c}', which {} does not have; columns: {}",
                    path,
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

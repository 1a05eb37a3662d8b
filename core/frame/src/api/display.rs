//! Printing frames and reading single values: the table `Computed` prints, and [`Value`],
//! one cell as a Rust value.

use std::fmt;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Null.
    Null,
    /// Boolean.
    Bool(bool),
    /// Signed integer (any width).
    Int(i64),
    /// Unsigned integer (any width).
    UInt(u64),
    /// Float (either width).
    Float(f64),
    /// String.
    Str(String),
    /// Timestamp as microseconds since the epoch, UTC-naive.
    TimestampMicros(i64),
    /// Date as days since the epoch.
    Date(i32),
    /// An exact decimal: `unscaled / 10^scale`.
    Decimal {
        /// The digits as an integer.
        unscaled: i128,
        /// Digits after the point.
        scale: i8,
    },
}

impl Value {
    /// The value as f64 (`None` for null and strings).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::UInt(u) => Some(*u as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::TimestampMicros(t) => Some(*t as f64),
            Value::Date(d) => Some(f64::from(*d)),
            Value::Decimal { unscaled, scale } => {
                Some(*unscaled as f64 / 10f64.powi(i32::from(*scale)))
            }
            Value::Null | Value::Str(_) => None,
        }
    }

    /// The value as i64 (`None` for null, strings and floats).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => i64::try_from(*u).ok(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::UInt(u) => write!(f, "{u}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::TimestampMicros(t) => write!(f, "{t}us"),
            Value::Date(d) => write!(f, "{d}d"),
            Value::Decimal { unscaled, scale } => {
                if *scale <= 0 {
                    let zeros = "0".repeat(usize::from(scale.unsigned_abs()));
                    return write!(f, "{unscaled}{}", if *unscaled == 0 { "" } else { &zeros });
                }
                let digits = unscaled.unsigned_abs().to_string();
                let scale = usize::from(scale.unsigned_abs());
                let padded = format!("{digits:0>width$}", width = scale + 1);
                let (whole, frac) = padded.split_at(padded.len() - scale);
                let sign = if *unscaled < 0 { "-" } else { "" };
                write!(f, "{sign}{whole}.{frac}")
            }
        }
    }
}

/// The value at `row` of `array`.
pub fn value_at(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Int8 => Value::Int(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => Value::Int(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => Value::Int(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => Value::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::UInt(array.as_primitive::<UInt8Type>().value(row).into()),
        DataType::UInt16 => Value::UInt(array.as_primitive::<UInt16Type>().value(row).into()),
        DataType::UInt32 => Value::UInt(array.as_primitive::<UInt32Type>().value(row).into()),
        DataType::UInt64 => Value::UInt(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row).into()),
        DataType::Float64 => Value::Float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => Value::Str(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Value::Str(array.as_string::<i64>().value(row).to_string()),
        DataType::Date32 => Value::Date(array.as_primitive::<Date32Type>().value(row)),
        DataType::Decimal128(_, scale) => Value::Decimal {
            unscaled: array.as_primitive::<Decimal128Type>().value(row),
            scale: *scale,
        },
        DataType::Timestamp(unit, _) => Value::TimestampMicros(match unit {
            TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row) * 1_000_000,
            TimeUnit::Millisecond => {
                array.as_primitive::<TimestampMillisecondType>().value(row) * 1_000
            }
            TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
            TimeUnit::Nanosecond => {
                array.as_primitive::<TimestampNanosecondType>().value(row) / 1_000
            }
        }),
        _ => {
            let opts = FormatOptions::default();
            match ArrayFormatter::try_new(array, &opts) {
                Ok(f) => Value::Str(f.value(row).to_string()),
                Err(_) => Value::Null,
            }
        }
    }
}

/// A plain-text table of the batches: a header, at most `max_rows` rows (the first and
/// last halves, with `...` between), and the row count.
pub fn format_batches(schema: &SchemaRef, batches: &[RecordBatch], max_rows: usize) -> String {
    let total: usize = batches.iter().map(|b| b.num_rows()).sum();
    let ncols = schema.fields().len();
    let mut cells: Vec<Vec<String>> = Vec::new();
    let want: Vec<usize> = if total <= max_rows {
        (0..total).collect()
    } else {
        (0..max_rows / 2)
            .chain(total - max_rows / 2..total)
            .collect()
    };
    let opts = FormatOptions::default().with_null("null");
    let mut start = 0;
    let mut next = want.iter().peekable();
    for b in batches {
        let formatters: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect();
        while let Some(&&r) = next.peek() {
            if r >= start + b.num_rows() {
                break;
            }
            let row = r - start;
            cells.push(
                formatters
                    .iter()
                    .map(|f| match f {
                        Ok(f) => f.value(row).to_string(),
                        Err(_) => "?".to_string(),
                    })
                    .collect(),
            );
            next.next();
        }
        start += b.num_rows();
    }
    let mut widths: Vec<usize> = schema.fields().iter().map(|f| f.name().len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cols: Vec<&str>, out: &mut String| {
        let parts: Vec<String> = cols
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(
        schema.fields().iter().map(|f| f.name().as_str()).collect(),
        &mut out,
    );
    for (i, row) in cells.iter().enumerate() {
        if total > max_rows && i == max_rows / 2 {
            line(vec!["..."; ncols], &mut out);
        }
        line(row.iter().map(|s| s.as_str()).collect(), &mut out);
    }
    out.push_str(&format!("[{total} rows x {ncols} columns]\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_print_every_digit() {
        let d = |unscaled, scale| Value::Decimal { unscaled, scale }.to_string();
        assert_eq!(d(12345, 2), "123.45");
        assert_eq!(d(-5, 2), "-0.05");
        assert_eq!(d(0, 3), "0.000");
        assert_eq!(d(7, 0), "7");
        assert_eq!(d(7, -2), "700");
        assert_eq!(
            Value::Decimal {
                unscaled: -250,
                scale: 2
            }
            .as_f64(),
            Some(-2.5)
        );
    }
    use arrow_array::{Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn table_has_header_rows_and_count() {
        let b = RecordBatch::try_from_iter(vec![
            ("k", Arc::new(Int64Array::from(vec![1, 22])) as _),
            (
                "v",
                Arc::new(Float64Array::from(vec![Some(0.5), None])) as _,
            ),
            ("s", Arc::new(StringArray::from(vec!["a", "bb"])) as _),
        ])
        .unwrap();
        let t = format_batches(&b.schema(), std::slice::from_ref(&b), 10);
        assert_eq!(
            t,
            " k     v   s\n 1   0.5   a\n22  null  bb\n[2 rows x 3 columns]\n"
        );
        let t = format_batches(&b.schema(), &[b.clone(), b.clone()], 2);
        assert!(
            t.contains("...") && t.contains("[4 rows x 3 columns]"),
            "{t}"
        );
        assert_eq!(value_at(b.column(1).as_ref(), 1), Value::Null);
        assert_eq!(value_at(b.column(0).as_ref(), 1), Value::Int(22));
    }
}

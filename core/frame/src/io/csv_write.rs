//! `to_csv`: one file, or one per partition, written atomically.
//!
//! Values are written so that `read_csv` gives them back: floats in their shortest
//! round-tripping form, timestamps as `YYYY-MM-DD HH:MM:SS[.ffffff]` (read them with
//! `parse_dates`), nulls as empty fields, strings quoted when they contain the delimiter,
//! a quote, a line break or surrounding spaces (quotes doubled).

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, TimeUnit};

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::io::parse::format_timestamp_micros;
use crate::io::write::FileFormat;

fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

fn write_field(out: &mut Vec<u8>, s: &str, delim: u8) {
    let needs = s
        .bytes()
        .any(|b| b == delim || b == b'"' || b == b'\n' || b == b'\r')
        || s.starts_with(' ')
        || s.ends_with(' ');
    if needs {
        out.push(b'"');
        for b in s.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// Appends the rows of `batch` as CSV to `out`.
pub(crate) fn format_rows(batch: &RecordBatch, delim: u8, out: &mut Vec<u8>) -> Result<()> {
    // Timestamps go through microseconds so that every unit prints the same way.
    let cast: Vec<std::sync::Arc<dyn Array>> = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Timestamp(u, _) if *u != TimeUnit::Microsecond => {
                arrow_cast::cast(c, &DataType::Timestamp(TimeUnit::Microsecond, None))
                    .map_err(|e| Error::arrow("to_csv", e))
            }
            _ => Ok(c.clone()),
        })
        .collect::<Result<_>>()?;
    let opts = FormatOptions::default().with_null("");
    let formatters = cast
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::invalid("to_csv", format!("cannot format a column: {e}")))?;
    for row in 0..batch.num_rows() {
        for (j, col) in cast.iter().enumerate() {
            if j > 0 {
                out.push(delim);
            }
            if col.is_null(row) {
                continue;
            }
            match col.data_type() {
                DataType::Utf8 => write_field(out, col.as_string::<i32>().value(row), delim),
                DataType::LargeUtf8 => write_field(out, col.as_string::<i64>().value(row), delim),
                DataType::Utf8View => write_field(out, col.as_string_view().value(row), delim),
                DataType::Timestamp(_, _) => out.extend_from_slice(
                    format_timestamp_micros(
                        col.as_primitive::<TimestampMicrosecondType>().value(row),
                    )
                    .as_bytes(),
                ),
                // Numbers, booleans and dates never hold a delimiter, a quote or a line break.
                t if t.is_numeric()
                    || matches!(t, DataType::Boolean | DataType::Date32 | DataType::Date64) =>
                {
                    let _ = write!(out, "{}", formatters[j].value(row));
                }
                // Anything else (dictionaries of strings, lists, binary) as its display
                // form, quoted where that form needs it.
                _ => write_field(out, &formatters[j].value(row).to_string(), delim),
            }
        }
        out.push(b'\n');
    }
    Ok(())
}

fn header(batch_schema: &arrow_schema::Schema, delim: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for (j, f) in batch_schema.fields().iter().enumerate() {
        if j > 0 {
            out.push(delim);
        }
        write_field(&mut out, f.name(), delim);
    }
    out.push(b'\n');
    out
}

/// CSV with a header line, as [`FileFormat`].
pub(crate) struct Csv {
    /// The field delimiter.
    pub delim: u8,
}

impl FileFormat for Csv {
    fn op(&self) -> &'static str {
        "to_csv"
    }

    fn write_file(
        &self,
        w: &mut BufWriter<File>,
        named: &Path,
        schema: &SchemaRef,
        batches: &mut dyn Iterator<Item = Result<RecordBatch>>,
    ) -> Result<()> {
        w.write_all(&header(schema, self.delim))
            .map_err(io(named))?;
        let mut buf = Vec::with_capacity(1 << 20);
        for batch in batches {
            buf.clear();
            format_rows(&batch?, self.delim, &mut buf)?;
            w.write_all(&buf).map_err(io(named))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Every string layout is quoted alike: Utf8, LargeUtf8, Utf8View and a dictionary of
    /// strings, and a list's display form (which holds commas).
    #[test]
    fn every_string_layout_is_quoted() {
        let tricky = ["a,b", "say \"hi\"", "two\nlines", " pad", "plain"];
        let utf8: arrow_array::ArrayRef = Arc::new(arrow_array::StringArray::from(tricky.to_vec()));
        let want = "\"a,b\"\n\"say \"\"hi\"\"\"\n\"two\nlines\"\n\" pad\"\nplain\n";
        for to in [
            DataType::Utf8,
            DataType::LargeUtf8,
            DataType::Utf8View,
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        ] {
            let col = arrow_cast::cast(&utf8, &to).unwrap();
            let batch = RecordBatch::try_from_iter([("s", col)]).unwrap();
            let mut out = Vec::new();
            format_rows(&batch, b',', &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{to}");
        }
    }

    #[test]
    fn quoting() {
        let mut out = Vec::new();
        for s in ["plain", "a,b", "say \"hi\"", "two\nlines", " pad"] {
            write_field(&mut out, s, b',');
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\" pad\"|"
        );
    }
}

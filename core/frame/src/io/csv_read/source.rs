//! [`CsvSource`]: the files of a scan, their byte ranges and schema; reading one range
//! into an Arrow batch with projection pushdown (unused columns are skipped byte-wise,
//! never converted) and errors that name file, line and column.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, SchemaRef};

use crate::error::{Error, Result};
use crate::io::parse::{parse_bool, parse_f64, parse_i64, parse_timestamp_micros};
use crate::plan::FileSource;

use super::infer::infer_schema;
use super::options::CsvOptions;
use super::tokenizer::{next_field, record_end, split_record, strip_cr, zero_bytes};
use tessera_io::file::StoredFile;
use tessera_io::glob::expand;

#[derive(Debug)]
pub(crate) struct CsvFile {
    /// The file (local or an object) as planned; checked before each range is read.
    pub(super) file: StoredFile,
    /// First byte after the header line.
    pub(super) data_start: u64,
    pub(super) size: u64,
}

/// A CSV scan: files, their byte ranges and the schema.
#[derive(Debug)]
pub struct CsvSource {
    pub(super) files: Vec<CsvFile>,
    pub(super) ranges: Vec<(usize, u64, u64)>,
    schema: SchemaRef,
    options: CsvOptions,
    display: String,
}

impl CsvSource {
    /// Opens the files, reads the header and infers the schema.
    pub fn open(pattern: &str, options: CsvOptions) -> Result<CsvSource> {
        let found = expand(pattern)?;
        let mut files = Vec::new();
        let mut schema: Option<SchemaRef> = None;
        for file in found {
            let size = file.size();
            let head = file.read_prefix(4 << 20)?;
            let path = file.display().to_string();
            // A UTF-8 byte-order mark is not part of the first column's name.
            let bom = if head.starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            if head.len() == bom && (options.has_header || options.names.is_none()) {
                return Err(Error::invalid(
                    "read_csv",
                    format!(
                        "{}: the file is empty; a CSV needs a header line (or \
                         `has_header(false)` with column names)",
                        path
                    ),
                ));
            }
            let first_end = record_end(&head, bom, options.quote);
            if first_end == head.len() && (head.len() as u64) < size {
                return Err(Error::invalid(
                    "read_csv",
                    format!("{path}: the first line is longer than 4 MiB"),
                ));
            }
            let header_end = if options.has_header {
                (first_end + 1).min(head.len())
            } else {
                bom
            };
            let names: Vec<String> = if options.has_header {
                split_record(
                    strip_cr(&head[bom..first_end]),
                    options.delimiter,
                    options.quote,
                )
                .into_iter()
                .map(|f| String::from_utf8_lossy(&f).trim().to_string())
                .collect()
            } else {
                let n = split_record(
                    strip_cr(&head[bom..first_end]),
                    options.delimiter,
                    options.quote,
                )
                .len();
                match &options.names {
                    Some(names) if names.len() == n => names.clone(),
                    Some(names) => {
                        return Err(Error::invalid(
                            "read_csv",
                            format!(
                                "{}: {} names given but the first line has {n} fields",
                                path,
                                names.len()
                            ),
                        ))
                    }
                    None => (1..=n).map(|i| format!("column_{i}")).collect(),
                }
            };
            match &schema {
                Some(s) => {
                    let known: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
                    if known != names.iter().map(|s| s.as_str()).collect::<Vec<_>>() {
                        return Err(Error::invalid(
                            "read_csv",
                            format!(
                                "{}: columns [{}] differ from the first file's [{}]",
                                path,
                                names.join(", "),
                                known.join(", ")
                            ),
                        ));
                    }
                }
                None => schema = Some(infer_schema(&path, &head[header_end..], &names, &options)?),
            }
            files.push(CsvFile {
                file,
                data_start: header_end as u64,
                size,
            });
        }
        let schema = schema.ok_or_else(|| Error::invalid("read_csv", "no files"))?;
        let mut ranges = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let data = f.size.saturating_sub(f.data_start);
            if data == 0 {
                continue;
            }
            // Whole waves of tasks: a count that is a multiple of the workers leaves no
            // worker idle at the end of a read. Over the ranks of a job, a multiple of the
            // ranks: every rank must plan the same partitions, whatever cores it sees.
            let workers = match tessera_runtime::cluster::current() {
                Ok(Some(cluster)) => cluster.size() as u64,
                _ => std::thread::available_parallelism().map_or(1, |n| n.get()) as u64,
            };
            let n = if options.newlines_in_values {
                1
            } else {
                match data.div_ceil(options.partition_bytes) {
                    0 | 1 => 1,
                    n => n.div_ceil(workers) * workers,
                }
            };
            for j in 0..n {
                let s = f.data_start + data * j / n;
                let e = f.data_start + data * (j + 1) / n;
                ranges.push((i, s, e));
            }
        }
        let display = if files.len() == 1 {
            files[0].file.display().to_string()
        } else {
            format!("{} ({} files)", pattern, files.len())
        };
        Ok(CsvSource {
            files,
            ranges,
            schema,
            options,
            display,
        })
    }

    /// The line number (1-based) of byte `offset` of file `file`, for error messages.
    fn line_of(&self, file: usize, offset: u64) -> usize {
        self.files[file]
            .file
            .read_prefix(offset)
            .map_or(0, |b| memchr::memchr_iter(b'\n', &b).count() + 1)
    }

    fn parse_error(&self, file: usize, offset: u64, column: &str, detail: String) -> Error {
        Error::invalid(
            "read_csv",
            format!(
                "{}:{}: column '{column}': {detail}",
                self.files[file].file.display(),
                self.line_of(file, offset)
            ),
        )
    }

    /// Appends one field's value to its column's builder.
    fn convert(
        &self,
        col: &mut Col,
        f: &[u8],
        c: usize,
        file: usize,
        at: u64,
        nulls: &[&[u8]],
    ) -> Result<()> {
        let is_null = |f: &[u8]| f.is_empty() || nulls.contains(&f);
        let bad = |what: &str| {
            self.parse_error(
                file,
                at,
                self.schema.field(c).name(),
                format!(
                    "cannot parse '{}' as {what} (the type was inferred from the first {} rows or given; override it with a dtype)",
                    String::from_utf8_lossy(f),
                    self.options.infer_rows
                ),
            )
        };
        match col {
            Col::Skip => {}
            Col::Int(b) => match parse_i64(f) {
                Some(v) => b.append_value(v),
                None if is_null(f) => b.append_null(),
                None => return Err(bad("Int64")),
            },
            Col::Float(b) => match parse_f64(f) {
                Some(v) => b.append_value(v),
                None if is_null(f) => b.append_null(),
                None => return Err(bad("Float64")),
            },
            Col::Bool(b) => match parse_bool(f) {
                Some(v) => b.append_value(v),
                None if is_null(f) => b.append_null(),
                None => return Err(bad("Boolean")),
            },
            Col::Ts(b) => match parse_timestamp_micros(f) {
                Some(v) => b.append_value(v),
                None if is_null(f) => b.append_null(),
                None => return Err(bad("a timestamp (YYYY-MM-DD[ HH:MM:SS[.ffffff]])")),
            },
            Col::Str(b) => {
                if nulls.contains(&f) {
                    b.append_null()
                } else {
                    match std::str::from_utf8(f) {
                        Ok(s) => b.append_value(s),
                        Err(_) => return Err(bad("UTF-8 text")),
                    }
                }
            }
        }
        Ok(())
    }

    /// The records of a quote-free range. Separators (delimiters and line ends) come from a
    /// word-at-a-time scan: eight bytes compared with two patterns by bit arithmetic,
    /// exact (no false positives); fields after the last projected one are only counted.
    #[allow(clippy::too_many_arguments)]
    fn scan_unquoted(
        &self,
        buf: &[u8],
        first: usize,
        base: u64,
        file: usize,
        projection: &[usize],
        stop_after: usize,
        cols: &mut [Col],
        nulls: &[&[u8]],
    ) -> Result<usize> {
        let ncols = self.schema.fields().len();
        let delim = self.options.delimiter;
        let splat = |b: u8| u64::from_le_bytes([b; 8]);
        let (dpat, npat) = (splat(delim), splat(b'\n'));
        let mut bounds = vec![(0usize, 0usize); stop_after];
        let (mut row_start, mut field_start, mut col, mut rows) = (first, first, 0usize, 0usize);
        let mut finish_row = |end: usize,
                              col: usize,
                              bounds: &mut [(usize, usize)],
                              row_start: usize|
         -> Result<bool> {
            if end == row_start || (end == row_start + 1 && buf[row_start] == b'\r') {
                return Ok(false); // an empty line
            }
            let at = base + row_start as u64;
            if col != ncols {
                return Err(self.parse_error(
                    file,
                    at,
                    self.schema.field(col.min(ncols) - 1).name(),
                    format!("{col} fields, but the header has {ncols}"),
                ));
            }
            for &c in projection {
                let (s, mut e) = bounds[c];
                if c == ncols - 1 && e > s && buf[e - 1] == b'\r' {
                    e -= 1;
                }
                self.convert(&mut cols[c], &buf[s..e], c, file, at, nulls)?;
            }
            Ok(true)
        };
        let n = buf.len();
        let mut i = first;
        // Word at a time (little-endian: the lowest set bit is the first byte). Once a row's
        // projected fields are bounded, its remaining delimiters are counted with popcount
        // up to the line end instead of visited one by one.
        if cfg!(target_endian = "little") {
            while i + 8 <= n {
                let w = u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
                let mut dm = zero_bytes(w ^ dpat);
                let mut nm = zero_bytes(w ^ npat);
                loop {
                    if col >= stop_after {
                        if nm == 0 {
                            col += dm.count_ones() as usize;
                            break;
                        }
                        let nbit = nm.trailing_zeros();
                        let upto = ((1u64 << nbit) << 1).wrapping_sub(1);
                        col += (dm & upto).count_ones() as usize + 1;
                        let p = i + (nbit / 8) as usize;
                        if finish_row(p, col, &mut bounds, row_start)? {
                            rows += 1;
                        }
                        row_start = p + 1;
                        field_start = p + 1;
                        col = 0;
                        dm &= !upto;
                        nm &= nm - 1;
                        continue;
                    }
                    let m = dm | nm;
                    if m == 0 {
                        break;
                    }
                    let bit = m.trailing_zeros();
                    let p = i + (bit / 8) as usize;
                    bounds[col] = (field_start, p);
                    col += 1;
                    field_start = p + 1;
                    if nm & (1u64 << bit) != 0 {
                        if finish_row(p, col, &mut bounds, row_start)? {
                            rows += 1;
                        }
                        row_start = p + 1;
                        col = 0;
                        nm &= nm - 1;
                    } else {
                        dm &= dm - 1;
                    }
                }
                i += 8;
            }
        }
        for (p, &b) in buf.iter().enumerate().skip(i) {
            if b != delim && b != b'\n' {
                continue;
            }
            if col < stop_after {
                bounds[col] = (field_start, p);
            }
            col += 1;
            field_start = p + 1;
            if b == b'\n' {
                if finish_row(p, col, &mut bounds, row_start)? {
                    rows += 1;
                }
                row_start = p + 1;
                col = 0;
            }
        }
        if row_start < n {
            if col < stop_after {
                bounds[col] = (field_start, n);
            }
            if finish_row(n, col + 1, &mut bounds, row_start)? {
                rows += 1;
            }
        }
        Ok(rows)
    }
}

pub(crate) enum Col {
    Skip,
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Ts(TimestampMicrosecondBuilder),
}

impl FileSource for CsvSource {
    fn format(&self) -> &'static str {
        "csv"
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn partitions(&self) -> usize {
        self.ranges.len()
    }

    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        // Arrow columns take at most about twice the text they were parsed from (an
        // 8-byte number from a 4-character field).
        let (_, s, e) = *self.ranges.get(partition)?;
        Some((e - s).saturating_mul(2))
    }

    fn describe(&self) -> String {
        self.display.clone()
    }

    fn read(&self, partition: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        let (buf, first, base) = self.range_bytes(partition)?;
        let file = self.ranges[partition].0;
        let o = &self.options;
        let ncols = self.schema.fields().len();
        let all: Vec<usize> = (0..ncols).collect();
        let projection = projection.unwrap_or(&all);
        // Rows estimate for builder capacity.
        let cap = buf.len() / 32 + 16;
        let mut cols: Vec<Col> = (0..ncols).map(|_| Col::Skip).collect();
        for &c in projection {
            cols[c] = match self.schema.field(c).data_type() {
                DataType::Int64 => Col::Int(Int64Builder::with_capacity(cap)),
                DataType::Float64 => Col::Float(Float64Builder::with_capacity(cap)),
                DataType::Boolean => Col::Bool(BooleanBuilder::with_capacity(cap)),
                DataType::Timestamp(_, _) => {
                    Col::Ts(TimestampMicrosecondBuilder::with_capacity(cap))
                }
                _ => Col::Str(StringBuilder::with_capacity(cap, buf.len() / 2)),
            };
        }
        // Fields after the last projected one are only counted, not split.
        let stop_after = projection.iter().max().map_or(0, |m| m + 1);
        let nulls: Vec<&[u8]> = o.null_values.iter().map(|s| s.as_bytes()).collect();
        let (delim, quote) = (o.delimiter, o.quote);
        let mut delims: Vec<usize> = Vec::with_capacity(ncols);
        let mut rows = 0usize;
        let mut pos = first;
        // A quote-free range (the common case) takes the word-at-a-time scan; a range with
        // quotes goes line by line, and only lines holding a quote take the careful path.
        if memchr::memchr(quote, &buf[first..]).is_none() {
            rows = self.scan_unquoted(
                &buf, first, base, file, projection, stop_after, &mut cols, &nulls,
            )?;
            pos = buf.len();
        }
        while pos < buf.len() {
            let record_start = pos;
            let nl = memchr::memchr(b'\n', &buf[pos..]).map_or(buf.len(), |e| pos + e);
            let has_quote_line = memchr::memchr(quote, &buf[pos..nl]).is_some();
            let end = if has_quote_line {
                record_end(&buf, pos, quote)
            } else {
                nl
            };
            let line = strip_cr(&buf[pos..end]);
            pos = end + 1;
            if line.is_empty() {
                continue;
            }
            let at = base + record_start as u64;
            let mut col = 0usize;
            if has_quote_line {
                let mut fpos = 0usize;
                loop {
                    let (field, next) = next_field(line, fpos, delim, quote);
                    if col >= ncols {
                        return Err(self.parse_error(
                            file,
                            at,
                            self.schema.field(ncols - 1).name(),
                            format!("more than the {ncols} fields of the header"),
                        ));
                    }
                    self.convert(&mut cols[col], &field, col, file, at, &nulls)?;
                    col += 1;
                    match next {
                        Some(n) => fpos = n,
                        None => break,
                    }
                }
            } else {
                // Delimiter positions up to the last projected field from one vectorised
                // scan of the line; the rest are only counted, to check the row width.
                delims.clear();
                let mut it = memchr::memchr_iter(delim, line);
                // Field `c` ends at delimiter `c`, so the last projected field needs
                // `stop_after` of them.
                if stop_after > 0 {
                    for d in it.by_ref() {
                        delims.push(d);
                        if delims.len() >= stop_after {
                            break;
                        }
                    }
                }
                let fields = delims.len() + 1 + it.count();
                if fields != ncols {
                    return Err(self.parse_error(
                        file,
                        at,
                        self.schema.field(fields.min(ncols) - 1).name(),
                        format!("{fields} fields, but the header has {ncols}"),
                    ));
                }
                for &c in projection {
                    let start = if c == 0 { 0 } else { delims[c - 1] + 1 };
                    let end = delims.get(c).copied().unwrap_or(line.len());
                    self.convert(&mut cols[c], &line[start..end], c, file, at, &nulls)?;
                }
                col = fields;
            }
            if col != ncols {
                return Err(self.parse_error(
                    file,
                    base + record_start as u64,
                    self.schema.field(col.min(ncols) - 1).name(),
                    format!("{col} fields, but the header has {ncols}"),
                ));
            }
            rows += 1;
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(projection.len());
        for &c in projection {
            let a: ArrayRef = match &mut cols[c] {
                Col::Int(b) => Arc::new(b.finish()),
                Col::Float(b) => Arc::new(b.finish()),
                Col::Bool(b) => Arc::new(b.finish()),
                Col::Ts(b) => Arc::new(b.finish()),
                Col::Str(b) => Arc::new(b.finish()),
                Col::Skip => return Err(Error::Internal("projected column has no builder".into())),
            };
            arrays.push(a);
        }
        let schema = Arc::new(
            self.schema
                .project(projection)
                .map_err(|e| Error::arrow("read_csv", e))?,
        );
        RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| Error::arrow("read_csv", e))
    }
}

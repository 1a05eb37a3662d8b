//! `read_csv`: one file or a glob, split into byte ranges aligned to line ends so one big
//! file is parsed in parallel (the problem cudf had in the seeds), with projection
//! pushdown (unused columns are skipped byte-wise, never converted) and errors that name
//! file, line and column.
//!
//! A row belongs to the byte range its first byte falls in: a range starts after the
//! first line end at or after its start (unless it is the start of the data) and runs
//! until the first line end at or after its end. Quoted fields may hold delimiters and
//! doubled quotes; a newline inside a quoted field would confuse the splitting, so a file
//! with such values must be read with [`CsvOptions::newlines_in_values`], which reads it
//! as one range (DataFusion makes the same trade).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::dataframe::DataFrame;
use crate::error::{Error, Result};
use crate::io::parse::{parse_bool, parse_f64, parse_i64, parse_timestamp_micros};
use crate::plan::{FileSource, Node};

/// Options of [`read_csv`].
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// The first line holds column names (default true).
    pub has_header: bool,
    /// Column names when there is no header (default `column_1`, `column_2`, ...).
    pub names: Option<Vec<String>>,
    /// Field delimiter (default `,`).
    pub delimiter: u8,
    /// Quote character (default `"`; a quote inside a quoted field is doubled).
    pub quote: u8,
    /// Field texts read as null (default: empty, `NA`, `N/A`, `NaN`, `nan`, `null`, `NULL`).
    pub null_values: Vec<String>,
    /// Columns parsed as timestamps (microseconds, no time zone).
    pub parse_dates: Vec<String>,
    /// Type overrides, winning over inference: Int64, Float64, Boolean, Utf8 or
    /// Timestamp(Microsecond).
    pub dtypes: Vec<(String, DataType)>,
    /// Rows read to infer types (default 1000).
    pub infer_rows: usize,
    /// Target bytes per partition (default 16 MiB).
    pub partition_bytes: u64,
    /// Quoted values may contain newlines: read each file as one partition.
    pub newlines_in_values: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            has_header: true,
            names: None,
            delimiter: b',',
            quote: b'"',
            null_values: ["", "NA", "N/A", "NaN", "nan", "null", "NULL"]
                .map(String::from)
                .to_vec(),
            parse_dates: Vec::new(),
            dtypes: Vec::new(),
            infer_rows: 1000,
            partition_bytes: 16 << 20,
            newlines_in_values: false,
        }
    }
}

impl CsvOptions {
    /// Sets `parse_dates`.
    pub fn parse_dates(mut self, cols: &[&str]) -> Self {
        self.parse_dates = cols.iter().map(|c| c.to_string()).collect();
        self
    }
    /// Adds a type override.
    pub fn dtype(mut self, col: &str, t: DataType) -> Self {
        self.dtypes.push((col.to_string(), t));
        self
    }
    /// Sets the delimiter.
    pub fn delimiter(mut self, d: u8) -> Self {
        self.delimiter = d;
        self
    }
    /// Sets `has_header`.
    pub fn has_header(mut self, h: bool) -> Self {
        self.has_header = h;
        self
    }
    /// Sets the target partition size.
    pub fn partition_bytes(mut self, b: u64) -> Self {
        self.partition_bytes = b.max(1);
        self
    }
}

#[derive(Debug)]
struct CsvFile {
    path: PathBuf,
    /// First byte after the header line.
    data_start: u64,
    size: u64,
}

/// A CSV scan: files, their byte ranges and the schema.
#[derive(Debug)]
pub struct CsvSource {
    files: Vec<CsvFile>,
    ranges: Vec<(usize, u64, u64)>,
    schema: SchemaRef,
    options: CsvOptions,
    display: String,
}

/// Expands a `*`/`?` pattern in the file name (not in directories); a path without
/// wildcards must exist. Sorted by name.
pub(crate) fn expand_glob(pattern: &str) -> Result<Vec<PathBuf>> {
    let path = Path::new(pattern);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        if !path.exists() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        let fname = entry.file_name().to_string_lossy().into_owned();
        if wildcard_match(name.as_bytes(), fname.as_bytes()) && entry.path().is_file() {
            out.push(entry.path());
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::invalid(
            "read",
            format!("no file matches '{pattern}'"),
        ));
    }
    Ok(out)
}

fn wildcard_match(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            wildcard_match(&p[1..], s) || (!s.is_empty() && wildcard_match(p, &s[1..]))
        }
        (Some(b'?'), Some(_)) => wildcard_match(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard_match(&p[1..], &s[1..]),
        _ => false,
    }
}

/// Splits one record (no line end) into raw fields, honouring quotes.
fn split_record<'a>(line: &'a [u8], delim: u8, quote: u8) -> Vec<std::borrow::Cow<'a, [u8]>> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let (field, next) = next_field(line, pos, delim, quote);
        out.push(field);
        match next {
            Some(n) => pos = n,
            None => break,
        }
    }
    out
}

/// The field starting at `pos` and the start of the next one (`None` at the end of the
/// record). `line` holds exactly one record.
fn next_field(
    line: &[u8],
    pos: usize,
    delim: u8,
    quote: u8,
) -> (std::borrow::Cow<'_, [u8]>, Option<usize>) {
    if line.get(pos) == Some(&quote) {
        let mut buf = Vec::new();
        let mut i = pos + 1;
        while i < line.len() {
            if line[i] == quote {
                if line.get(i + 1) == Some(&quote) {
                    buf.push(quote);
                    i += 2;
                    continue;
                }
                i += 1;
                break;
            }
            buf.push(line[i]);
            i += 1;
        }
        // Anything between the closing quote and the delimiter is kept, as csv readers do.
        while i < line.len() && line[i] != delim {
            buf.push(line[i]);
            i += 1;
        }
        let next = (i < line.len()).then_some(i + 1);
        (std::borrow::Cow::Owned(buf), next)
    } else {
        let end = memchr::memchr(delim, &line[pos..]).map_or(line.len(), |e| pos + e);
        let next = (end < line.len()).then_some(end + 1);
        (std::borrow::Cow::Borrowed(&line[pos..end]), next)
    }
}

/// Where the record that starts at `pos` ends (index of its `\n`, or the buffer end),
/// skipping newlines inside quotes.
fn record_end(buf: &[u8], pos: usize, quote: u8) -> usize {
    let mut i = pos;
    loop {
        let nl = memchr::memchr(b'\n', &buf[i..]).map_or(buf.len(), |e| i + e);
        // Only a line with a quote can hide a newline; count quotes up to the newline.
        let q = memchr::memchr_iter(quote, &buf[pos..nl]).count();
        if q % 2 == 0 || nl == buf.len() {
            return nl;
        }
        i = nl + 1;
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads up to `max` bytes from the start of a file.
fn read_prefix(path: &Path, max: u64) -> Result<Vec<u8>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = Vec::new();
    f.take(max)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

impl CsvSource {
    /// Opens the files, reads the header and infers the schema.
    pub fn open(pattern: &str, options: CsvOptions) -> Result<CsvSource> {
        let paths = expand_glob(pattern)?;
        let mut files = Vec::new();
        let mut schema: Option<SchemaRef> = None;
        for path in paths {
            let size = std::fs::metadata(&path)
                .map_err(|e| Error::io(&path, e))?
                .len();
            let head = read_prefix(&path, 4 << 20)?;
            let first_end = record_end(&head, 0, options.quote);
            if first_end == head.len() && (head.len() as u64) < size {
                return Err(Error::invalid(
                    "read_csv",
                    format!("{}: the first line is longer than 4 MiB", path.display()),
                ));
            }
            let header_end = if options.has_header {
                (first_end + 1).min(head.len())
            } else {
                0
            };
            let names: Vec<String> = if options.has_header {
                split_record(
                    strip_cr(&head[..first_end]),
                    options.delimiter,
                    options.quote,
                )
                .into_iter()
                .map(|f| String::from_utf8_lossy(&f).trim().to_string())
                .collect()
            } else {
                let n = split_record(
                    strip_cr(&head[..first_end]),
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
                                path.display(),
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
                                path.display(),
                                names.join(", "),
                                known.join(", ")
                            ),
                        ));
                    }
                }
                None => schema = Some(infer_schema(&path, &head[header_end..], &names, &options)?),
            }
            files.push(CsvFile {
                path,
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
            // worker idle at the end of a read.
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
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
            files[0].path.display().to_string()
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
        let path = &self.files[file].path;
        read_prefix(path, offset).map_or(0, |b| memchr::memchr_iter(b'\n', &b).count() + 1)
    }

    fn parse_error(&self, file: usize, offset: u64, column: &str, detail: String) -> Error {
        Error::invalid(
            "read_csv",
            format!(
                "{}:{}: column '{column}': {detail}",
                self.files[file].path.display(),
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

    /// The bytes read for range `r`, the index in them of its first record, and the file
    /// offset of byte 0 (the records run from that index to the end).
    fn range_bytes(&self, r: usize) -> Result<(Vec<u8>, usize, u64)> {
        let (fi, s, e) = self.ranges[r];
        let file = &self.files[fi];
        let mut f = File::open(&file.path).map_err(|err| Error::io(&file.path, err))?;
        // Read one byte before the start to see whether a record begins at `s`.
        let from = if s > file.data_start { s - 1 } else { s };
        f.seek(SeekFrom::Start(from))
            .map_err(|err| Error::io(&file.path, err))?;
        let mut buf = Vec::with_capacity((e - from) as usize + 4096);
        (&mut f)
            .take(e - from)
            .read_to_end(&mut buf)
            .map_err(|err| Error::io(&file.path, err))?;
        // Extend to the end of the last record that starts before `e`.
        if buf.last() != Some(&b'\n') {
            let mut chunk = [0u8; 64 << 10];
            loop {
                let n = f
                    .read(&mut chunk)
                    .map_err(|err| Error::io(&file.path, err))?;
                if n == 0 {
                    break;
                }
                if let Some(p) = memchr::memchr(b'\n', &chunk[..n]) {
                    buf.extend_from_slice(&chunk[..=p]);
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
        let start = if from < s {
            // Not at the data start: skip the partial record (it belongs to the range before).
            match memchr::memchr(b'\n', &buf) {
                Some(p) => p + 1,
                None => buf.len(),
            }
        } else {
            0
        };
        // No record starts in [s, e): the range is empty.
        if start >= (e - from) as usize {
            return Ok((Vec::new(), 0, e));
        }
        Ok((buf, start, from))
    }
}

/// Infers column types from the first `infer_rows` records.
fn infer_schema(path: &Path, data: &[u8], names: &[String], o: &CsvOptions) -> Result<SchemaRef> {
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
                    path.display(),
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
                    path.display(),
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// 0x80 in every byte of `w` that is zero and 0 elsewhere — exactly, with no false
/// positives from borrows (the low seven bits are added separately from the high one).
fn zero_bytes(w: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((w & LOW7).wrapping_add(LOW7)) | w | LOW7)
}

enum Col {
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

/// Reads CSV files (one path or a `*` pattern in the file name) as a lazy frame on the
/// configured dataframe backend.
pub fn read_csv(pattern: &str, options: CsvOptions) -> Result<DataFrame> {
    let source = CsvSource::open(pattern, options)?;
    DataFrame::from_node(
        Node::Scan {
            source: Arc::new(source),
            projection: None,
            selected: None,
            pushed: Vec::new(),
        },
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields() {
        let f = split_record(br#"a,"b,c","d""e",,"x""#, b',', b'"');
        let f: Vec<&[u8]> = f.iter().map(|c| &**c).collect();
        assert_eq!(f, [&b"a"[..], b"b,c", b"d\"e", b"", b"x"]);
        let buf = b"1,\"two\nlines\",3\n4,5,6\n";
        assert_eq!(record_end(buf, 0, b'"'), 15);
        assert_eq!(record_end(buf, 16, b'"'), 21);
    }

    #[test]
    fn zero_bytes_is_exact() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Plant zero bytes and 0x80/0x01 neighbours, where borrow tricks go wrong.
            let w = x & 0xff00_ff80_0100_ffffu64.rotate_left((x % 64) as u32);
            let want = (0..8).fold(0u64, |m, b| {
                if (w >> (8 * b)) & 0xff == 0 {
                    m | 0x80 << (8 * b)
                } else {
                    m
                }
            });
            assert_eq!(zero_bytes(w), want, "{w:#018x}");
        }
    }

    #[test]
    fn globs() {
        assert!(wildcard_match(b"*.csv", b"a.csv"));
        assert!(wildcard_match(b"part-?.csv", b"part-1.csv"));
        assert!(!wildcard_match(b"part-?.csv", b"part-10.csv"));
        assert!(wildcard_match(b"*", b""));
        assert!(!wildcard_match(b"*.csv", b"a.csv.tmp"));
    }
}

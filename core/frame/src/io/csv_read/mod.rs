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
//!
//! One file per step: [`options`], [`source`] (the scan and the conversion of a range),
//! `ranges` (byte ranges aligned to line ends), `infer` (schema inference), `tokenizer`
//! (records and fields); `crate::io::glob` expands file patterns.

mod infer;
pub mod options;
mod ranges;
pub mod source;
mod tokenizer;

pub use options::CsvOptions;
pub use source::CsvSource;

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

use std::sync::Arc;

use crate::api::dataframe::DataFrame;
use crate::error::Result;
use crate::plan::Node;

pub use options::CsvOptions;
pub use source::CsvSource;

/// Reads CSV files (one path or a `*` pattern in the file name) as a lazy frame on the
/// configured dataframe backend.
///
/// ```
/// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
/// use tessera_frame::{col, read_csv, AggFunc, CsvOptions, Value};
/// # fn main() -> tessera_core::Result<()> {
/// let dir = std::env::temp_dir().join(format!("tessera-doc-csv-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("trips.csv");
/// std::fs::write(&path, "fare,tip\n10,2\n20,0\n8,1.5\n").unwrap();
/// let trips = read_csv(path.to_str().unwrap(), CsvOptions::default())?; // nothing read yet
/// let tipped = trips.filter(col("tip").gt(0))?;
/// assert_eq!(tipped.reduce("fare", AggFunc::Sum)?, Value::Int(18)); // fare inferred as int64
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Io`](crate::error::Error::Io) for a missing or unreadable file (a pattern
/// that matches nothing names the pattern), and `Invalid` errors naming file, line and
/// column for malformed rows, found when the frame is computed.
pub fn read_csv(pattern: &str, options: CsvOptions) -> Result<DataFrame> {
    let source = CsvSource::open(pattern, options)?;
    DataFrame::from_node(
        Node::Scan {
            source: Arc::new(source),
            projection: None,
            selected: None,
            pushed: Vec::new(),
            stored: Vec::new(),
        },
        None,
    )
}

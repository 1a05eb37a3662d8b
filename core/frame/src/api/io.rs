//! The frame's side of its files: `read_csv` and `read_parquet` make a lazy frame over a
//! reader of `crate::io`, `to_csv` and `to_parquet` hand the planned frame and a format to
//! the executor (`crate::exec::run::write`), which streams it into the files. The formats
//! themselves know nothing of frames.

use std::path::PathBuf;
use std::sync::Arc;

use crate::api::dataframe::DataFrame;
use crate::error::Result;
use crate::exec::run;
use crate::io::csv_read::{CsvOptions, CsvSource};
use crate::io::csv_write::Csv;
#[cfg(feature = "parquet")]
use crate::io::parquet::{write::Parquet, ParquetSource};
use crate::io::write::FileFormat;
use crate::plan::{FileSource, Node};

/// A lazy frame scanning `source` on the configured dataframe backend.
fn scan_of(source: Arc<dyn FileSource>) -> Result<DataFrame> {
    DataFrame::from_node(
        Node::Scan {
            source,
            projection: None,
            selected: None,
            pushed: Vec::new(),
            stored: Vec::new(),
        },
        None,
    )
}

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
    scan_of(Arc::new(CsvSource::open(pattern, options)?))
}

#[cfg(feature = "parquet")]
/// Reads Parquet files (one path or a `*` pattern in the file name, or a directory of a
/// hive-partitioned dataset: `sales/` with `year=2024/month=1/part-0.parquet` below it,
/// the keys becoming columns and filters on them skipping whole files) as a lazy frame on
/// the configured dataframe backend; row groups are the partitions. Paths may be object
/// URLs with the `object-store` feature.
pub fn read_parquet(pattern: &str) -> Result<DataFrame> {
    scan_of(Arc::new(ParquetSource::open(pattern)?))
}

impl DataFrame {
    /// Writes the planned frame to `path` in `format` (see `crate::exec::run::write`).
    fn write(&self, path: &str, format: &dyn FileFormat) -> Result<Vec<PathBuf>> {
        run::write(
            &self.planned()?,
            self.backend_ref(),
            self.schema(),
            path,
            format,
        )
    }
}

impl DataFrame {
    /// Writes CSV with a header: to `path`, or one file per partition when the file name
    /// holds a `*` (replaced by the partition number). Each file is written atomically,
    /// and a set of parts commits as a whole. Under `scheduler = "mpi"` each rank writes
    /// its own partitions' parts and rank 0 commits once (one file: rank 0 writes it).
    /// Returns the files written.
    ///
    /// # Errors
    /// The plan's errors; the filesystem's (naming the path); under `scheduler = "mpi"`,
    /// a destination some rank cannot see.
    pub fn to_csv(&self, path: &str) -> Result<Vec<PathBuf>> {
        self.write(path, &Csv { delim: b',' })
    }
}

#[cfg(feature = "parquet")]
impl DataFrame {
    /// Writes Parquet (Snappy): to `path`, one row group per partition, or one file per
    /// partition when the file name holds a `*`. Each file is written atomically, and a
    /// set of parts commits as a whole. Under `scheduler = "mpi"` each rank writes its own
    /// partitions' parts and rank 0 commits once (one file: rank 0 writes it). Returns the
    /// files written.
    ///
    /// # Errors
    /// The plan's errors; the encoder's and the filesystem's (naming the path); under
    /// `scheduler = "mpi"`, a destination some rank cannot see.
    pub fn to_parquet(&self, path: &str) -> Result<Vec<PathBuf>> {
        self.write(path, &Parquet)
    }
}

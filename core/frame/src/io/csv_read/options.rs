//! [`CsvOptions`]: how a CSV file is read (header, delimiter, quotes, nulls, dtypes,
//! dates, partition size).

use arrow_schema::DataType;

/// Options of [`read_csv`](crate::read_csv).
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

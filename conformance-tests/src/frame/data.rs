//! Generated frame data: columns of every Arrow type the suite covers, with nulls, NaN,
//! `-0.0`, infinities, repeated keys and empty partitions, all from the case's [`Gen`].

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::gen::Gen;

/// A column type the frame suite covers, by its report name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ColType {
    /// `Int64`.
    Int64,
    /// `Int32`.
    Int32,
    /// `Float64` (with NaN, ±inf, -0.0).
    Float64,
    /// `Utf8` (with empty and non-ASCII strings).
    Utf8,
    /// `Boolean`.
    Bool,
    /// `Date32`.
    Date32,
    /// `Timestamp(Microsecond, None)`.
    TimestampUs,
}

impl ColType {
    /// Every covered type, in report order.
    pub const ALL: [ColType; 7] = [
        ColType::Int64,
        ColType::Int32,
        ColType::Float64,
        ColType::Utf8,
        ColType::Bool,
        ColType::Date32,
        ColType::TimestampUs,
    ];

    /// The name in case ids and the report (`int64`, `timestamp[us]`).
    pub fn name(self) -> &'static str {
        match self {
            ColType::Int64 => "int64",
            ColType::Int32 => "int32",
            ColType::Float64 => "float64",
            ColType::Utf8 => "utf8",
            ColType::Bool => "bool",
            ColType::Date32 => "date32",
            ColType::TimestampUs => "timestamp[us]",
        }
    }

    /// The Arrow type.
    pub fn data_type(self) -> DataType {
        match self {
            ColType::Int64 => DataType::Int64,
            ColType::Int32 => DataType::Int32,
            ColType::Float64 => DataType::Float64,
            ColType::Utf8 => DataType::Utf8,
            ColType::Bool => DataType::Boolean,
            ColType::Date32 => DataType::Date32,
            ColType::TimestampUs => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }

    /// Numeric (arithmetic applies).
    pub fn is_numeric(self) -> bool {
        matches!(self, ColType::Int64 | ColType::Int32 | ColType::Float64)
    }
}

/// How a generated column's values are drawn.
#[derive(Debug, Clone, Copy)]
pub struct Draw {
    /// Distinct values to draw from (small: repeated keys, groups, join matches).
    pub domain: usize,
    /// Probability of a null.
    pub nulls: f64,
    /// Include the float specials (NaN, ±inf, -0.0).
    pub specials: bool,
}

impl Draw {
    /// Values with a few repeats, some nulls and the specials.
    pub fn values(rows: usize) -> Draw {
        Draw {
            domain: rows.max(4),
            nulls: 0.1,
            specials: true,
        }
    }

    /// Keys: about three rows per value, some nulls, no NaN.
    pub fn keys(rows: usize) -> Draw {
        Draw {
            domain: (rows / 3).max(2),
            nulls: 0.1,
            specials: false,
        }
    }

    /// Without nulls.
    pub fn no_nulls(self) -> Draw {
        Draw { nulls: 0.0, ..self }
    }
}

/// The `i`-th value of a domain, as a string (a key that sorts unlike its number).
fn word(i: usize) -> String {
    const SYLLABLES: [&str; 8] = ["ka", "lo", "mé", "zu", "", "ß", "ti", "Ω"];
    let mut s = String::new();
    let mut n = i;
    loop {
        s.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            break;
        }
    }
    s
}

/// A column of `rows` values of `t`.
pub fn column(g: &mut Gen, t: ColType, rows: usize, d: Draw) -> ArrayRef {
    let pick = |g: &mut Gen| -> Option<usize> {
        if g.chance(d.nulls) {
            None
        } else {
            Some(g.below(d.domain.max(1)))
        }
    };
    let idx: Vec<Option<usize>> = (0..rows).map(|_| pick(g)).collect();
    match t {
        ColType::Int64 => Arc::new(Int64Array::from_iter(
            idx.iter().map(|v| v.map(|i| i as i64 * 7 - 20)),
        )),
        ColType::Int32 => Arc::new(Int32Array::from_iter(
            idx.iter().map(|v| v.map(|i| i as i32 * 3 - 10)),
        )),
        ColType::Float64 => {
            const SPECIAL: [f64; 4] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
            Arc::new(Float64Array::from_iter(idx.iter().map(|v| {
                v.map(|i| {
                    if d.specials && g.chance(0.08) {
                        SPECIAL[g.below(SPECIAL.len())]
                    } else {
                        i as f64 * 0.25 - 3.0
                    }
                })
            })))
        }
        ColType::Utf8 => Arc::new(StringArray::from_iter(idx.iter().map(|v| v.map(word)))),
        ColType::Bool => Arc::new(BooleanArray::from_iter(
            idx.iter().map(|v| v.map(|i| i % 2 == 1)),
        )),
        ColType::Date32 => Arc::new(Date32Array::from_iter(
            idx.iter().map(|v| v.map(|i| 18_000 + i as i32 * 17)),
        )),
        ColType::TimestampUs => {
            Arc::new(TimestampMicrosecondArray::from_iter(idx.iter().map(|v| {
                v.map(|i| 1_600_000_000_000_000 + i as i64 * 3_600_000_123)
            })))
        }
    }
}

/// One value of `t` that [`fn@column`] never draws (its domains stay far below 10,000): a
/// group or key no generated row has.
pub fn fresh_key(t: ColType) -> Option<ArrayRef> {
    Some(match t {
        ColType::Int64 => Arc::new(Int64Array::from(vec![1_000_000])),
        ColType::Int32 => Arc::new(Int32Array::from(vec![1_000_000])),
        ColType::Float64 => Arc::new(Float64Array::from(vec![1e9])),
        ColType::Utf8 => Arc::new(StringArray::from(vec!["a fresh key"])),
        ColType::Bool => return None,
        ColType::Date32 => Arc::new(Date32Array::from(vec![1_000_000])),
        ColType::TimestampUs => {
            Arc::new(TimestampMicrosecondArray::from(vec![4_000_000_000_000_000]))
        }
    })
}

/// A batch of named columns.
pub fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("columns of equal length")
}

/// Splits `b` into `parts` consecutive pieces of random sizes (some possibly empty).
pub fn split(g: &mut Gen, b: &RecordBatch, parts: usize) -> Vec<RecordBatch> {
    let rows = b.num_rows();
    let mut cuts: Vec<usize> = (0..parts.saturating_sub(1))
        .map(|_| g.below(rows + 1))
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for c in cuts.into_iter().chain([rows]) {
        out.push(b.slice(start, c - start));
        start = c;
    }
    out
}

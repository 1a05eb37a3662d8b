//! Skipping row groups before they are read: min/max statistics (and hive partition
//! values) that prove a pushed-down predicate (`col op literal`) holds for none of a row
//! group's rows.

use parquet::file::statistics::Statistics;

use crate::expr::{BinaryOp, Literal};
use crate::plan::ColumnPredicate;

use super::ParquetSource;

/// The partitions (row groups) of `src` that may hold rows for which every predicate
/// holds: the others' hive values or min/max statistics prove that one of them holds for
/// none of their rows.
pub(super) fn row_groups(src: &ParquetSource, predicates: &[ColumnPredicate]) -> Vec<usize> {
    let keep = (0..src.groups.len())
        .filter(|&p| {
            let (f, g) = src.groups[p];
            if !src.hive.may_match(f, predicates) {
                return false;
            }
            let rg = src.files[f].1.row_group(g);
            predicates.iter().all(|pred| {
                let Some(col) = rg
                    .columns()
                    .iter()
                    .find(|c| c.column_path().string() == pred.column)
                else {
                    return true;
                };
                // Timestamps' statistics are in the column's unit; leave them alone.
                if matches!(
                    src.schema
                        .field_with_name(&pred.column)
                        .map(|f| f.data_type().clone()),
                    Ok(arrow_schema::DataType::Timestamp(_, _))
                ) {
                    return true;
                }
                let scale = src
                    .decimal_scales
                    .iter()
                    .find(|(n, _)| *n == pred.column)
                    .map(|(_, s)| *s);
                match (
                    col.statistics().and_then(|st| bounds(st, scale)),
                    &pred.value,
                ) {
                    (Some(Bound::Num(lo, hi)), Literal::Int(v)) => {
                        may_match(&lo, &hi, pred.op, &(*v as f64))
                    }
                    (Some(Bound::Num(lo, hi)), Literal::Float(v)) => {
                        may_match(&lo, &hi, pred.op, v)
                    }
                    (Some(Bound::Bytes(lo, hi)), Literal::Str(v)) => {
                        may_match(&lo, &hi, pred.op, &v.as_bytes().to_vec())
                    }
                    _ => true,
                }
            })
        })
        .collect();
    keep
}

/// `min`/`max` of a column chunk as f64 (numbers) or bytes (strings).
enum Bound {
    Num(f64, f64),
    Bytes(Vec<u8>, Vec<u8>),
}

/// The column chunk's bounds; a decimal column's (`scale` is `Some`) stored unscaled
/// integers are divided by `10^scale`, in whichever physical type holds them.
fn bounds(stats: &Statistics, scale: Option<i8>) -> Option<Bound> {
    if let Some(scale) = scale {
        let unit = 10f64.powi(i32::from(scale));
        let (lo, hi) = match stats {
            Statistics::Int32(s) => (f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
            Statistics::Int64(s) => (*s.min_opt()? as f64, *s.max_opt()? as f64),
            Statistics::FixedLenByteArray(s) => (
                be_i128(s.min_opt()?.data())? as f64,
                be_i128(s.max_opt()?.data())? as f64,
            ),
            Statistics::ByteArray(s) => (
                be_i128(s.min_opt()?.data())? as f64,
                be_i128(s.max_opt()?.data())? as f64,
            ),
            _ => return None,
        };
        // Rounding to f64 may move a bound by an ulp: widen it so pruning stays safe.
        let widen = |x: f64, dir: f64| x + dir * (x.abs() * f64::EPSILON + f64::MIN_POSITIVE);
        return Some(Bound::Num(widen(lo / unit, -1.0), widen(hi / unit, 1.0)));
    }
    Some(match stats {
        Statistics::Int32(s) => Bound::Num(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
        Statistics::Int64(s) => Bound::Num(*s.min_opt()? as f64, *s.max_opt()? as f64),
        Statistics::Float(s) => Bound::Num(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
        Statistics::Double(s) => Bound::Num(*s.min_opt()?, *s.max_opt()?),
        Statistics::ByteArray(s) => {
            Bound::Bytes(s.min_opt()?.data().to_vec(), s.max_opt()?.data().to_vec())
        }
        _ => return None,
    })
}

/// A big-endian two's-complement integer of up to 16 bytes (a decimal's unscaled value).
fn be_i128(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

/// Whether some value in `[lo, hi]` may satisfy `v op lit`.
fn may_match<T: PartialOrd>(lo: &T, hi: &T, op: BinaryOp, lit: &T) -> bool {
    match op {
        BinaryOp::Eq => lo <= lit && lit <= hi,
        BinaryOp::NotEq => !(lo == lit && hi == lit),
        BinaryOp::Lt => lo < lit,
        BinaryOp::LtEq => lo <= lit,
        BinaryOp::Gt => hi > lit,
        BinaryOp::GtEq => hi >= lit,
        _ => true,
    }
}

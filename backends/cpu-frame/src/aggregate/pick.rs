//! Order-based aggregations (min, max, first, last): a row index picked per group and
//! taken, so they work for any orderable type without a kernel per type.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, UInt32Array};
use arrow_schema::{DataType, SortOptions};
use tessera_core::frame::AggFunc;
use tessera_core::{Error, Result};

use crate::keys::groups::{Groups, NO_GROUP};

/// The value per group picked by `func` (min, max, first, last non-null).
pub(super) fn pick(a: &ArrayRef, g: &Groups, func: AggFunc) -> Result<ArrayRef> {
    let n = g.len();
    let mut best: Vec<Option<u32>> = vec![None; n];
    match func {
        AggFunc::First | AggFunc::Last => {
            for (i, &id) in g.ids.iter().enumerate() {
                if id == NO_GROUP || a.is_null(i) {
                    continue;
                }
                let slot = &mut best[id as usize];
                if func == AggFunc::Last || slot.is_none() {
                    *slot = Some(i as u32);
                }
            }
        }
        _ => {
            use arrow_array::types::*;
            use arrow_schema::TimeUnit;
            let min = func == AggFunc::Min;
            let b = &mut best;
            match a.data_type() {
                DataType::Int8 => pick_primitive::<Int8Type>(a, g, min, b),
                DataType::Int16 => pick_primitive::<Int16Type>(a, g, min, b),
                DataType::Int32 => pick_primitive::<Int32Type>(a, g, min, b),
                DataType::Int64 => pick_primitive::<Int64Type>(a, g, min, b),
                DataType::UInt8 => pick_primitive::<UInt8Type>(a, g, min, b),
                DataType::UInt16 => pick_primitive::<UInt16Type>(a, g, min, b),
                DataType::UInt32 => pick_primitive::<UInt32Type>(a, g, min, b),
                DataType::UInt64 => pick_primitive::<UInt64Type>(a, g, min, b),
                DataType::Float32 => pick_primitive::<Float32Type>(a, g, min, b),
                DataType::Float64 => pick_primitive::<Float64Type>(a, g, min, b),
                DataType::Date32 => pick_primitive::<Date32Type>(a, g, min, b),
                DataType::Date64 => pick_primitive::<Date64Type>(a, g, min, b),
                DataType::Timestamp(TimeUnit::Second, _) => {
                    pick_primitive::<TimestampSecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Millisecond, _) => {
                    pick_primitive::<TimestampMillisecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Microsecond, _) => {
                    pick_primitive::<TimestampMicrosecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                    pick_primitive::<TimestampNanosecondType>(a, g, min, b)
                }
                _ => pick_dyn(a, g, func, b)?,
            }
        }
    }
    let idx = UInt32Array::from(best);
    arrow_select::take::take(a, &idx, None).map_err(|e| Error::arrow(func.name(), e))
}

/// Min/max row per group for a primitive type, with a typed comparison (total order for
/// floats, as arrow's comparator).
pub(super) fn pick_primitive<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    g: &Groups,
    min: bool,
    best: &mut [Option<u32>],
) {
    let arr = a.as_primitive::<T>();
    let v = arr.values();
    let want = if min {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Greater
    };
    // Each group's best value is kept beside its row, so a comparison reads the small
    // per-group array instead of the column at a random row.
    let mut values: Vec<T::Native> = vec![T::Native::default(); best.len()];
    let nulls = arr.nulls();
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || nulls.is_some_and(|n| n.is_null(i)) {
            continue;
        }
        let k = id as usize;
        let better = match best[k] {
            None => true,
            Some(_) => x.compare(values[k]) == want,
        };
        if better {
            best[k] = Some(i as u32);
            values[k] = x;
        }
    }
}

/// Min/max row per group through arrow's dynamic comparator (strings, booleans, ...).
pub(super) fn pick_dyn(
    a: &ArrayRef,
    g: &Groups,
    func: AggFunc,
    best: &mut [Option<u32>],
) -> Result<()> {
    {
        {
            let cmp =
                arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), SortOptions::default())
                    .map_err(|e| Error::arrow(func.name(), e))?;
            let want = if func == AggFunc::Min {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            for (i, &id) in g.ids.iter().enumerate() {
                if id == NO_GROUP || a.is_null(i) {
                    continue;
                }
                let slot = &mut best[id as usize];
                match slot {
                    None => *slot = Some(i as u32),
                    Some(b) if cmp(i, *b as usize) == want => *slot = Some(i as u32),
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

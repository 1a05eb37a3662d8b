//! Math functions (`abs`, `sqrt`, `exp`, `ln`, rounding, ...), `clip` and `is_nan`.

use std::sync::Arc;

use super::cast_to;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_schema::DataType;
use tessera_core::frame::expr::MathFunc;
use tessera_core::{Error, Result};

/// `x` clipped to `[lo, hi]` row by row with IEEE comparisons, so NaN stays NaN (arrow's
/// comparison kernels order NaN above every number, which would clip it). Integers are
/// clipped in Int64 and floats in Float64, then cast back to `t`.
pub(crate) fn clip(x: &ArrayRef, lo: &ArrayRef, hi: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    macro_rules! clip_in {
        ($wide:ty, $dt:expr) => {{
            let (x, lo, hi) = (cast_to(x, &$dt)?, cast_to(lo, &$dt)?, cast_to(hi, &$dt)?);
            let raised = arrow_arith::arity::binary::<_, _, _, $wide>(
                x.as_primitive::<$wide>(),
                lo.as_primitive::<$wide>(),
                |v, l| if v < l { l } else { v },
            )
            .map_err(|e| Error::arrow("clip", e))?;
            let out = arrow_arith::arity::binary::<_, _, _, $wide>(
                &raised,
                hi.as_primitive::<$wide>(),
                |v, h| if v > h { h } else { v },
            )
            .map_err(|e| Error::arrow("clip", e))?;
            cast_to(&(Arc::new(out) as ArrayRef), t)
        }};
    }
    if t.is_floating() {
        clip_in!(Float64Type, DataType::Float64)
    } else if t.is_integer() {
        clip_in!(Int64Type, DataType::Int64)
    } else {
        Err(Error::invalid("clip", format!("needs numbers, got {t}")))
    }
}

/// True where a float is NaN, null where null, false for any other type.
pub(crate) fn is_nan(a: &ArrayRef) -> ArrayRef {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    let out: BooleanArray = match a.data_type() {
        DataType::Float64 => BooleanArray::from_unary(a.as_primitive::<Float64Type>(), f64::is_nan),
        DataType::Float32 => BooleanArray::from_unary(a.as_primitive::<Float32Type>(), f32::is_nan),
        DataType::Float16 => {
            BooleanArray::from_unary(a.as_primitive::<Float16Type>(), |v| v.is_nan())
        }
        _ => BooleanArray::new(
            arrow_buffer::BooleanBuffer::new_unset(a.len()),
            a.logical_nulls(),
        ),
    };
    Arc::new(out)
}

/// A float column with its NaN made null: `when(x.is_nan()).then(null).otherwise(x)`,
/// what pandas-shaped code asks of every float column it reduces, computed as a new
/// validity bitmap over the same values buffer instead of a comparison and a copy.
/// Columns of other types come back as they are.
pub(crate) fn nan_as_null(a: &ArrayRef) -> ArrayRef {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{ArrowPrimitiveType, Float32Type, Float64Type};
    use arrow_array::PrimitiveArray;
    use arrow_buffer::{BooleanBuffer, NullBuffer};

    fn masked<T: ArrowPrimitiveType>(
        a: &PrimitiveArray<T>,
        nan: impl Fn(T::Native) -> bool,
    ) -> ArrayRef {
        let values = a.values();
        let keep = BooleanBuffer::collect_bool(a.len(), |i| !nan(values[i]));
        if keep.count_set_bits() == a.len() {
            return Arc::new(a.clone());
        }
        let valid = match a.nulls() {
            Some(n) => n.inner() & &keep,
            None => keep,
        };
        Arc::new(
            PrimitiveArray::<T>::new(values.clone(), Some(NullBuffer::new(valid)))
                .with_data_type(a.data_type().clone()),
        )
    }
    match a.data_type() {
        DataType::Float64 => masked(a.as_primitive::<Float64Type>(), f64::is_nan),
        DataType::Float32 => masked(a.as_primitive::<Float32Type>(), f32::is_nan),
        _ => a.clone(),
    }
}

/// `func` over a numeric column, with the result type `MathFunc::result_type` gives.
pub(crate) fn math(func: MathFunc, a: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type};
    let to = func.result_type(a.data_type()).ok_or_else(|| {
        Error::invalid(
            func.name(),
            format!("needs an integer or float column, got {}", a.data_type()),
        )
    })?;
    let a = cast_to(a, &to)?;
    // The scalar definitions the array engine uses (`UnaryOp::apply_*`).
    let op = func.unary_op();
    // Integers only reach here for abs, floor, ceil and round (the others were cast to
    // float64), and only abs changes them.
    macro_rules! ints {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            Arc::new(if func == MathFunc::Abs {
                p.unary::<_, $t>(|x| x.wrapping_abs())
            } else {
                p.clone()
            }) as ArrayRef
        }};
    }
    Ok(match a.data_type() {
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|x| op.apply_f64(x)),
        ),
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|x| op.apply_f32(x)),
        ),
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        // Unsigned values are their own absolute value.
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => a,
        other => {
            return Err(Error::invalid(
                func.name(),
                format!("needs an integer or float column, got {other}"),
            ))
        }
    })
}

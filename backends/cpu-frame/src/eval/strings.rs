//! String functions over offsets and bytes (`contains`, `starts_with`, `lower`,
//! `substring`, `strip`, `replace`, `split_part`, ...), and comparisons of string views
//! with a literal that read only the 16-byte view where the string fits in it.

use std::sync::Arc;

use super::is_in::ViewSet;
use super::{cast_to, is_text, Val};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, Scalar, StringArray};
use arrow_schema::DataType;
use tessera_core::frame::expr::{compile, BinaryOp, StrFunc};
use tessera_core::{Error, Result};

/// A string function over a column. A string column of any layout (Utf8, LargeUtf8, string
/// views: Parquet's strings arrive as views) is read as it is — copying 1.5 million
/// comments into a Utf8 column was a fifth of TPC-H Q13's `like` — and any other column is
/// cast to Utf8 first.
pub(crate) fn string_fn(func: &StrFunc, a: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let a = if is_text(a.data_type()) {
        a.clone()
    } else {
        cast_to(a, &DataType::Utf8)?
    };
    let values = || string_values(&a, func);
    // A one-value pattern of the column's own layout, as Arrow's `like` kernels ask.
    let pattern = |p: &str| -> Scalar<ArrayRef> {
        Scalar::new(match a.data_type() {
            DataType::Utf8View => Arc::new(arrow_array::StringViewArray::from(vec![p])),
            DataType::LargeUtf8 => Arc::new(arrow_array::LargeStringArray::from(vec![p])),
            _ => Arc::new(StringArray::from(vec![p])) as ArrayRef,
        })
    };
    let map = |f: &dyn Fn(&str) -> String| -> Result<ArrayRef> {
        Ok(Arc::new(
            values()?.map(|v| v.map(f)).collect::<StringArray>(),
        ))
    };
    let err = |e| Error::arrow(func.name(), e);
    Ok(match func {
        StrFunc::StartsWith(p) => {
            Arc::new(arrow_string::like::starts_with(&a, &pattern(p)).map_err(err)?)
        }
        StrFunc::EndsWith(p) => {
            Arc::new(arrow_string::like::ends_with(&a, &pattern(p)).map_err(err)?)
        }
        StrFunc::Like(p) => Arc::new(arrow_string::like::like(&a, &pattern(p)).map_err(err)?),
        StrFunc::Lower => map(&|v| v.to_lowercase())?,
        StrFunc::Upper => map(&|v| v.to_uppercase())?,
        StrFunc::Strip => map(&|v| v.trim().to_string())?,
        StrFunc::Replace { from, to } => map(&|v| v.replace(from.as_str(), to))?,
        StrFunc::Len => Arc::new(
            values()?
                .map(|v| v.map(|v| v.chars().count() as i64))
                .collect::<Int64Array>(),
        ),
        StrFunc::Substring { start, len } => {
            let utf8 = cast_to(&a, &DataType::Utf8)?;
            Arc::new(
                arrow_string::substring::substring_by_char(utf8.as_string::<i32>(), *start, *len)
                    .map_err(err)?,
            )
        }
        StrFunc::Matches(p) => {
            let re = compile(p).map_err(|why| Error::invalid("matches", why))?;
            Arc::new(
                values()?
                    .map(|v| v.map(|v| re.is_match(v)))
                    .collect::<BooleanArray>(),
            )
        }
        StrFunc::Extract { pattern, group } => {
            let re = compile(pattern).map_err(|why| Error::invalid("extract", why))?;
            Arc::new(
                values()?
                    .map(|v| {
                        v.and_then(|v| re.captures(v))
                            .and_then(|c| c.get(*group))
                            .map(|m| m.as_str().to_string())
                    })
                    .collect::<StringArray>(),
            )
        }
        StrFunc::SplitPart { sep, index } => Arc::new(
            values()?
                .map(|v| v.and_then(|v| split_part(v, sep, *index)))
                .collect::<StringArray>(),
        ),
        StrFunc::Split(sep) => {
            let mut out =
                arrow_array::builder::ListBuilder::new(arrow_array::builder::StringBuilder::new());
            for v in values()? {
                match v {
                    Some(v) => {
                        for piece in v.split(sep.as_str()) {
                            out.values().append_value(piece);
                        }
                        out.append(true);
                    }
                    None => out.append(false),
                }
            }
            Arc::new(out.finish())
        }
    })
}

/// The values of a Utf8, LargeUtf8 or string view column, null where null.
fn string_values<'a>(
    a: &'a ArrayRef,
    func: &StrFunc,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>> {
    use arrow_array::cast::AsArray;
    Ok(match a.data_type() {
        DataType::Utf8 => Box::new(a.as_string::<i32>().iter()),
        DataType::LargeUtf8 => Box::new(a.as_string::<i64>().iter()),
        DataType::Utf8View => Box::new(a.as_string_view().iter()),
        t => {
            return Err(Error::invalid(
                func.name(),
                format!("needs a string column, got {t}"),
            ))
        }
    })
}

/// Piece `index` of `v` split by `sep` (negative from the end), if there is one.
fn split_part(v: &str, sep: &str, index: i64) -> Option<String> {
    let piece = if index >= 0 {
        v.split(sep).nth(usize::try_from(index).ok()?)
    } else {
        v.rsplit(sep).nth(usize::try_from(-(index + 1)).ok()?)
    };
    piece.map(str::to_string)
}

/// `a == s` (or `a != s` when `negate`) over a string view column, by its views
/// ([`ViewSet`]); null where `a` is null.
fn view_eq(a: &arrow_array::StringViewArray, s: &str, negate: bool) -> BooleanArray {
    let hits = ViewSet::new(&[s]).hits(a, false);
    BooleanArray::new(if negate { !&hits } else { hits }, a.nulls().cloned())
}

/// `left op right` by [`view_eq`] when `op` is `==` or `!=` between a string view column
/// and a non-null string scalar (in either order); `None` otherwise.
pub(crate) fn view_compare(op: BinaryOp, left: &Val, right: &Val) -> Option<ArrayRef> {
    use arrow_array::cast::AsArray;
    if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
        return None;
    }
    let ((Val::Array(a), Val::Scalar(s)) | (Val::Scalar(s), Val::Array(a))) = (left, right) else {
        return None;
    };
    let (a, s) = (a.as_string_view_opt()?, s.as_string_view_opt()?);
    if s.len() != 1 || s.is_null(0) {
        return None;
    }
    Some(Arc::new(view_eq(a, s.value(0), op == BinaryOp::NotEq)))
}

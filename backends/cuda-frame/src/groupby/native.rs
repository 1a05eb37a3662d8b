//! Which groupbys the device runs ([`native`], [`native_combine`]: the plan, or the reason
//! not, which a fallback records and `explain()` shows), and the plan built for one.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_cuda::codegen::named;

use super::kernels::text;
use super::plan::{Acc, NativeGroupby, Refusal, State};
use crate::program::emit::{ctype, is_string};

pub(super) fn key_type_ok(t: &DataType) -> bool {
    is_string(t)
        || (ctype(t).is_some()
            && !matches!(
                t,
                DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
            ))
}

pub(super) fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(_, _) | DataType::Decimal64(_, _))
}

pub(super) fn int_like(t: &DataType) -> bool {
    key_type_ok(t) && !is_string(t) && *t != DataType::Boolean
}

/// One state column a groupby kernel makes: what it computes of which input column, as
/// which field.
#[derive(Debug, Clone)]
pub(super) enum Item {
    /// Non-null values.
    Count(String, Field),
    /// Wrapping integer sum (a count's or an integer sum's state; combined: their sums).
    Sum(String, Field),
    /// Exact 128-bit sum (decimals; an integer mean's sum, as Float64).
    Wide(String, Field),
    /// Float sum in row order (Float64).
    FSum(String, Field),
    /// Minimum (null when none).
    Min(String, Field),
    /// Maximum (null when none).
    Max(String, Field),
}

/// The groupby as device kernels, or why it must run on the host.
///
/// # Errors
/// The reason, naming the first key or aggregation the generator does not cover.
pub fn native(
    input: &SchemaRef,
    keys: &[String],
    aggs: &[AggSpec],
) -> std::result::Result<NativeGroupby, Refusal> {
    let mut items = Vec::new();
    for a in aggs {
        let t = input
            .field_with_name(&a.column)
            .map_err(|_| format!("no column '{}'", a.column))?
            .data_type()
            .clone();
        let state = a.func.state_fields(&a.output, &t);
        let c = a.column.clone();
        match a.func {
            AggFunc::Count => items.push(Item::Count(c, state[0].clone())),
            AggFunc::Sum if t.is_integer() => items.push(Item::Sum(c, state[0].clone())),
            AggFunc::Sum if is_decimal(&t) => items.push(Item::Wide(c, state[0].clone())),
            AggFunc::Sum if t.is_floating() => items.push(Item::FSum(c, state[0].clone())),
            AggFunc::Mean if t.is_floating() => {
                items.push(Item::FSum(c.clone(), state[0].clone()));
                items.push(Item::Count(c, state[1].clone()));
            }
            AggFunc::Mean if t.is_integer() || is_decimal(&t) => {
                items.push(Item::Wide(c.clone(), state[0].clone()));
                items.push(Item::Count(c, state[1].clone()));
            }
            AggFunc::Min if int_like(&t) => items.push(Item::Min(c, state[0].clone())),
            AggFunc::Max if int_like(&t) => items.push(Item::Max(c, state[0].clone())),
            f => {
                return Err(format!(
                    "{}({}) of a {t} column has no device kernel yet",
                    f.name(),
                    a.column
                ))
            }
        }
    }
    build(input, keys, &items)
}

/// The combine of partial states (`state`: the keys, then every aggregation's state
/// columns in core's layout) as device kernels, or why not: counts and integer sums
/// summed, decimal sums summed exactly, minimums and maximums of minimums and maximums.
///
/// # Errors
/// The reason, naming the first state the generator does not combine.
pub fn native_combine(
    state: &SchemaRef,
    keys: &[String],
    aggs: &[AggSpec],
) -> std::result::Result<NativeGroupby, Refusal> {
    let field = |name: String| {
        state
            .field_with_name(&name)
            .cloned()
            .map_err(|_| format!("no state column '{name}'"))
    };
    let mut items = Vec::new();
    for a in aggs {
        let o = &a.output;
        match a.func {
            AggFunc::Count => {
                let f = field(format!("{o}#count"))?;
                items.push(Item::Sum(f.name().clone(), f));
            }
            AggFunc::Sum | AggFunc::Mean => {
                let f = field(format!("{o}#sum"))?;
                match f.data_type() {
                    t if t.is_integer() => items.push(Item::Sum(f.name().clone(), f)),
                    DataType::Decimal128(_, _) => items.push(Item::Wide(f.name().clone(), f)),
                    DataType::Float64 => items.push(Item::FSum(f.name().clone(), f)),
                    t => {
                        return Err(format!(
                            "combining {}({}) states of {t}",
                            a.func.name(),
                            a.column
                        ))
                    }
                }
                if a.func == AggFunc::Mean {
                    let c = field(format!("{o}#count"))?;
                    items.push(Item::Sum(c.name().clone(), c));
                }
            }
            AggFunc::Min | AggFunc::Max => {
                let f = field(format!("{o}#value"))?;
                if !int_like(f.data_type()) {
                    return Err(format!(
                        "combining {}({}) states of {}",
                        a.func.name(),
                        a.column,
                        f.data_type()
                    ));
                }
                items.push(if a.func == AggFunc::Min {
                    Item::Min(f.name().clone(), f)
                } else {
                    Item::Max(f.name().clone(), f)
                });
            }
            f => {
                return Err(format!(
                    "combining {}({}) states has no device kernel yet",
                    f.name(),
                    a.column
                ))
            }
        }
    }
    build(state, keys, &items)
}

/// The kernels computing `items` per group of `keys` over `input`.
pub(super) fn build(
    input: &SchemaRef,
    keys: &[String],
    items: &[Item],
) -> std::result::Result<NativeGroupby, Refusal> {
    let mut reads: Vec<(usize, DataType)> = Vec::new();
    let slot_of = |name: &str, reads: &mut Vec<(usize, DataType)>| {
        let i = input
            .index_of(name)
            .map_err(|_| format!("no column '{name}'"))?;
        let t = input.field(i).data_type().clone();
        Ok::<_, Refusal>(match reads.iter().position(|(c, _)| *c == i) {
            Some(j) => (j, t),
            None => {
                reads.push((i, t.clone()));
                (reads.len() - 1, t)
            }
        })
    };
    for k in keys {
        let (_, t) = slot_of(k, &mut reads)?;
        if !key_type_ok(&t) {
            return Err(format!("a groupby key of type {t} ('{k}')"));
        }
    }
    let mut accs: Vec<Acc> = Vec::new();
    let acc = |a: Acc, accs: &mut Vec<Acc>| match accs.iter().position(|x| *x == a) {
        Some(i) => i,
        None => {
            accs.push(a);
            accs.len() - 1
        }
    };
    let mut states = Vec::new();
    let mut fields: Vec<Field> = keys
        .iter()
        .map(|k| input.field_with_name(k).cloned())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| e.to_string())?;
    for item in items {
        let (Item::Count(c, f)
        | Item::Sum(c, f)
        | Item::Wide(c, f)
        | Item::FSum(c, f)
        | Item::Min(c, f)
        | Item::Max(c, f)) = item;
        let (j, _) = slot_of(c, &mut reads)?;
        let plain = |value: usize| State {
            field: f.clone(),
            value,
            wide: None,
            present: None,
            slot: j,
        };
        let s = match item {
            Item::Count(..) => plain(acc(Acc::Count(j), &mut accs)),
            Item::Sum(..) => plain(acc(Acc::Sum(j), &mut accs)),
            Item::FSum(..) => plain(acc(Acc::FSum(j), &mut accs)),
            Item::Wide(..) => State {
                wide: Some((
                    acc(Acc::Wide(j, 2), &mut accs),
                    acc(Acc::Wide(j, 3), &mut accs),
                )),
                ..plain(acc(Acc::Wide(j, 1), &mut accs))
            },
            Item::Min(..) | Item::Max(..) => {
                let value = acc(
                    if matches!(item, Item::Min(..)) {
                        Acc::Min(j)
                    } else {
                        Acc::Max(j)
                    },
                    &mut accs,
                );
                State {
                    present: Some(acc(Acc::Count(j), &mut accs)),
                    ..plain(value)
                }
            }
        };
        fields.push(s.field.clone());
        states.push(s);
    }
    let (body, checks) = text(&reads, keys.len(), &accs, &states);
    let (body, hash, name) = named(&body, "tsrg");
    Ok(NativeGroupby {
        schema: Arc::new(Schema::new(fields)),
        body,
        hash,
        name,
        reads,
        keys: keys.len(),
        accs,
        states,
        checks,
    })
}

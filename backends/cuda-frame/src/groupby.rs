//! A groupby on the device — partial aggregation, the combine of states, and a shuffle's
//! hash partitioning — with integer atomics only and a result that is the same on every
//! run.
//!
//! One kernel text per structure (key types, aggregations and their input types), whose
//! entries are:
//!
//! 1. `_insert`: each row with no null key hashes its keys into an open-addressing table
//!    of row numbers (`atomicCAS` claims an empty slot; a taken slot holding equal keys is
//!    the row's group, another is passed by linear probing) and writes its slot;
//! 2. `_minrow`: each slot keeps the first row of its group (`atomicMin`);
//! 3. `_firstcount` and 4. `_assign`: the first rows, counted per block and numbered by a
//!    block-wide scan in row order (the block bases folded on the host, as a filter's
//!    select does): group `g` is the `g`-th group to appear, whatever the table's layout
//!    or the order the threads ran in — so the result is deterministic;
//! 5. `_accumulate`: per row, its group's accumulators, 64-bit words updated by
//!    `atomicAdd` (counts, wrapping integer sums, the three words of an exact 192-bit
//!    decimal or integer-mean sum with its carries) and `atomicMin`/`atomicMax` (integers
//!    mapped to an order-preserving unsigned word): integer atomics are exact whatever
//!    their order;
//! 6. `_rowgid` and `_fsum`: float sums, which atomics would add in a different order on
//!    every run — the rows sorted stably by group, one thread per group adding its rows
//!    in row order, as the CPU backend adds them (the same bits);
//! 7. `_states`: eight groups a thread, the state columns in core's layout
//!    ([`AggFunc::state_fields`]) and the fixed-width key columns, read at each group's
//!    first row; string keys are gathered by [`super::strings`];
//! 8. `_bucket`: each row's hash bucket among `n`, for [`partition`].
//!
//! Covered: keys of integer, boolean, date, time, timestamp, duration and string types;
//! `count` of any column; `sum` and `mean` of integers, floats and decimals; `min` and
//! `max` of integer-like columns. Anything else runs on the host, recorded.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_core::{Error, Result};

use super::batch::DeviceBatch;
use super::column::{fixed_width, DeviceArray, DeviceBytes, DeviceNulls};
use super::launch::{
    column_args, grid_for, hash_step, joined, key_equal, launch_checked, le_words, placeholder,
    plan_of, valid_at, value_at, ColumnArgs,
};
use super::program::emit::{ctype, is_string};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

/// Why a groupby does not run natively.
pub type Refusal = String;

/// One accumulator word per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Acc {
    /// Non-null values of read slot `j`.
    Count(usize),
    /// Wrapping sum of read slot `j` (signed: sign-extended).
    Sum(usize),
    /// Minimum of read slot `j`, as an order-preserving word.
    Min(usize),
    /// Maximum of read slot `j`, as an order-preserving word.
    Max(usize),
    /// Word `1`, `2` or `3` (low to high) of the exact 192-bit sum of read slot `j`
    /// (decimals and integers, as 128-bit values): three words with the carries between
    /// them counted, so that the sum is exact whatever order the atomics run in.
    Wide(usize, u8),
    /// The float sum of read slot `j` in row order (Float64, as the CPU backend adds):
    /// not an atomic accumulator — `_fsum` folds each group's rows, sorted by group, one
    /// after the other, so the bits are the CPU's.
    FSum(usize),
}

/// One state column: its field and the accumulators it reads.
#[derive(Debug, Clone)]
struct State {
    field: Field,
    /// The accumulator holding the value (the low word of a wide sum).
    value: usize,
    /// A wide sum's two upper words: its state is the 128-bit value (a Decimal128, or a
    /// Float64 for an integer mean), an error past 38 digits.
    wide: Option<(usize, usize)>,
    /// For min/max, the count that says whether the group had a value.
    present: Option<usize>,
    /// The read slot of its input (for min/max: the type to decode to).
    slot: usize,
}

/// A groupby the device runs natively.
#[derive(Debug, Clone)]
pub struct NativeGroupby {
    schema: SchemaRef,
    body: String,
    hash: u64,
    name: String,
    /// Input columns read, by slot: the keys first, then the aggregations' inputs.
    reads: Vec<(usize, DataType)>,
    keys: usize,
    accs: Vec<Acc>,
    states: Vec<State>,
    /// The errors `_states` can raise (a decimal sum past 38 digits), by code - 1.
    checks: Vec<String>,
}

fn key_type_ok(t: &DataType) -> bool {
    is_string(t)
        || (ctype(t).is_some()
            && !matches!(
                t,
                DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
            ))
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(_, _) | DataType::Decimal64(_, _))
}

fn int_like(t: &DataType) -> bool {
    key_type_ok(t) && !is_string(t) && *t != DataType::Boolean
}

/// One state column a groupby kernel makes: what it computes of which input column, as
/// which field.
#[derive(Debug, Clone)]
enum Item {
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
fn build(
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

/// The entries: suffix, inputs beyond the column buffers, outputs.
const ENTRIES: [(&str, usize, usize); 9] = [
    ("_insert", 0, 2),
    ("_rowgid", 2, 2),
    ("_fsum", 3, usize::MAX),
    ("_bucket", 0, 1),
    ("_minrow", 1, 1),
    ("_firstcount", 2, 1),
    ("_assign", 2, 2),
    ("_accumulate", 2, usize::MAX),
    ("_states", 1, usize::MAX),
];

/// The order-preserving word of a value of `t` (signed: the sign bit flipped).
fn ordered(t: &DataType, v: &str) -> String {
    if t.is_unsigned_integer() {
        format!("(u64){v}")
    } else {
        format!("((u64)(i64){v} ^ 0x8000000000000000ULL)")
    }
}

/// The kernel text, and the errors `_states` can raise (by code - 1).
fn text(
    reads: &[(usize, DataType)],
    keys: usize,
    accs: &[Acc],
    states: &[State],
) -> (String, Vec<String>) {
    let name = tessera_cuda::codegen::names::NAME;
    let ins: String = (0..3 * reads.len())
        .map(|i| format!(", const u8* in{i}"))
        .collect();
    let head = "const u64* C = P + 4; (void)C; u64 n = P[0]; u64 mask = P[1]; (void)mask;";
    let none = "0xffffffffu";
    // Keys: null test, hash and equality between rows `a` and `b`.
    let mut any_null = Vec::new();
    let mut hash = String::from("u64 h = 0x9e3779b97f4a7c15ULL;");
    let mut eq = Vec::new();
    for (j, (_, t)) in reads.iter().enumerate().take(keys) {
        any_null.push(format!("!{}", valid_at(j, "row")));
        hash.push_str(&hash_step(j, t, "row"));
        eq.push(key_equal(t, (j, "a"), (j, "b")));
    }
    let any_null = if any_null.is_empty() {
        "0".to_string()
    } else {
        any_null.join(" || ")
    };
    let eq = if eq.is_empty() {
        "1".to_string()
    } else {
        eq.join(" && ")
    };
    let range = "u64 per = (n + gridDim.x - 1) / gridDim.x; u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;";
    let k = 3 * reads.len();
    let (i0, i1) = (format!("in{k}"), format!("in{}", k + 1));
    let mut s = String::new();
    s.push_str(&format!(
        "static __device__ __forceinline__ u8 {name}_eq(const u64* C{ins}, u64 a, u64 b) {{ return (u8)({eq}); }}\n"
    ));
    let call_ins: String = (0..3 * reads.len()).map(|i| format!(", in{i}")).collect();
    // The bucket of each row's keys among P[2] (a shuffle's hash partitioning; rows with
    // a null key all go to one bucket).
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_bucket(const u64* P{ins}, u8* out0) {{
    {head}
    u64 buckets = P[2];
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        u64 hb = 0x51ed270b27f2f0c1ULL;
        if (!({any_null})) {{ {hash} hb = h; }}
        ((u32*)out0)[row] = (u32)(hb % buckets);
    }}
}}
"
    ));
    // 1. insert
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_insert(const u64* P{ins}, u8* out0, u8* out1) {{
    {head}
    u32* table = (u32*)out0; u32* slots = (u32*)out1;
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        if ({any_null}) {{ slots[row] = {none}; continue; }}
        {hash}
        u64 at = h & mask;
        for (;;) {{
            u32 cur = atomicCAS(&table[at], 0u, (u32)(row + 1));
            if (cur == 0u || {name}_eq(C{call_ins}, row, (u64)(cur - 1))) break;
            at = (at + 1) & mask;
        }}
        slots[row] = (u32)at;
    }}
}}
"
    ));
    // 2. minrow
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_minrow(const u64* P{ins}, const u8* {i0}, u8* out0) {{
    {head}
    const u32* slots = (const u32*){i0}; u32* first = (u32*)out0;
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        u32 at = slots[row];
        if (at != {none}) atomicMin(&first[at], (u32)row);
    }}
}}
"
    ));
    let is_first = format!(
        "(row < hi && ((const u32*){i0})[row] != {none} && ((const u32*){i1})[((const u32*){i0})[row]] == (u32)row)"
    );
    // 3. firstcount
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_firstcount(const u64* P{ins}, const u8* {i0}, const u8* {i1}, u8* out0) {{
    {head}
    {range}
    u32 c = 0;
    for (u64 row = lo + threadIdx.x; row < hi; row += blockDim.x) c += {is_first} ? 1u : 0u;
    __shared__ u32 s[256];
    u32 total = tsr_block_sum(s, c);
    if (threadIdx.x == 0) ((u32*)out0)[blockIdx.x] = total;
}}
"
    ));
    // 4. assign
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_assign(const u64* P{ins}, const u8* {i0}, const u8* {i1}, u8* out0, u8* out1) {{
    {head}
    {range}
    u32* gid = (u32*)out0; u32* rep = (u32*)out1;
    u64 base = P[4 + {c3} + blockIdx.x];
    __shared__ u32 s[256];
    for (u64 t0 = lo; t0 < hi; t0 += blockDim.x) {{
        u64 row = t0 + threadIdx.x;
        u8 first = {is_first} ? 1 : 0;
        u32 total;
        u32 incl = tsr_block_scan(s, (u32)first, &total);
        if (first) {{
            u64 g = base + incl - 1;
            gid[((const u32*){i0})[row]] = (u32)g;
            rep[g] = (u32)row;
        }}
        base += total;
    }}
}}
",
        c3 = 3 * reads.len()
    ));
    // The rows' groups (G for a row with a null key; 0 for every row without keys) and
    // each group's size, for the float sums' fold in row order.
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_rowgid(const u64* P{ins}, const u8* {i0}, const u8* {i1}, u8* out0, u8* out1) {{
    {head}
    u64 global = P[2]; u32 groups = (u32)P[3];
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        u32 g = 0;
        if (!global) {{
            u32 at = ((const u32*){i0})[row];
            g = at == {none} ? groups : ((const u32*){i1})[at];
        }}
        ((u32*)out1)[row] = g;
        if (g < groups) atomicAdd(&((u32*)out0)[g], 1u);
    }}
}}
"
    ));
    // The float sums: one thread per group adds its rows in row order, as the CPU backend
    // adds them (`in{k+2}`: rows sorted by group, `in{k+3}`: each group's first place,
    // `in{k+4}`: each group's size).
    let fsums: Vec<(usize, usize)> = accs
        .iter()
        .enumerate()
        .filter_map(|(a, x)| match x {
            Acc::FSum(j) => Some((a, *j)),
            _ => None,
        })
        .collect();
    let fsum_outs: String = (0..fsums.len()).map(|o| format!(", u8* out{o}")).collect();
    let mut folds = String::new();
    for (o, (_, j)) in fsums.iter().enumerate() {
        let t = &reads[*j].1;
        folds.push_str(&format!(
            "        {{ f64 acc = 0.0; for (u64 i = 0; i < cnt; ++i) {{ u64 row = sorted[start + i]; if ({}) acc += (f64){}; }} ((f64*)out{o})[g] = acc; }}\n",
            valid_at(*j, "row"),
            value_at(*j, t, "row")
        ));
    }
    let (i2, i3, i4) = (
        format!("in{}", k + 2),
        format!("in{}", k + 3),
        format!("in{}", k + 4),
    );
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_fsum(const u64* P{ins}, const u8* {i2}, const u8* {i3}, const u8* {i4}{fsum_outs}) {{
    {head}
    u64 groups = P[3];
    const u32* sorted = (const u32*){i2}; const u64* starts = (const u64*){i3}; const u32* counts = (const u32*){i4};
    for (u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += (u64)gridDim.x * blockDim.x) {{
        u64 start = starts[g], cnt = counts[g];
{folds}    }}
}}
"
    ));
    // 5. accumulate
    let acc_outs: String = (0..accs.len()).map(|a| format!(", u8* out{a}")).collect();
    let mut updates = String::new();
    for (a, acc) in accs.iter().enumerate() {
        let (j, op) = match *acc {
            Acc::Count(j) => (j, "count"),
            Acc::Sum(j) => (j, "sum"),
            Acc::Min(j) => (j, "min"),
            Acc::Max(j) => (j, "max"),
            Acc::Wide(j, 1) => (j, "wide"),
            Acc::Wide(..) | Acc::FSum(_) => continue,
        };
        let t = &reads[j].1;
        if op == "wide" {
            // x = lo + 2^64 mid + 2^128 top, each word's carry added to the next.
            let at = |part: u8| {
                accs.iter()
                    .position(|x| *x == Acc::Wide(j, part))
                    .unwrap_or(a)
            };
            let (mid, top) = (at(2), at(3));
            let x = if t.is_unsigned_integer() {
                format!("(i128)(u64){}", value_at(j, t, "row"))
            } else {
                format!("(i128){}", value_at(j, t, "row"))
            };
            updates.push_str(&format!(
                "        if ({valid}) {{ i128 x = {x}; u64 xl = (u64)x, xh = (u64)((u128)x >> 64), xt = x < 0 ? ~0ULL : 0ULL; \
                 u64 old = atomicAdd(&((u64*)out{a})[g], xl); u64 c1 = old + xl < old ? 1ULL : 0ULL; \
                 u64 h = xh + c1; u64 c1b = h < xh ? 1ULL : 0ULL; \
                 u64 old2 = atomicAdd(&((u64*)out{mid})[g], h); u64 c2 = (old2 + h < old2 ? 1ULL : 0ULL) + c1b; \
                 atomicAdd(&((u64*)out{top})[g], xt + c2); }}\n",
                valid = valid_at(j, "row")
            ));
            continue;
        }
        let word = match op {
            "count" => "1ULL".to_string(),
            "sum" if t.is_unsigned_integer() => format!("(u64){}", value_at(j, t, "row")),
            "sum" => format!("(u64)(i64){}", value_at(j, t, "row")),
            _ => ordered(t, &value_at(j, t, "row")),
        };
        let call = match op {
            "count" | "sum" => "atomicAdd",
            "min" => "atomicMin",
            _ => "atomicMax",
        };
        updates.push_str(&format!(
            "        if ({}) {call}(&((u64*)out{a})[g], {word});\n",
            valid_at(j, "row")
        ));
    }
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_accumulate(const u64* P{ins}, const u8* {i0}, const u8* {i1}{acc_outs}) {{
    {head}
    u64 global = P[2];
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        u64 g = 0;
        if (!global) {{
            u32 at = ((const u32*){i0})[row];
            if (at == {none}) continue;
            g = ((const u32*){i1})[at];
        }}
{updates}    }}
}}
"
    ));
    // 6. states: inputs rep then the accumulators; outputs per fixed key (values), then
    // per state (values, validity).
    let acc_ins: String = (0..accs.len())
        .map(|a| format!(", const u8* acc{a}"))
        .collect();
    let mut outs = Vec::new();
    let mut init = String::new();
    let mut write = String::new();
    let mut fin = String::new();
    let mut checks: Vec<String> = Vec::new();
    for (j, (_, t)) in reads.iter().enumerate().take(keys) {
        if is_string(t) {
            continue;
        }
        let o = outs.len();
        outs.push(format!(", u8* out{o}"));
        if *t == DataType::Boolean {
            init.push_str(&format!("u8 kb{j} = 0; "));
            write.push_str(&format!(
                "            kb{j} |= (u8)({} << b);\n",
                value_at(j, t, "row")
            ));
            fin.push_str(&format!("        out{o}[q] = kb{j};\n"));
        } else {
            let c = ctype(t).unwrap_or("u8");
            write.push_str(&format!(
                "            (({c}*)out{o})[g] = {};\n",
                value_at(j, t, "row")
            ));
        }
    }
    for (i, st) in states.iter().enumerate() {
        let (vo, no) = (outs.len(), outs.len() + 1);
        outs.push(format!(", u8* out{vo}"));
        outs.push(format!(", u8* out{no}"));
        let t = st.field.data_type();
        let c = ctype(t).unwrap_or("u64");
        let word = format!("((const u64*)acc{})[g]", st.value);
        let in_t = &reads[st.slot].1;
        let fsum = matches!(accs[st.value], Acc::FSum(_));
        let value = match (st.present, st.wide) {
            _ if fsum => format!("((const f64*)acc{})[g]", st.value),
            (_, Some((mid, top))) => {
                // The 128-bit value; past 38 digits (or past 128 bits) an error.
                let (m, tp) = (
                    format!("((const u64*)acc{mid})[g]"),
                    format!("((const u64*)acc{top})[g]"),
                );
                let v = format!("(i128)(((u128){m} << 64) | (u128){word})");
                let code = checks.len() + 1;
                checks.push(format!(
                    "a decimal sum does not fit {t}; cast the column to Float64 first"
                ));
                write.push_str(&format!(
                    "            if (!(({tp} == ((i64){m} < 0 ? ~0ULL : 0ULL)) && tsr_fits({v}, 38))) atomicMax((u64*)err, {code}ULL);\n"
                ));
                if *t == DataType::Float64 {
                    format!("(f64){v}")
                } else {
                    v
                }
            }
            // min/max: decode the order-preserving word back to the input type.
            (Some(_), None) if in_t.is_unsigned_integer() => format!("({c}){word}"),
            (Some(_), None) => format!("({c})(i64)({word} ^ 0x8000000000000000ULL)"),
            (None, None) => format!("({c}){word}"),
        };
        let valid = match st.present {
            Some(p) => format!("(((const u64*)acc{p})[g] != 0)"),
            None => "1".to_string(),
        };
        init.push_str(&format!("u8 nb{i} = 0; "));
        if *t == DataType::Boolean {
            init.push_str(&format!("u8 bb{i} = 0; "));
            write.push_str(&format!("            bb{i} |= (u8)(({value} & 1) << b);\n"));
            fin.push_str(&format!("        out{vo}[q] = bb{i};\n"));
        } else {
            write.push_str(&format!("            (({c}*)out{vo})[g] = {value};\n"));
        }
        write.push_str(&format!("            nb{i} |= (u8)(({valid} & 1) << b);\n"));
        fin.push_str(&format!("        out{no}[q] = nb{i};\n"));
    }
    let outs: String = outs.concat();
    let err = if checks.is_empty() { "" } else { ", u8* err" };
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_states(const u64* P{ins}, const u8* {i0}{acc_ins}{outs}{err}) {{
    {head}
    u64 groups = P[3];
    u64 octets = (groups + 7) >> 3;
    for (u64 q = (u64)blockIdx.x * blockDim.x + threadIdx.x; q < octets; q += (u64)gridDim.x * blockDim.x) {{
        {init}
        for (u32 b = 0; b < 8; ++b) {{
            u64 g = (q << 3) + b;
            if (g >= groups) break;
            u64 row = P[2] ? 0 : (u64)((const u32*){i0})[g];
            (void)row;
{write}        }}
{fin}    }}
}}
"
    ));
    (s, checks)
}

impl NativeGroupby {
    /// How many outputs `_states` writes.
    fn state_outputs(&self) -> usize {
        let fixed_keys = self.reads[..self.keys]
            .iter()
            .filter(|(_, t)| !is_string(t))
            .count();
        fixed_keys + 2 * self.states.len()
    }

    pub(crate) fn plan(&self, suffix: &str, params: Vec<u64>) -> KernelPlan {
        let cols = 3 * self.reads.len();
        let fsums = self
            .accs
            .iter()
            .filter(|a| matches!(a, Acc::FSum(_)))
            .count();
        let entries: Vec<(&str, usize, usize)> = ENTRIES
            .iter()
            .map(|&(s, ins, outs)| match s {
                "_accumulate" => (s, cols + ins, self.accs.len()),
                "_fsum" => (s, cols + ins, fsums),
                "_states" => (
                    s,
                    cols + ins + self.accs.len(),
                    self.state_outputs() + usize::from(!self.checks.is_empty()),
                ),
                _ => (s, cols + ins, outs),
            })
            .collect();
        plan_of(
            (&self.body, self.hash, &self.name),
            &entries,
            suffix,
            params,
        )
    }

    /// The six plans with no run-time values (what the compile tests build).
    pub fn plans(&self) -> Vec<KernelPlan> {
        ENTRIES.iter().map(|e| self.plan(e.0, Vec::new())).collect()
    }

    /// The hash of the kernel text.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The state schema (keys, then every aggregation's state columns).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

/// The state partition's parts.
pub struct States<B> {
    /// Groups.
    pub rows: usize,
    /// Keys then state columns.
    pub columns: Vec<DeviceArray<B>>,
}

/// The groups of a keyed groupby's rows: how many, each row's table slot (`u32::MAX` for
/// a row with a null key), each slot's group, each group's first row, and the table
/// itself (row + 1 per slot, 0 empty).
pub(crate) struct Grouped<B> {
    pub groups: usize,
    pub slots: Arc<B>,
    pub gid: Arc<B>,
    pub rep: Arc<B>,
    pub table: Arc<B>,
}

/// Runs `_insert` to `_assign` of `g` (keys only) over the `n` rows whose columns are
/// `cols`, with the header `params` (`n`, the table mask, 0, 0, then the columns').
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub(crate) fn group<D: Device>(
    device: &D,
    g: &NativeGroupby,
    params: &[u64],
    cols: &[&D::Buf],
    n: usize,
) -> Result<Grouped<D::Buf>> {
    let table = params[1] as usize + 1;
    let rows_grid = grid_for(n as u64, device.sms());
    let mut made = device.launch_grid(
        &g.plan("_insert", params.to_vec()),
        rows_grid,
        cols,
        &[Output::Filled(table * 4, 0), Output::Written(n * 4)],
    )?;
    let slots = Arc::new(made.pop().ok_or_else(|| Error::Internal("insert".into()))?);
    let table_buf = Arc::new(made.pop().ok_or_else(|| Error::Internal("insert".into()))?);
    let first = device
        .launch_grid(
            &g.plan("_minrow", params.to_vec()),
            rows_grid,
            &joined(cols, &[&slots]),
            &[Output::Filled(table * 4, 0xff)],
        )?
        .pop()
        .map(Arc::new)
        .ok_or_else(|| Error::Internal("minrow".into()))?;
    let counts = device.launch_grid(
        &g.plan("_firstcount", params.to_vec()),
        rows_grid,
        &joined(cols, &[&slots, &first]),
        &[Output::Written(rows_grid as usize * 4)],
    )?;
    let counts = device.download(&counts[0], rows_grid as usize * 4)?;
    let mut assign = params.to_vec();
    let mut total = 0usize;
    for c in le_words(&counts) {
        assign.push(total as u64);
        total += c as usize;
    }
    let mut made = device.launch_grid(
        &g.plan("_assign", assign),
        rows_grid,
        &joined(cols, &[&slots, &first]),
        &[Output::Written(table * 4), Output::Written(total * 4)],
    )?;
    let rep = Arc::new(made.pop().ok_or_else(|| Error::Internal("assign".into()))?);
    let gid = Arc::new(made.pop().ok_or_else(|| Error::Internal("assign".into()))?);
    Ok(Grouped {
        groups: total,
        slots,
        gid,
        rep,
        table: table_buf,
    })
}

/// Each row's bucket among `n` by the hash of `g`'s keys, on the device.
fn bucket_buf<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<D::Buf> {
    let rows = b.rows;
    let ColumnArgs { params: tail, bufs } = column_args(b, g.reads.iter().map(|(i, _)| *i))?;
    let mut params = vec![rows as u64, 0, n as u64, 0];
    params.extend(tail);
    let cols: Vec<&D::Buf> = bufs.iter().map(|x| x.as_ref()).collect();
    device
        .launch_grid(
            &g.plan("_bucket", params),
            grid_for(rows as u64, device.sms()),
            &cols,
            &[Output::Written(rows * 4)],
        )?
        .pop()
        .ok_or_else(|| Error::Internal("the bucket kernel gave no output".into()))
}

/// Each row's bucket among `n` (the hash of `g`'s keys), on the host.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub fn buckets<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<Vec<u32>> {
    let buf = bucket_buf(device, g, b, n)?;
    Ok(le_words(&device.download(&buf, b.rows * 4)?).collect())
}

/// `b` split into `n` partitions by the hash of `g`'s keys (equal keys land in the same
/// output on every partition; rows keep their order within each): each row's bucket,
/// the rows sorted stably by bucket, each bucket's rows gathered. Rows and columns of each.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a partition of
/// `u32::MAX` rows or more.
#[allow(clippy::type_complexity)]
pub fn partition<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<Vec<(usize, Vec<DeviceArray<D::Buf>>)>> {
    let rows = b.rows;
    if rows >= u32::MAX as usize {
        return Err(Error::invalid(
            "hash_partition",
            format!("a partition of {rows} rows; the device partitions up to 2^32 - 2 rows"),
        ));
    }
    let buckets = bucket_buf(device, g, b, n)?;
    let counts = super::scan::histogram(device, &buckets, rows, n)?;
    let bits = u64::BITS - ((n - 1) as u64).leading_zeros();
    let perm = super::scan::sort_by_key(
        device,
        Arc::new(buckets),
        Arc::new(super::scan::iota(device, rows)?),
        rows,
        bits,
    )?
    .values;
    let mut start = 0usize;
    let mut out = Vec::with_capacity(n);
    for c in counts {
        let c = c as usize;
        out.push((c, super::program::gather_from(device, b, &perm, start, c)?));
        start += c;
    }
    Ok(out)
}

/// The rows of each group, in row order: `sorted[starts[g] .. starts[g] + counts[g]]`
/// (`u32` row numbers, `u64` starts, `u32` counts).
pub(crate) struct ByGroup<B> {
    pub counts: B,
    pub sorted: Arc<B>,
    pub starts: B,
}

/// [`ByGroup`] of the `n` rows grouped into `groups` (`slots` and `gid` as
/// [`group`] gives them; `params` the groupby's header with `P[2]` = 0 for keyed rows):
/// each row's group and each group's size (`_rowgid`, integer atomics), the rows sorted
/// stably by group, the groups' first places.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub(crate) fn by_group<D: Device>(
    device: &D,
    g: &NativeGroupby,
    params: &[u64],
    cols: &[&D::Buf],
    (slots, gid): (&D::Buf, &D::Buf),
    (n, groups): (usize, usize),
) -> Result<ByGroup<D::Buf>> {
    let mut params = params.to_vec();
    params[3] = groups as u64;
    let mut made = device.launch_grid(
        &g.plan("_rowgid", params),
        grid_for(n as u64, device.sms()),
        &joined(cols, &[slots, gid]),
        &[Output::Filled(groups * 4, 0), Output::Written(n * 4)],
    )?;
    let row_gid = Arc::new(made.pop().ok_or_else(|| Error::Internal("rowgid".into()))?);
    let counts = made.pop().ok_or_else(|| Error::Internal("rowgid".into()))?;
    let bits = u64::BITS - (groups as u64).leading_zeros();
    let rows = Arc::new(super::scan::iota(device, n)?);
    let sorted = super::scan::sort_by_key(device, row_gid, rows, n, bits)?.values;
    let (starts, _) = super::scan::exclusive(device, &counts, groups)?;
    Ok(ByGroup {
        counts,
        sorted,
        starts,
    })
}

/// Runs `g` over `b` on `device`.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a partition of
/// `u32::MAX` rows or more (rows are numbered in 32 bits).
pub fn run<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
) -> Result<States<D::Buf>> {
    let n = b.rows;
    if n >= u32::MAX as usize {
        return Err(Error::invalid(
            "aggregate",
            format!("a partition of {n} rows; the device groups up to 2^32 - 2 rows per partition (repartition it)"),
        ));
    }
    let global = g.keys == 0;
    let table = (2 * n).max(16).next_power_of_two();
    let mut params = vec![n as u64, table as u64 - 1, u64::from(global), 0];
    let ColumnArgs { params: tail, bufs } = column_args(b, g.reads.iter().map(|(i, _)| *i))?;
    params.extend(tail);
    let placeholder = placeholder(device, &bufs)?;
    let cols: Vec<&D::Buf> = bufs.iter().map(|x| x.as_ref()).collect();
    let rows_grid = grid_for(n as u64, device.sms());
    // Groups: slots, first rows, numbering in row order.
    let (groups, slots, gid, rep) = if global {
        (
            1usize,
            placeholder.clone(),
            placeholder.clone(),
            placeholder.clone(),
        )
    } else {
        let grouped = group(device, g, &params, &cols, n)?;
        (grouped.groups, grouped.slots, grouped.gid, grouped.rep)
    };
    params[3] = groups as u64;
    // Accumulators: counts and sums start at 0, minimums at all ones, maximums at 0.
    let fills: Vec<Output> = g
        .accs
        .iter()
        .map(|a| match a {
            Acc::Min(_) => Output::Filled(groups * 8, 0xff),
            _ => Output::Filled(groups * 8, 0),
        })
        .collect();
    let mut accs = device.launch_grid(
        &g.plan("_accumulate", params.clone()),
        rows_grid,
        &joined(&cols, &[&slots, &gid]),
        &fills,
    )?;
    if g.accs.iter().any(|a| matches!(a, Acc::FSum(_))) {
        // Float sums in row order: the rows sorted stably by group, each group folded by
        // one thread.
        let ByGroup {
            counts,
            sorted,
            starts,
        } = by_group(device, g, &params, &cols, (&slots, &gid), (n, groups))?;
        let sums = device.launch_grid(
            &g.plan("_fsum", params.clone()),
            grid_for(groups as u64, device.sms()),
            &joined(&cols, &[&sorted, &starts, &counts]),
            &vec![
                Output::Written(groups * 8);
                g.accs.iter().filter(|a| matches!(a, Acc::FSum(_))).count()
            ],
        )?;
        let mut sums = sums.into_iter();
        for (a, acc) in g.accs.iter().enumerate() {
            if matches!(acc, Acc::FSum(_)) {
                accs[a] = sums
                    .next()
                    .ok_or_else(|| Error::Internal("the fsum kernel gave too few sums".into()))?;
            }
        }
    }
    let mut extra: Vec<&D::Buf> = vec![&rep];
    extra.extend(accs.iter());
    let octets = groups.div_ceil(8);
    let mut sizes = Vec::new();
    for (_, t) in g.reads[..g.keys].iter().filter(|(_, t)| !is_string(t)) {
        sizes.push(match fixed_width(t) {
            Some(w) => groups * w,
            None => octets,
        });
    }
    for st in &g.states {
        let t = st.field.data_type();
        sizes.push(match fixed_width(t) {
            Some(w) => groups * w,
            None => octets,
        });
        sizes.push(octets);
    }
    let written: Vec<Output> = sizes.iter().map(|&s| Output::Written(s)).collect();
    let outs = launch_checked(
        device,
        &g.plan("_states", params),
        grid_for(octets as u64, device.sms()),
        &joined(&cols, &extra),
        written,
        ("sum", &g.checks),
    )?;
    let mut outs = outs.into_iter().zip(sizes).map(|(buf, len)| DeviceBytes {
        buf: Arc::new(buf),
        len,
    });
    let mut next = || {
        outs.next()
            .ok_or_else(|| Error::Internal("the states kernel gave too few outputs".into()))
    };
    let mut columns = Vec::with_capacity(g.keys + g.states.len());
    for (i, t) in &g.reads[..g.keys] {
        columns.push(if is_string(t) {
            super::strings::gather(device, &b.columns[*i], &rep, groups)?
        } else {
            DeviceArray {
                data_type: t.clone(),
                len: groups,
                offset: 0,
                nulls: None,
                buffers: vec![next()?],
                children: Vec::new(),
            }
        });
    }
    for st in &g.states {
        let values = next()?;
        let nulls = next()?;
        columns.push(DeviceArray {
            data_type: st.field.data_type().clone(),
            len: groups,
            offset: 0,
            nulls: Some(DeviceNulls {
                bytes: nulls,
                offset: 0,
            }),
            buffers: vec![values],
            children: Vec::new(),
        });
    }
    Ok(States {
        rows: groups,
        columns,
    })
}

//! The kernel text of a groupby structure: its entries (see the parent module) in CUDA C
//! that also compiles as host C++ under the shim.

use arrow_schema::DataType;

use super::plan::{Acc, State};
use crate::launch::{hash_step, key_equal, valid_at, value_at};
use crate::program::emit::{ctype, is_string};

/// The entries: suffix, inputs beyond the column buffers, outputs.
pub(super) const ENTRIES: [(&str, usize, usize); 9] = [
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
pub(super) fn ordered(t: &DataType, v: &str) -> String {
    if t.is_unsigned_integer() {
        format!("(u64){v}")
    } else {
        format!("((u64)(i64){v} ^ 0x8000000000000000ULL)")
    }
}

/// The kernel text, and the errors `_states` can raise (by code - 1).
pub(super) fn text(
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

//! The C text of one row of a fused program: every step's expressions as statements over
//! typed locals (`v<k>` the value, `o<k>` whether it is valid), in step order, so that a
//! filter after a projection reads the projection's locals as the CPU backend reads its
//! columns. Types follow the protocol exactly as the CPU backend does: each binary
//! operand is cast to the operand type [`binary_types`] chose, literals are cast on the
//! host by arrow's own cast (so a literal that does not fit its column's type is null
//! there as here), and column casts follow arrow's safe casts (a value out of the target's
//! range is null).
//!
//! What the generator does not cover it refuses with the reason ([`Refusal`]): the
//! backend then runs the program on the host.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow_schema::{DataType, Schema, TimeUnit};
use tessera_core::frame::expr::{
    binary_types, decimal_types, is_in_operand, BinaryOp, DatePart, DecimalPlan, Expr, Literal,
    StrFunc,
};

/// Why a program does not run natively (shown by `explain()` and the fallback record).
pub(crate) type Refusal = String;

/// A value of the row: the locals holding it, its type, and the literal it came from
/// (cast on the host when an operator needs another type).
#[derive(Debug, Clone)]
pub(crate) struct Val {
    pub v: String,
    pub o: String,
    pub t: DataType,
    lit: Option<Literal>,
    /// For a string: the local holding its length in bytes (`v` is then its first byte).
    len: String,
}

/// The C type a kernel holds a value of `t` in (booleans as 0/1 bytes, decimals as their
/// unscaled integers).
pub(crate) fn ctype(t: &DataType) -> Option<&'static str> {
    use DataType::*;
    Some(match t {
        Boolean => "u8",
        Int8 => "i8",
        Int16 => "i16",
        Int32 | Date32 | Time32(_) => "i32",
        Int64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => "i64",
        UInt8 => "u8",
        UInt16 => "u16",
        UInt32 => "u32",
        UInt64 => "u64",
        Float32 => "f32",
        Float64 => "f64",
        Decimal128(_, _) => "i128",
        Decimal64(_, _) => "i64",
        _ => return None,
    })
}

/// Strings and binary strings with 32- or 64-bit offsets: gathered whole by the string
/// kernels, never computed on.
pub(crate) fn is_string(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

/// The C type of a string column's offsets as the device holds it.
pub(crate) fn offset_ctype(t: &DataType) -> &'static str {
    match crate::column::storage(t) {
        DataType::LargeUtf8 | DataType::LargeBinary => "i64",
        _ => "i32",
    }
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

fn is_signed(t: &DataType) -> bool {
    t.is_signed_integer()
}

/// Whether values of `t` compare as integers in a kernel (integers, booleans, dates,
/// times, timestamps, durations).
fn orders_as_int(t: &DataType) -> bool {
    use DataType::*;
    is_int(t)
        || matches!(
            t,
            Boolean
                | Date32
                | Date64
                | Time32(_)
                | Time64(_)
                | Timestamp(_, _)
                | Duration(_)
                | Decimal128(_, _)
                | Decimal64(_, _)
        )
}

/// The range of an integer type as (signed lower bound, unsigned upper bound).
fn int_range(t: &DataType) -> (i64, u64) {
    use DataType::*;
    match t {
        Int8 => (i64::from(i8::MIN), i8::MAX as u64),
        Int16 => (i64::from(i16::MIN), i16::MAX as u64),
        Int32 => (i64::from(i32::MIN), i32::MAX as u64),
        Int64 => (i64::MIN, i64::MAX as u64),
        UInt8 => (0, u64::from(u8::MAX)),
        UInt16 => (0, u64::from(u16::MAX)),
        UInt32 => (0, u64::from(u32::MAX)),
        _ => (0, u64::MAX),
    }
}

fn int_bits(t: &DataType) -> u32 {
    use DataType::*;
    match t {
        Int8 | UInt8 => 8,
        Int16 | UInt16 => 16,
        Int32 | UInt32 => 32,
        _ => 64,
    }
}

/// Emits the statements of one row.
pub(crate) struct Emitter {
    /// Input columns read, by slot (slot `j` reads buffers `in<2j>` and `in<2j+1>`).
    pub reads: Vec<usize>,
    /// Literal words, two per literal (the value's bits, whether it is valid).
    pub literals: Vec<u64>,
    /// The statements.
    pub lines: Vec<String>,
    /// The errors a row can raise (decimal overflow), by code - 1: the kernels flag the
    /// largest code met in their `err` word.
    pub checks: Vec<String>,
    read_vals: Vec<(usize, Val)>,
    next: usize,
}

impl Emitter {
    pub fn new() -> Emitter {
        Emitter {
            reads: Vec::new(),
            literals: Vec::new(),
            lines: Vec::new(),
            checks: Vec::new(),
            read_vals: Vec::new(),
            next: 0,
        }
    }

    fn fresh(&mut self) -> (String, String) {
        let k = self.next;
        self.next += 1;
        (format!("v{k}"), format!("o{k}"))
    }

    /// A new local of type `t` set to `value` and `valid`.
    fn local(&mut self, t: &DataType, value: &str, valid: &str) -> Result<Val, Refusal> {
        let c = ctype(t).ok_or_else(|| format!("a {t} value inside an expression"))?;
        let (v, o) = self.fresh();
        self.lines
            .push(format!("{c} {v} = {value}; u8 {o} = (u8)({valid});"));
        Ok(Val {
            v,
            o,
            t: t.clone(),
            lit: None,
            len: String::new(),
        })
    }

    /// Input column `index` of type `t`, read at `row` (once per row, however often used).
    /// A string column gives its validity alone (`v` empty): only null tests and the
    /// gather of whole strings read it.
    pub fn read(&mut self, index: usize, t: &DataType) -> Result<Val, Refusal> {
        if let Some((_, v)) = self.read_vals.iter().find(|(i, _)| *i == index) {
            return Ok(v.clone());
        }
        if is_string(t) {
            let j = self.reads.len();
            self.reads.push(index);
            let (v, o) = self.fresh();
            let (start, len) = (format!("a{}", &v[1..]), format!("n{}", &v[1..]));
            let off = offset_ctype(t);
            self.lines.push(format!(
                "u64 {start} = (u64)(i64)((const {off}*)in{})[C[{}] + row]; \
                 u64 {len} = (u64)(i64)((const {off}*)in{})[C[{}] + row + 1] - {start}; \
                 const u8* {v} = in{} + {start}; \
                 u8 {o} = C[{}] ? tsr_bit(in{}, C[{}] + row) : 1;",
                3 * j,
                3 * j,
                3 * j,
                3 * j,
                3 * j + 1,
                3 * j + 2,
                3 * j + 2,
                3 * j + 1
            ));
            let val = Val {
                v,
                o,
                t: t.clone(),
                lit: None,
                len,
            };
            self.read_vals.push((index, val.clone()));
            return Ok(val);
        }
        let c = ctype(t).ok_or_else(|| format!("a {t} column is read"))?;
        let j = self.reads.len();
        self.reads.push(index);
        let (vals, nulls) = (3 * j, 3 * j + 2);
        let value = if *t == DataType::Boolean {
            format!("tsr_bit(in{vals}, C[{}] + row)", 3 * j)
        } else {
            format!("((const {c}*)in{vals})[C[{}] + row]", 3 * j)
        };
        let valid = format!(
            "C[{}] ? tsr_bit(in{nulls}, C[{}] + row) : 1",
            3 * j + 2,
            3 * j + 1
        );
        let v = self.local(t, &value, &valid)?;
        self.read_vals.push((index, v.clone()));
        Ok(v)
    }

    /// A literal in its own type (Int64, Float64, Boolean; null and strings wait for a
    /// cast to the type an operator gives them).
    fn literal(&mut self, l: &Literal) -> Result<Val, Refusal> {
        let t = match l {
            Literal::Null => DataType::Null,
            Literal::Bool(_) => DataType::Boolean,
            Literal::Int(_) => DataType::Int64,
            Literal::Float(_) => DataType::Float64,
            Literal::Str(_) => DataType::Utf8,
        };
        if matches!(l, Literal::Null | Literal::Str(_)) {
            return Ok(Val {
                v: String::new(),
                o: String::new(),
                t,
                lit: Some(l.clone()),
                len: String::new(),
            });
        }
        let mut v = self.host_literal(&literal_array(l), &t)?;
        v.lit = Some(l.clone());
        Ok(v)
    }

    /// A one-row host array as a parameter literal of type `t`.
    fn host_literal(&mut self, a: &ArrayRef, t: &DataType) -> Result<Val, Refusal> {
        let c = ctype(t).ok_or_else(|| format!("a {t} literal"))?;
        if *t == DataType::Null {
            return Err(format!("a {t} literal"));
        }
        if let DataType::Decimal128(_, _) = t {
            let data = a.to_data();
            let valid = a.is_valid(0);
            let at = data.offset() * 16;
            let raw = data.buffers()[0]
                .as_slice()
                .get(at..at + 16)
                .ok_or_else(|| format!("a {t} literal without its value"))?;
            let v = i128::from_le_bytes(raw.try_into().map_err(|_| "a decimal literal")?);
            let k = self.literals.len();
            let v = if valid { v } else { 0 };
            self.literals.push(v as u64);
            self.literals.push((v >> 64) as u64);
            self.literals.push(u64::from(valid));
            return self.local(
                t,
                &format!("(i128)(((u128)L[{}] << 64) | (u128)L[{k}])", k + 1),
                &format!("L[{}]", k + 2),
            );
        }
        let data = a.to_data();
        let valid = a.is_valid(0);
        let bits: u64 = if !valid {
            0
        } else if *t == DataType::Boolean {
            u64::from(
                a.as_any()
                    .downcast_ref::<BooleanArray>()
                    .is_some_and(|b| b.value(0)),
            )
        } else {
            let w = crate::column::fixed_width(t).ok_or_else(|| format!("a {t} literal"))?;
            let buf = data.buffers()[0].as_slice();
            let at = data.offset() * w;
            let raw = buf
                .get(at..at + w)
                .ok_or_else(|| format!("a {t} literal without its value"))?;
            let mut word = [0u8; 8];
            word[..w].copy_from_slice(raw);
            let u = u64::from_le_bytes(word);
            match t {
                DataType::Float32 => f64::from(f32::from_bits(u as u32)).to_bits(),
                _ if is_signed(t) || matches!(t, DataType::Date32 | DataType::Time32(_)) => {
                    // Sign-extend the narrower integer.
                    let shift = 64 - 8 * w as u32;
                    (((u << shift) as i64) >> shift) as u64
                }
                _ => u,
            }
        };
        let k = self.literals.len();
        self.literals.push(bits);
        self.literals.push(u64::from(valid));
        let value = match t {
            DataType::Float32 | DataType::Float64 => format!("({c})tsr_f64_of(L[{k}])"),
            _ => format!("({c})L[{k}]"),
        };
        self.local(t, &value, &format!("L[{}]", k + 1))
    }

    /// `x` as type `to`: the host's cast for a literal, a kernel cast otherwise.
    pub fn cast(&mut self, x: Val, to: &DataType) -> Result<Val, Refusal> {
        if x.t == *to {
            return Ok(x);
        }
        if is_string(&x.t) && is_string(to) {
            // The same bytes under 32- or 64-bit offsets: only the type changes.
            let mut x = self.string_of(x)?;
            x.t = to.clone();
            return Ok(x);
        }
        if let Some(l) = &x.lit {
            let cast = arrow_cast::cast(&literal_array(l), to)
                .map_err(|e| format!("the literal {l:?} as {to}: {e}"))?;
            return self.host_literal(&cast, to);
        }
        let (from, v, o) = (&x.t, x.v.as_str(), x.o.as_str());
        let Some(c) = ctype(to) else {
            return Err(format!("a cast to {to}"));
        };
        let float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
        if *from == DataType::Null {
            return self.local(to, &format!("({c})0"), "0");
        }
        if let DataType::Decimal128(p, scale) = to {
            let (from_scale, ok) = match from {
                DataType::Decimal128(_, s1) | DataType::Decimal64(_, s1) => (*s1, true),
                t if is_int(t) => (0, true),
                _ => (0, false),
            };
            if !ok || *scale < from_scale {
                return Err(format!("a cast from {from} to {to}"));
            }
            // Up to the new scale (null on overflow), then null past the precision, as
            // arrow's safe cast.
            let (r, f) = self.fresh();
            self.lines.push(format!(
                "i128 {r}; u8 {f} = (u8)({o} && !tsr_mul128((i128){v}, tsr_p10({}), &{r}) && tsr_fits({r}, {p}));",
                scale - from_scale
            ));
            return Ok(Val {
                v: r,
                o: f,
                t: to.clone(),
                lit: None,
                len: String::new(),
            });
        }
        let (value, valid) = if is_int(from) && is_int(to) {
            let (lo, hi) = int_range(to);
            let (flo, fhi) = int_range(from);
            let fits = if is_signed(from) {
                match (flo >= lo, fhi <= hi) {
                    (true, true) => "1".to_string(),
                    _ if is_signed(to) => format!("(i64){v} >= {lo}LL && (i64){v} <= {hi}LL"),
                    _ => format!("(i64){v} >= 0 && (u64)(i64){v} <= {hi}ULL"),
                }
            } else if fhi <= hi {
                "1".to_string()
            } else {
                format!("(u64){v} <= {hi}ULL")
            };
            (format!("({c}){v}"), format!("{o} && ({fits})"))
        } else if (is_int(from) || float(from)) && float(to) {
            (format!("({c}){v}"), o.to_string())
        } else if float(from) && is_int(to) {
            let (lo, hi) = int_range(to);
            let inside = match (int_bits(to), is_signed(to)) {
                (64, true) => format!(
                    "(f64){v} >= -9223372036854775808.0 && (f64){v} < 9223372036854775808.0"
                ),
                (64, false) => format!("(f64){v} > -1.0 && (f64){v} < 18446744073709551616.0"),
                _ => format!("(f64){v} > {}.0 && (f64){v} < {}.0", lo - 1, hi + 1),
            };
            let (iv, io) = self.fresh();
            self.lines
                .push(format!("u8 {io} = (u8)({o} && ({inside}));"));
            self.lines
                .push(format!("{c} {iv} = {io} ? ({c}){v} : ({c})0;"));
            return Ok(Val {
                v: iv,
                o: io,
                t: to.clone(),
                lit: None,
                len: String::new(),
            });
        } else if *from == DataType::Boolean && (is_int(to) || float(to)) {
            (format!("({c}){v}"), o.to_string())
        } else if (is_int(from) || float(from)) && *to == DataType::Boolean {
            (format!("(u8)({v} != 0)"), o.to_string())
        } else {
            return Err(format!("a cast from {from} to {to}"));
        };
        self.local(to, &value, &valid)
    }

    /// `e` over the columns of `schema`, whose values `column` gives.
    pub fn expr(
        &mut self,
        e: &Expr,
        schema: &Schema,
        column: &mut dyn FnMut(&mut Emitter, &str) -> Result<Val, Refusal>,
    ) -> Result<Val, Refusal> {
        let type_of = |x: &Expr| {
            x.data_type(schema)
                .map_err(|err| format!("{x} does not type-check: {err}"))
        };
        match e {
            Expr::Column(c) => column(self, c),
            Expr::Literal(l) => self.literal(l),
            Expr::Binary { op, left, right } => {
                let (lt, rt) = (type_of(left)?, type_of(right)?);
                if let Some(plan) = decimal_types(*op, left, &lt, right, &rt) {
                    let plan = plan.map_err(|why| format!("{e}: {why}"))?;
                    return self.decimal(*op, (left, right), &plan, e, schema, column);
                }
                let (operand, _) = binary_types(*op, left, &lt, right, &rt)
                    .map_err(|why| format!("{e}: {why}"))?;
                let l = self.expr(left, schema, column)?;
                let r = self.expr(right, schema, column)?;
                let mut l = self.cast(l, &operand)?;
                let mut r = self.cast(r, &operand)?;
                if is_string(&operand) {
                    l = self.string_of(l)?;
                    r = self.string_of(r)?;
                }
                self.binary(*op, &l, &r, &operand, e)
            }
            Expr::Not(x) => {
                let a = self.expr(x, schema, column)?;
                if a.t != DataType::Boolean {
                    return Err(format!("not of a {} value", a.t));
                }
                self.local(&DataType::Boolean, &format!("(u8)({} ^ 1)", a.v), &a.o)
            }
            Expr::Negate(x) => {
                let a = self.expr(x, schema, column)?;
                let c = ctype(&a.t).unwrap_or("");
                let value = if is_signed(&a.t) {
                    format!("({c})(0ULL - (u64)(i64){})", a.v)
                } else if matches!(a.t, DataType::Float32 | DataType::Float64) {
                    format!("-{}", a.v)
                } else {
                    return Err(format!("negation of a {} value", a.t));
                };
                let t = a.t.clone();
                self.local(&t, &value, &a.o)
            }
            Expr::IsNull(x) | Expr::IsNotNull(x) => {
                let a = self.expr(x, schema, column)?;
                let valid = if a.t == DataType::Null {
                    "0".to_string()
                } else if a.o.is_empty() {
                    // A string literal: never null.
                    "1".to_string()
                } else {
                    a.o.clone()
                };
                let value = if matches!(e, Expr::IsNull(_)) {
                    format!("(u8)!({valid})")
                } else {
                    valid
                };
                self.local(&DataType::Boolean, &value, "1")
            }
            Expr::IsNan(x) => {
                let a = self.expr(x, schema, column)?;
                if a.lit.is_some() || ctype(&a.t).is_none() {
                    return Err(format!("is_nan of a {} value", a.t));
                }
                let value = if matches!(a.t, DataType::Float32 | DataType::Float64) {
                    format!("(u8)({0} != {0})", a.v)
                } else {
                    "0".to_string()
                };
                self.local(&DataType::Boolean, &value, &a.o)
            }
            Expr::FillNull { expr, value } => {
                let t = type_of(expr)?;
                let x = self.expr(expr, schema, column)?;
                let x = self.cast(x, &t)?;
                let f = self.expr(value, schema, column)?;
                let f = self.cast(f, &t)?;
                self.local(
                    &t,
                    &format!("{} ? {} : {}", x.o, x.v, f.v),
                    &format!("{} || {}", x.o, f.o),
                )
            }
            Expr::Cast { expr, to } => {
                let x = self.expr(expr, schema, column)?;
                self.cast(x, to)
            }
            Expr::When {
                branches,
                otherwise,
            } => {
                let t = type_of(e)?;
                let x = self.expr(otherwise, schema, column)?;
                let x = self.cast(x, &t)?;
                let out = self.local(&t, &x.v, &x.o)?;
                // The first branch whose condition holds wins: later ones are applied
                // first and overwritten.
                for (cond, value) in branches.iter().rev() {
                    let c = self.expr(cond, schema, column)?;
                    let c = self.cast(c, &DataType::Boolean)?;
                    let v = self.expr(value, schema, column)?;
                    let v = self.cast(v, &t)?;
                    self.lines.push(format!(
                        "if ({} && {}) {{ {} = {}; {} = {}; }}",
                        c.o, c.v, out.v, v.v, out.o, v.o
                    ));
                }
                Ok(out)
            }
            Expr::Coalesce(values) => {
                let t = type_of(e)?;
                let Some((last, rest)) = values.split_last() else {
                    return Err("coalesce of nothing".into());
                };
                let x = self.expr(last, schema, column)?;
                let x = self.cast(x, &t)?;
                let out = self.local(&t, &x.v, &x.o)?;
                for value in rest.iter().rev() {
                    let v = self.expr(value, schema, column)?;
                    let v = self.cast(v, &t)?;
                    self.lines.push(format!(
                        "if ({}) {{ {} = {}; {} = 1; }}",
                        v.o, out.v, v.v, out.o
                    ));
                }
                Ok(out)
            }
            Expr::Contains { expr, pattern } => {
                let x = self.expr(expr, schema, column)?;
                if !is_string(&x.t) {
                    return Err(format!("contains of a {} value", x.t));
                }
                self.string_test(x, "contains", pattern)
            }
            Expr::Str {
                func: StrFunc::StartsWith(p),
                expr,
            } => {
                let x = self.expr(expr, schema, column)?;
                self.string_test(x, "starts", p)
            }
            Expr::Str {
                func: StrFunc::EndsWith(p),
                expr,
            } => {
                let x = self.expr(expr, schema, column)?;
                self.string_test(x, "ends", p)
            }
            Expr::DatePart { expr, part } => {
                let x = self.expr(expr, schema, column)?;
                if x.lit.is_some() {
                    return Err(format!("a date part of a literal ({e})"));
                }
                let per_day: i64 = match &x.t {
                    DataType::Date32 => 1,
                    DataType::Date64 => 86_400_000,
                    DataType::Timestamp(unit, None) => match unit {
                        TimeUnit::Second => 86_400,
                        TimeUnit::Millisecond => 86_400_000,
                        TimeUnit::Microsecond => 86_400_000_000,
                        TimeUnit::Nanosecond => 86_400_000_000_000,
                    },
                    other => return Err(format!("a date part of a {other} value")),
                };
                let v = &x.v;
                let value = match part {
                    DatePart::Hour | DatePart::Minute | DatePart::Second => {
                        let (per_hour, unit_of) = (per_day / 24, |p: DatePart| match p {
                            DatePart::Hour => (1, 24),
                            DatePart::Minute => (60, 60),
                            _ => (3600, 60),
                        });
                        let (split, modulo) = unit_of(*part);
                        format!(
                            "(i32)tsr_floormod(tsr_floordiv((i64){v}, {}LL), {modulo}LL)",
                            per_hour / split
                        )
                    }
                    _ => {
                        let code = match part {
                            DatePart::Year => 0,
                            DatePart::Month => 1,
                            DatePart::Day => 2,
                            DatePart::Weekday => 3,
                            DatePart::Quarter => 4,
                            _ => 5,
                        };
                        format!("tsr_date_part(tsr_floordiv((i64){v}, {per_day}LL), {code})")
                    }
                };
                let o = x.o.clone();
                self.local(&DataType::Int32, &value, &o)
            }
            Expr::Str {
                func: StrFunc::Like(pattern),
                expr,
            } => {
                let x = self.expr(expr, schema, column)?;
                self.like(x, pattern)
            }
            Expr::IsIn { expr, values } => {
                let t = type_of(expr)?;
                let operand =
                    is_in_operand(expr, &t, values).map_err(|why| format!("{e}: {why}"))?;
                let x = self.expr(expr, schema, column)?;
                let mut x = self.cast(x, &operand)?;
                if is_string(&operand) {
                    x = self.string_of(x)?;
                }
                let mut terms = Vec::new();
                for v in values.iter().filter(|v| **v != Literal::Null) {
                    let w = self.literal(v)?;
                    let mut w = self.cast(w, &operand)?;
                    if is_string(&operand) {
                        w = self.string_of(w)?;
                    }
                    // A value that does not fit the operand type matches nothing.
                    terms.push(format!("({} && {})", w.o, self.equal(&x, &w)?));
                }
                let any = if terms.is_empty() {
                    "0".to_string()
                } else {
                    terms.join(" || ")
                };
                let null_matches = u8::from(values.contains(&Literal::Null));
                self.local(
                    &DataType::Boolean,
                    &format!("{} ? (u8)({any}) : (u8){null_matches}", x.o),
                    "1",
                )
            }
            other => Err(format!("{} has no device kernel yet", describe(other))),
        }
    }

    /// `left op right` with a decimal side, as the CPU backend computes it: a comparison in
    /// the planned operand type (both sides cast there, safely), exact `+ - *` into the
    /// planned result with a row error on overflow (and past 38 digits when the type is
    /// capped there), anything planned as floats refused for now.
    fn decimal(
        &mut self,
        op: BinaryOp,
        (left, right): (&Expr, &Expr),
        plan: &DecimalPlan,
        e: &Expr,
        schema: &Schema,
        column: &mut dyn FnMut(&mut Emitter, &str) -> Result<Val, Refusal>,
    ) -> Result<Val, Refusal> {
        let l = self.expr(left, schema, column)?;
        let r = self.expr(right, schema, column)?;
        // A Decimal64 operand at the planned scale is read as it is (its unscaled values
        // are the planned ones), as the CPU backend does.
        let operand = |em: &mut Emitter, x: Val, want: &DataType| match (&x.t, want) {
            (DataType::Decimal64(_, s), DataType::Decimal128(_, to)) if s == to => Ok(x),
            _ => em.cast(x, want),
        };
        match &plan.result {
            DataType::Boolean => {
                let l = self.cast(l, &plan.left)?;
                let r = self.cast(r, &plan.right)?;
                self.binary(op, &l, &r, &plan.operand, e)
            }
            DataType::Decimal128(p, scale)
                if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) =>
            {
                let l = operand(self, l, &plan.left)?;
                let r = operand(self, r, &plan.right)?;
                let f = match op {
                    BinaryOp::Add => "tsr_add128",
                    BinaryOp::Sub => "tsr_sub128",
                    _ => "tsr_mul128",
                };
                let (v, o) = self.fresh();
                let capped = if *p >= tessera_core::frame::expr::DECIMAL128_MAX_PRECISION {
                    format!(" || !tsr_fits({v}, 38)")
                } else {
                    String::new()
                };
                let code = self.checks.len() + 1;
                self.checks.push(format!(
                    "{e}: a value does not fit Decimal128({p}, {scale}); cast an operand to Float64"
                ));
                self.lines.push(format!(
                    "i128 {v}; u8 {o} = (u8)({} & {}); if ({f}((i128){}, (i128){}, &{v}){capped}) {{ if (keep && {o}) atomicMax((u64*)err, {code}ULL); }}",
                    l.o, r.o, l.v, r.v
                ));
                Ok(Val {
                    v,
                    o,
                    t: plan.result.clone(),
                    lit: None,
                    len: String::new(),
                })
            }
            other => Err(format!(
                "{e} computes in {other} (decimal division or a float side)"
            )),
        }
    }

    /// `x` as a string the kernel reads (a string literal's bytes go into `P`: its length,
    /// then its bytes packed little-endian into words).
    fn string_of(&mut self, x: Val) -> Result<Val, Refusal> {
        if !x.len.is_empty() {
            return Ok(x);
        }
        let Some(Literal::Str(text)) = &x.lit else {
            return Err(format!("a {} value as a string", x.t));
        };
        let bytes = text.as_bytes();
        let k = self.literals.len();
        self.literals.push(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.literals.push(u64::from_le_bytes(w));
        }
        let (v, o) = self.fresh();
        let len = format!("n{}", &v[1..]);
        self.lines.push(format!(
            "const u8* {v} = (const u8*)(L + {}); u64 {len} = L[{k}]; u8 {o} = 1;",
            k + 1
        ));
        Ok(Val {
            v,
            o,
            t: x.t,
            lit: None,
            len,
        })
    }

    /// SQL `LIKE` with `%` wildcards (a pattern with `_` or an escape is refused): the
    /// text before the first `%` a prefix, after the last a suffix, the pieces between
    /// found in order, each leftmost — which for `%` alone decides the match.
    fn like(&mut self, x: Val, pattern: &str) -> Result<Val, Refusal> {
        if pattern.contains(['_', '\\']) {
            return Err(format!(
                "like({pattern:?}): `_` and escapes have no device kernel yet"
            ));
        }
        let x = self.string_of(x)?;
        let pieces: Vec<&str> = pattern.split('%').collect();
        let lit = |em: &mut Emitter, text: &str| {
            em.string_of(Val {
                v: String::new(),
                o: String::new(),
                t: DataType::Utf8,
                lit: Some(Literal::Str(text.to_string())),
                len: String::new(),
            })
        };
        let (ok, _) = self.fresh();
        let (pos, end) = (format!("p{}", &ok[1..]), format!("e{}", &ok[1..]));
        self.lines.push(format!(
            "u8 {ok} = 1; u64 {pos} = 0; u64 {end} = {};",
            x.len
        ));
        let (a, n) = (x.v.clone(), x.len.clone());
        if pieces.len() == 1 {
            let p = lit(self, pattern)?;
            self.lines.push(format!(
                "{ok} = (u8)(tsr_str_cmp({a}, {n}, {}, {}) == 0);",
                p.v, p.len
            ));
        } else {
            let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
            if !first.is_empty() {
                let p = lit(self, first)?;
                self.lines.push(format!(
                    "{ok} &= tsr_str_starts({a}, {n}, {}, {}); {pos} = {};",
                    p.v, p.len, p.len
                ));
            }
            if !last.is_empty() {
                let p = lit(self, last)?;
                self.lines.push(format!(
                    "{ok} &= (u8)({n} >= {pos} + {} && tsr_str_ends({a}, {n}, {}, {})); if ({ok}) {end} = {n} - {};",
                    p.len, p.v, p.len, p.len
                ));
            }
            for middle in &pieces[1..pieces.len() - 1] {
                if middle.is_empty() {
                    continue;
                }
                let p = lit(self, middle)?;
                self.lines.push(format!(
                    "if ({ok}) {{ u64 f = tsr_str_find({a}, {pos}, {end}, {}, {}); if (f == ~0ULL) {ok} = 0; else {pos} = f + {}; }}",
                    p.v, p.len, p.len
                ));
            }
        }
        Ok(Val {
            v: ok,
            o: x.o,
            t: DataType::Boolean,
            lit: None,
            len: String::new(),
        })
    }

    /// A string test of `x` against a literal pattern (`starts`, `ends`, `contains`).
    fn string_test(&mut self, x: Val, test: &str, pattern: &str) -> Result<Val, Refusal> {
        let x = self.string_of(x)?;
        let p = self.string_of(Val {
            v: String::new(),
            o: String::new(),
            t: DataType::Utf8,
            lit: Some(Literal::Str(pattern.to_string())),
            len: String::new(),
        })?;
        self.local(
            &DataType::Boolean,
            &format!("tsr_str_{test}({}, {}, {}, {})", x.v, x.len, p.v, p.len),
            &x.o,
        )
    }

    /// `x` (any covered type) equal to `y` of the same type, as the protocol compares:
    /// floats with NaN equal to NaN and -0 to 0, strings byte by byte.
    fn equal(&mut self, x: &Val, y: &Val) -> Result<String, Refusal> {
        Ok(if matches!(x.t, DataType::Float32 | DataType::Float64) {
            format!("(tsr_fcmp((f64){}, (f64){}) == 0)", x.v, y.v)
        } else if !x.len.is_empty() {
            format!("(tsr_str_cmp({}, {}, {}, {}) == 0)", x.v, x.len, y.v, y.len)
        } else if orders_as_int(&x.t) {
            format!("({} == {})", x.v, y.v)
        } else {
            return Err(format!("equality of {} values", x.t));
        })
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        l: &Val,
        r: &Val,
        operand: &DataType,
        e: &Expr,
    ) -> Result<Val, Refusal> {
        let (a, b) = (&l.v, &r.v);
        let both = format!("{} & {}", l.o, r.o);
        let float = matches!(operand, DataType::Float32 | DataType::Float64);
        let c = ctype(operand).unwrap_or("");
        let arith = |sym: &str| -> Result<String, Refusal> {
            if float {
                Ok(format!("{a} {sym} {b}"))
            } else if is_int(operand) {
                let w = if is_signed(operand) {
                    "(u64)(i64)"
                } else {
                    "(u64)"
                };
                Ok(format!("({c})({w}{a} {sym} {w}{b})"))
            } else {
                Err(format!("`{sym}` of {operand} values in {e}"))
            }
        };
        let (t, value, valid) = match op {
            BinaryOp::Add => (operand.clone(), arith("+")?, both),
            BinaryOp::Sub => (operand.clone(), arith("-")?, both),
            BinaryOp::Mul => (operand.clone(), arith("*")?, both),
            BinaryOp::Div if float => (operand.clone(), format!("{a} / {b}"), both),
            BinaryOp::Rem if *operand == DataType::Float64 => {
                (operand.clone(), format!("fmod({a}, {b})"), both)
            }
            BinaryOp::Rem if *operand == DataType::Float32 => {
                (operand.clone(), format!("fmodf({a}, {b})"), both)
            }
            BinaryOp::Div | BinaryOp::Rem => {
                return Err(format!("integer `{}` in {e}", op.symbol()))
            }
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq => {
                let order = if float {
                    format!("tsr_fcmp((f64){a}, (f64){b})")
                } else if is_string(operand) && !l.len.is_empty() && !r.len.is_empty() {
                    format!("tsr_str_cmp({a}, {}, {b}, {})", l.len, r.len)
                } else if orders_as_int(operand) {
                    format!("(({a} > {b}) - ({a} < {b}))")
                } else {
                    return Err(format!("a comparison of {operand} values in {e}"));
                };
                let sym = match op {
                    BinaryOp::Eq => "==",
                    BinaryOp::NotEq => "!=",
                    BinaryOp::Lt => "<",
                    BinaryOp::LtEq => "<=",
                    BinaryOp::Gt => ">",
                    _ => ">=",
                };
                (DataType::Boolean, format!("(u8)({order} {sym} 0)"), both)
            }
            BinaryOp::And | BinaryOp::Or => {
                // Kleene logic: a known false (And) or a known true (Or) decides alone.
                let (lo, ro) = (&l.o, &r.o);
                let (decides_l, decides_r) = if op == BinaryOp::And {
                    (format!("({lo} & ({a} ^ 1))"), format!("({ro} & ({b} ^ 1))"))
                } else {
                    (format!("({lo} & {a})"), format!("({ro} & {b})"))
                };
                let decided = format!("({decides_l} | {decides_r})");
                let value = if op == BinaryOp::And {
                    format!("{decided} ? 0 : ({a} & {b})")
                } else {
                    decided.clone()
                };
                (
                    DataType::Boolean,
                    value,
                    format!("{decided} | ({lo} & {ro})"),
                )
            }
        };
        self.local(&t, &value, &valid)
    }
}

fn literal_array(l: &Literal) -> ArrayRef {
    match l {
        Literal::Null => arrow_array::new_null_array(&DataType::Null, 1),
        Literal::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Literal::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Literal::Float(f) => Arc::new(Float64Array::from(vec![*f])),
        Literal::Str(s) => Arc::new(StringArray::from(vec![s.as_str()])),
    }
}

/// The expression kind, for a refusal.
fn describe(e: &Expr) -> String {
    let kind = match e {
        Expr::Contains { .. } => "contains",
        Expr::DatePart { .. } => "a date part",
        Expr::Math { .. } => "a math function",
        Expr::IsIn { .. } => "is_in",
        Expr::Str { .. } => "a string function",
        Expr::Clip { .. } => "clip",
        Expr::Pow { .. } => "pow",
        Expr::Offset { .. } => "a date offset",
        Expr::Elapsed { .. } => "elapsed time",
        Expr::Truncate { .. } => "a truncation",
        _ => "this expression",
    };
    format!("{kind} ({e})")
}

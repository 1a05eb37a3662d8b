//! The versioned wire form of what the dataframe protocol passes besides data — programs,
//! expressions, aggregation, join and sort specs, capabilities — for backends across the
//! plugin boundary, where Rust types cannot go.
//!
//! JSON, tagged with [`WIRE_VERSION`] at the top level of every message, so a plugin built
//! against another wire version is refused with both versions named instead of
//! misreading a program. Decoding never trusts its input: unknown tags, operators,
//! functions and types are errors that name what was found and what is accepted.
//!
//! | value | form |
//! |---|---|
//! | column | `{"col": "x"}` |
//! | literal | `{"lit": null}`, `{"lit": true}`, `{"lit": {"int": 3}}`, `{"lit": {"float": 0.5}}` (`"nan"`, `"inf"`, `"-inf"` as strings), `{"lit": {"str": "a"}}` |
//! | binary | `{"op": "+", "l": .., "r": ..}` (the operator as written: `+ - * / % == != < <= > >= & \|`) |
//! | unary | `{"not": ..}`, `{"neg": ..}`, `{"is_null": ..}`, `{"is_not_null": ..}`, `{"is_nan": ..}` |
//! | others | `{"fill_null": .., "value": ..}`, `{"cast": .., "to": "Int64"}` (Arrow's type syntax), `{"contains": .., "pattern": "a"}`, `{"date_part": .., "part": "year"}`, `{"math": .., "func": "sqrt"}`, `{"is_in": .., "values": [lit, ..]}`, `{"pow": .., "exponent": ..}`, `{"clip": .., "lower": .., "upper": ..}`, `{"coalesce": [..]}`, `{"when": [[cond, value], ..], "otherwise": ..}` |
//! | strings | `{"str": .., "func": "lower"}`; with `"arg"` for starts_with/ends_with/like/matches/split, `"from"`/`"to"` for replace, `"start"`/`"len"` (null: the rest) for substring, `"pattern"`/`"group"` for extract, `"sep"`/`"index"` for split_part |
//! | dates | `{"offset_by": .., "months": 1, "days": 0, "nanos": 0}`, `{"elapsed": end, "since": start, "unit": "day"}`, `{"truncate": .., "unit": "month"}` (units: year quarter month week day hour minute second millisecond microsecond nanosecond) |
//! | program | `{"steps": [{"filter": expr}, {"project": [["name", expr], ..]}]}` |

use std::str::FromStr;

use arrow_schema::DataType;
use serde_json::{json, Map, Value};

use tessera_core::error::{Error, Result};
use tessera_core::frame::backend::{
    AggFunc, AggSpec, FrameCapabilities, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec,
    JoinType, SortKey, StoredForms,
};
use tessera_core::frame::expr::{BinaryOp, DatePart, Expr, Literal, MathFunc, StrFunc};
use tessera_core::frame::temporal::{DateUnit, Interval};

/// The wire version every message carries as `"wire"`.
pub const WIRE_VERSION: &str = "tessera-frame/1";

const BINARY: [BinaryOp; 13] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::Eq,
    BinaryOp::NotEq,
    BinaryOp::Lt,
    BinaryOp::LtEq,
    BinaryOp::Gt,
    BinaryOp::GtEq,
    BinaryOp::And,
    BinaryOp::Or,
];
const MATH: [MathFunc; 7] = [
    MathFunc::Abs,
    MathFunc::Sqrt,
    MathFunc::Exp,
    MathFunc::Ln,
    MathFunc::Floor,
    MathFunc::Ceil,
    MathFunc::Round,
];
const PARTS: [DatePart; 9] = [
    DatePart::Year,
    DatePart::Month,
    DatePart::Day,
    DatePart::Hour,
    DatePart::Minute,
    DatePart::Second,
    DatePart::Weekday,
    DatePart::Quarter,
    DatePart::DayOfYear,
];

fn bad(what: &str, found: &Value, expected: &str) -> Error {
    let mut shown = found.to_string();
    if shown.len() > 120 {
        shown.truncate(120);
        shown.push_str("...");
    }
    Error::invalid(
        "frame wire",
        format!("{what}: found {shown}, expected {expected}"),
    )
}

/// A message: `payload` with the wire version added.
pub fn message(mut payload: Map<String, Value>) -> String {
    payload.insert("wire".into(), Value::from(WIRE_VERSION));
    Value::Object(payload).to_string()
}

/// Parses a message and checks its wire version.
///
/// # Errors
/// [`Error::Invalid`] when it is not a JSON object or carries another wire version (both
/// versions named).
pub fn parse_message(text: &str) -> Result<Map<String, Value>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid("frame wire", format!("not JSON: {e}")))?;
    let Value::Object(map) = v else {
        return Err(bad("message", &v, "a JSON object"));
    };
    match map.get("wire").and_then(Value::as_str) {
        Some(WIRE_VERSION) => Ok(map),
        Some(other) => Err(Error::invalid(
            "frame wire",
            format!("message in wire version '{other}', but this side speaks '{WIRE_VERSION}'; rebuild the plugin against this tessera"),
        )),
        None => Err(Error::invalid(
            "frame wire",
            format!("message without a wire version (expected \"wire\": \"{WIRE_VERSION}\")"),
        )),
    }
}

/// The field `key` of a message.
///
/// # Errors
/// [`Error::Invalid`] naming the missing field.
pub fn field<'a>(map: &'a Map<String, Value>, key: &str) -> Result<&'a Value> {
    map.get(key)
        .ok_or_else(|| Error::invalid("frame wire", format!("message has no field '{key}'")))
}

fn literal_to(l: &Literal) -> Value {
    match l {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::from(*b),
        Literal::Int(i) => json!({ "int": i }),
        Literal::Float(x) if x.is_nan() => json!({ "float": "nan" }),
        Literal::Float(x) if x.is_infinite() => {
            json!({ "float": if *x > 0.0 { "inf" } else { "-inf" } })
        }
        Literal::Float(x) => json!({ "float": x }),
        Literal::Str(s) => json!({ "str": s }),
    }
}

fn literal_from(v: &Value) -> Result<Literal> {
    let expected = "null, a boolean, {\"int\": n}, {\"float\": x} or {\"str\": s}";
    Ok(match v {
        Value::Null => Literal::Null,
        Value::Bool(b) => Literal::Bool(*b),
        Value::Object(m) if m.len() == 1 => {
            let (k, x) = m.iter().next().expect("one entry");
            match (k.as_str(), x) {
                ("int", x) => {
                    Literal::Int(x.as_i64().ok_or_else(|| bad("int literal", x, "an i64"))?)
                }
                ("float", Value::String(s)) => Literal::Float(match s.as_str() {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => {
                        return Err(bad(
                            "float literal",
                            x,
                            "a number, \"nan\", \"inf\" or \"-inf\"",
                        ))
                    }
                }),
                ("float", x) => Literal::Float(
                    x.as_f64()
                        .ok_or_else(|| bad("float literal", x, "a number"))?,
                ),
                ("str", Value::String(s)) => Literal::Str(s.clone()),
                _ => return Err(bad("literal", v, expected)),
            }
        }
        _ => return Err(bad("literal", v, expected)),
    })
}

/// An expression in wire form.
pub fn expr_to(e: &Expr) -> Value {
    let b = |e: &Expr| expr_to(e);
    match e {
        Expr::Column(c) => json!({ "col": c }),
        Expr::Literal(l) => json!({ "lit": literal_to(l) }),
        Expr::Binary { op, left, right } => {
            json!({ "op": op.symbol(), "l": b(left), "r": b(right) })
        }
        Expr::Not(x) => json!({ "not": b(x) }),
        Expr::Negate(x) => json!({ "neg": b(x) }),
        Expr::IsNull(x) => json!({ "is_null": b(x) }),
        Expr::IsNotNull(x) => json!({ "is_not_null": b(x) }),
        Expr::IsNan(x) => json!({ "is_nan": b(x) }),
        Expr::FillNull { expr, value } => json!({ "fill_null": b(expr), "value": b(value) }),
        Expr::Cast { expr, to } => json!({ "cast": b(expr), "to": to.to_string() }),
        Expr::Contains { expr, pattern } => json!({ "contains": b(expr), "pattern": pattern }),
        Expr::DatePart { expr, part } => json!({ "date_part": b(expr), "part": part.name() }),
        Expr::Math { func, expr } => json!({ "math": b(expr), "func": func.name() }),
        Expr::IsIn { expr, values } => json!({
            "is_in": b(expr),
            "values": values.iter().map(literal_to).collect::<Vec<_>>(),
        }),
        Expr::Str { func, expr } => {
            let mut m = Map::new();
            m.insert("str".into(), b(expr));
            m.insert("func".into(), Value::from(func.name()));
            match func {
                StrFunc::StartsWith(x)
                | StrFunc::EndsWith(x)
                | StrFunc::Like(x)
                | StrFunc::Matches(x)
                | StrFunc::Split(x) => {
                    m.insert("arg".into(), Value::from(x.as_str()));
                }
                StrFunc::Extract { pattern, group } => {
                    m.insert("pattern".into(), Value::from(pattern.as_str()));
                    m.insert("group".into(), Value::from(*group));
                }
                StrFunc::SplitPart { sep, index } => {
                    m.insert("sep".into(), Value::from(sep.as_str()));
                    m.insert("index".into(), Value::from(*index));
                }
                StrFunc::Replace { from, to } => {
                    m.insert("from".into(), Value::from(from.as_str()));
                    m.insert("to".into(), Value::from(to.as_str()));
                }
                StrFunc::Substring { start, len } => {
                    m.insert("start".into(), Value::from(*start));
                    m.insert("len".into(), len.map_or(Value::Null, Value::from));
                }
                _ => {}
            }
            Value::Object(m)
        }
        Expr::When {
            branches,
            otherwise,
        } => json!({
            "when": branches.iter().map(|(c, v)| json!([b(c), b(v)])).collect::<Vec<_>>(),
            "otherwise": b(otherwise),
        }),
        Expr::Coalesce(values) => json!({ "coalesce": values.iter().map(b).collect::<Vec<_>>() }),
        Expr::Pow { base, exponent } => json!({ "pow": b(base), "exponent": b(exponent) }),
        Expr::Clip { expr, lower, upper } => {
            json!({ "clip": b(expr), "lower": b(lower), "upper": b(upper) })
        }
        Expr::Offset { expr, interval } => json!({
            "offset_by": b(expr),
            "months": interval.months,
            "days": interval.days,
            "nanos": interval.nanos,
        }),
        Expr::Elapsed { end, start, unit } => {
            json!({ "elapsed": b(end), "since": b(start), "unit": unit.name() })
        }
        Expr::Truncate { expr, unit } => json!({ "truncate": b(expr), "unit": unit.name() }),
    }
}

fn unit_of(m: &Map<String, Value>, what: &str) -> Result<DateUnit> {
    let u = str_of(m, "unit", what)?;
    DateUnit::ALL
        .into_iter()
        .find(|x| x.name() == u)
        .ok_or_else(|| {
            bad(
                "date unit",
                &m["unit"],
                "year, quarter, month, week, day, hour, minute, second, millisecond, microsecond or nanosecond",
            )
        })
}

fn int_of(m: &Map<String, Value>, key: &str, what: &str) -> Result<i64> {
    let v = m
        .get(key)
        .ok_or_else(|| Error::invalid("frame wire", format!("{what} has no '{key}'")))?;
    v.as_i64()
        .ok_or_else(|| bad(what, v, &format!("an integer at '{key}'")))
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a str> {
    let v = m
        .get(key)
        .ok_or_else(|| Error::invalid("frame wire", format!("{what} has no '{key}'")))?;
    v.as_str()
        .ok_or_else(|| bad(what, v, &format!("a string at '{key}'")))
}

/// An expression from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming what is malformed or unknown.
pub fn expr_from(v: &Value) -> Result<Expr> {
    let Value::Object(m) = v else {
        return Err(bad("expression", v, "a JSON object"));
    };
    let sub = |key: &str| -> Result<Box<Expr>> {
        Ok(Box::new(expr_from(m.get(key).ok_or_else(|| {
            Error::invalid("frame wire", format!("expression has no '{key}'"))
        })?)?))
    };
    let tag = [
        "col",
        "lit",
        "op",
        "not",
        "neg",
        "is_null",
        "is_not_null",
        "is_nan",
        "fill_null",
        "cast",
        "contains",
        "date_part",
        "math",
        "is_in",
        "str",
        "when",
        "coalesce",
        "pow",
        "clip",
        "offset_by",
        "elapsed",
        "truncate",
    ]
    .into_iter()
    .find(|t| m.contains_key(*t))
    .ok_or_else(|| {
        bad(
            "expression",
            v,
            "an object tagged col, lit, op, not, neg, is_null, is_not_null, fill_null, cast, \
             contains, date_part, math, is_in, str, when, coalesce, pow, clip, offset_by, \
             elapsed or truncate",
        )
    })?;
    Ok(match tag {
        "col" => Expr::Column(str_of(m, "col", "column")?.to_string()),
        "lit" => Expr::Literal(literal_from(&m["lit"])?),
        "op" => {
            let s = str_of(m, "op", "binary expression")?;
            let op = BINARY
                .into_iter()
                .find(|o| o.symbol() == s)
                .ok_or_else(|| bad("operator", &m["op"], "one of + - * / % == != < <= > >= & |"))?;
            Expr::Binary {
                op,
                left: sub("l")?,
                right: sub("r")?,
            }
        }
        "not" => Expr::Not(sub("not")?),
        "neg" => Expr::Negate(sub("neg")?),
        "is_null" => Expr::IsNull(sub("is_null")?),
        "is_not_null" => Expr::IsNotNull(sub("is_not_null")?),
        "is_nan" => Expr::IsNan(sub("is_nan")?),
        "fill_null" => Expr::FillNull {
            expr: sub("fill_null")?,
            value: sub("value")?,
        },
        "cast" => {
            let to = str_of(m, "to", "cast")?;
            Expr::Cast {
                expr: sub("cast")?,
                to: DataType::from_str(to)
                    .map_err(|e| Error::invalid("frame wire", format!("cast to '{to}': {e}")))?,
            }
        }
        "contains" => Expr::Contains {
            expr: sub("contains")?,
            pattern: str_of(m, "pattern", "contains")?.to_string(),
        },
        "date_part" => {
            let p = str_of(m, "part", "date_part")?;
            Expr::DatePart {
                expr: sub("date_part")?,
                part: PARTS.into_iter().find(|x| x.name() == p).ok_or_else(|| {
                    bad(
                        "date part",
                        &m["part"],
                        "year, month, day, hour, minute, second, weekday, quarter or day_of_year",
                    )
                })?,
            }
        }
        "math" => {
            let f = str_of(m, "func", "math")?;
            Expr::Math {
                expr: sub("math")?,
                func: MATH.into_iter().find(|x| x.name() == f).ok_or_else(|| {
                    bad(
                        "math function",
                        &m["func"],
                        "abs, sqrt, exp, ln, floor, ceil or round",
                    )
                })?,
            }
        }
        "str" => {
            let text = |k: &str| str_of(m, k, "string function").map(str::to_string);
            let func = match str_of(m, "func", "string function")? {
                "starts_with" => StrFunc::StartsWith(text("arg")?),
                "ends_with" => StrFunc::EndsWith(text("arg")?),
                "like" => StrFunc::Like(text("arg")?),
                "lower" => StrFunc::Lower,
                "upper" => StrFunc::Upper,
                "strip" => StrFunc::Strip,
                "len" => StrFunc::Len,
                "replace" => StrFunc::Replace {
                    from: text("from")?,
                    to: text("to")?,
                },
                "substring" => {
                    StrFunc::Substring {
                        start: m
                            .get("start")
                            .and_then(Value::as_i64)
                            .ok_or_else(|| bad("substring", v, "an integer 'start'"))?,
                        len: match m.get("len") {
                            None | Some(Value::Null) => None,
                            Some(n) => Some(n.as_u64().ok_or_else(|| {
                                bad("substring", n, "a non-negative 'len' or null")
                            })?),
                        },
                    }
                }
                "matches" => StrFunc::Matches(text("arg")?),
                "split" => StrFunc::Split(text("arg")?),
                "extract" => StrFunc::Extract {
                    pattern: text("pattern")?,
                    group: m
                        .get("group")
                        .and_then(Value::as_u64)
                        .and_then(|g| usize::try_from(g).ok())
                        .ok_or_else(|| bad("extract", v, "a non-negative integer 'group'"))?,
                },
                "split_part" => StrFunc::SplitPart {
                    sep: text("sep")?,
                    index: int_of(m, "index", "split_part")?,
                },
                _ => return Err(bad(
                    "string function",
                    &m["func"],
                    "starts_with, ends_with, like, lower, upper, strip, len, replace, substring, \
                     matches, extract, split or split_part",
                )),
            };
            Expr::Str {
                func,
                expr: sub("str")?,
            }
        }
        "when" => {
            let branches = m["when"]
                .as_array()
                .ok_or_else(|| bad("when", v, "an array of [condition, value] pairs"))?
                .iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([c, x]) => Ok((expr_from(c)?, expr_from(x)?)),
                    _ => Err(bad("when branch", pair, "[condition, value]")),
                })
                .collect::<Result<_>>()?;
            Expr::When {
                branches,
                otherwise: sub("otherwise")?,
            }
        }
        "coalesce" => Expr::Coalesce(
            m["coalesce"]
                .as_array()
                .ok_or_else(|| bad("coalesce", v, "an array of expressions"))?
                .iter()
                .map(expr_from)
                .collect::<Result<_>>()?,
        ),
        "pow" => Expr::Pow {
            base: sub("pow")?,
            exponent: sub("exponent")?,
        },
        "clip" => Expr::Clip {
            expr: sub("clip")?,
            lower: sub("lower")?,
            upper: sub("upper")?,
        },
        "offset_by" => {
            let part = |k: &str| -> Result<i32> {
                i32::try_from(int_of(m, k, "offset_by")?)
                    .map_err(|_| bad("offset_by", &m[k], &format!("'{k}' within 32 bits")))
            };
            Expr::Offset {
                expr: sub("offset_by")?,
                interval: Interval::new(
                    part("months")?,
                    part("days")?,
                    int_of(m, "nanos", "offset_by")?,
                ),
            }
        }
        "elapsed" => Expr::Elapsed {
            end: sub("elapsed")?,
            start: sub("since")?,
            unit: unit_of(m, "elapsed")?,
        },
        "truncate" => Expr::Truncate {
            expr: sub("truncate")?,
            unit: unit_of(m, "truncate")?,
        },
        _ => {
            let values = m
                .get("values")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("is_in", v, "a 'values' array"))?;
            Expr::IsIn {
                expr: sub("is_in")?,
                values: values.iter().map(literal_from).collect::<Result<_>>()?,
            }
        }
    })
}

/// A program in wire form.
pub fn program_to(p: &FrameProgram) -> Value {
    Value::Array(
        p.steps
            .iter()
            .map(|s| match s {
                FrameStep::Filter(e) => json!({ "filter": expr_to(e) }),
                FrameStep::Project(list) => json!({
                    "project": list.iter().map(|(n, e)| json!([n, expr_to(e)])).collect::<Vec<_>>()
                }),
            })
            .collect(),
    )
}

/// A program from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming the malformed step.
pub fn program_from(v: &Value) -> Result<FrameProgram> {
    let steps = v
        .as_array()
        .ok_or_else(|| bad("program", v, "an array of steps"))?;
    let steps = steps
        .iter()
        .map(|s| {
            if let Some(e) = s.get("filter") {
                return Ok(FrameStep::Filter(expr_from(e)?));
            }
            let list = s.get("project").and_then(Value::as_array).ok_or_else(|| {
                bad(
                    "program step",
                    s,
                    "{\"filter\": expr} or {\"project\": [[name, expr], ..]}",
                )
            })?;
            let list = list
                .iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(n), e]) => Ok((n.clone(), expr_from(e)?)),
                    _ => Err(bad("projection", pair, "[name, expr]")),
                })
                .collect::<Result<_>>()?;
            Ok(FrameStep::Project(list))
        })
        .collect::<Result<_>>()?;
    Ok(FrameProgram { steps })
}

fn strings_from(v: &Value, what: &str) -> Result<Vec<String>> {
    v.as_array()
        .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
        .ok_or_else(|| bad(what, v, "an array of strings"))
}

/// Column names in wire form.
pub fn names_to(names: &[String]) -> Value {
    json!(names)
}

/// Column names from wire form.
///
/// # Errors
/// [`Error::Invalid`] when it is not an array of strings.
pub fn names_from(v: &Value) -> Result<Vec<String>> {
    strings_from(v, "column names")
}

/// Aggregation specs in wire form (`with`, a pair function's second column, only where
/// there is one: older plugins read the three other fields).
pub fn aggs_to(aggs: &[AggSpec]) -> Value {
    json!(aggs
        .iter()
        .map(|a| {
            let mut m = json!({ "column": a.column, "func": a.func.spec(), "output": a.output });
            if let (Some(w), Some(obj)) = (&a.with, m.as_object_mut()) {
                obj.insert("with".into(), json!(w));
            }
            m
        })
        .collect::<Vec<_>>())
}

/// Aggregation specs from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming a malformed spec or an unknown function.
pub fn aggs_from(v: &Value) -> Result<Vec<AggSpec>> {
    let list = v
        .as_array()
        .ok_or_else(|| bad("aggregations", v, "an array"))?;
    list.iter()
        .map(|a| {
            let m = a
                .as_object()
                .ok_or_else(|| bad("aggregation", a, "an object"))?;
            let spec = AggSpec::new(
                str_of(m, "column", "aggregation")?,
                AggFunc::parse(str_of(m, "func", "aggregation")?)?,
                str_of(m, "output", "aggregation")?,
            );
            let spec = match m.get("with") {
                None | Some(Value::Null) => spec,
                Some(_) => AggSpec {
                    with: Some(str_of(m, "with", "aggregation")?.to_string()),
                    ..spec
                },
            };
            spec.check_arity()?;
            Ok(spec)
        })
        .collect()
}

/// Sort keys in wire form.
pub fn sort_to(by: &[SortKey]) -> Value {
    json!(by
        .iter()
        .map(|k| json!({ "column": k.column, "descending": k.descending }))
        .collect::<Vec<_>>())
}

/// Sort keys from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming a malformed key.
pub fn sort_from(v: &Value) -> Result<Vec<SortKey>> {
    let list = v
        .as_array()
        .ok_or_else(|| bad("sort keys", v, "an array"))?;
    list.iter()
        .map(|k| {
            let m = k
                .as_object()
                .ok_or_else(|| bad("sort key", k, "an object"))?;
            Ok(SortKey {
                column: str_of(m, "column", "sort key")?.to_string(),
                descending: m
                    .get("descending")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| bad("sort key", k, "a boolean 'descending'"))?,
            })
        })
        .collect()
}

fn algorithm_name(a: JoinAlgorithm) -> &'static str {
    match a {
        JoinAlgorithm::Hash => "hash",
        JoinAlgorithm::SortedMerge => "sorted_merge",
    }
}

fn algorithm_from(v: &Value) -> Result<JoinAlgorithm> {
    match v.as_str() {
        Some("hash") => Ok(JoinAlgorithm::Hash),
        Some("sorted_merge") => Ok(JoinAlgorithm::SortedMerge),
        _ => Err(bad("join algorithm", v, "\"hash\" or \"sorted_merge\"")),
    }
}

/// A join spec in wire form.
pub fn join_to(spec: &JoinSpec) -> Value {
    json!({
        "left_on": spec.left_on,
        "right_on": spec.right_on,
        "how": spec.how.name(),
        "suffixes": [spec.suffixes.0, spec.suffixes.1],
        "algorithm": algorithm_name(spec.algorithm),
    })
}

/// A join spec from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming a malformed field.
pub fn join_from(v: &Value) -> Result<JoinSpec> {
    let m = v
        .as_object()
        .ok_or_else(|| bad("join spec", v, "an object"))?;
    let how = match str_of(m, "how", "join spec")? {
        "inner" => JoinType::Inner,
        "left" => JoinType::Left,
        "right" => JoinType::Right,
        "outer" => JoinType::Outer,
        "semi" => JoinType::Semi,
        "anti" => JoinType::Anti,
        _ => {
            return Err(bad(
                "join type",
                &m["how"],
                "inner, left, right, outer, semi or anti",
            ))
        }
    };
    let suffixes = strings_from(m.get("suffixes").unwrap_or(&Value::Null), "suffixes")?;
    let [l, r] = suffixes.as_slice() else {
        return Err(bad("suffixes", &m["suffixes"], "two strings"));
    };
    Ok(JoinSpec {
        left_on: names_from(m.get("left_on").unwrap_or(&Value::Null))?,
        right_on: names_from(m.get("right_on").unwrap_or(&Value::Null))?,
        how,
        suffixes: (l.clone(), r.clone()),
        algorithm: algorithm_from(m.get("algorithm").unwrap_or(&Value::Null))?,
    })
}

/// Capabilities in wire form.
pub fn capabilities_to(c: &FrameCapabilities) -> Value {
    json!({
        "missing_aggregations": c.missing_aggregations.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "missing_join_algorithms": c.missing_join_algorithms.iter().map(|a| algorithm_name(*a)).collect::<Vec<_>>(),
        "filter_joins": c.filter_joins,
        "stored_forms": {
            "dictionary_keys": c.stored_forms.dictionary_keys,
            "narrow_decimals": c.stored_forms.narrow_decimals,
            "view_keys": c.stored_forms.view_keys,
        },
    })
}

/// Capabilities from wire form.
///
/// # Errors
/// [`Error::Invalid`] naming an unknown aggregation or algorithm.
pub fn capabilities_from(v: &Value) -> Result<FrameCapabilities> {
    let m = v
        .as_object()
        .ok_or_else(|| bad("capabilities", v, "an object"))?;
    let empty = Value::Array(Vec::new());
    Ok(FrameCapabilities {
        missing_aggregations: strings_from(
            m.get("missing_aggregations").unwrap_or(&empty),
            "missing_aggregations",
        )?
        .iter()
        .map(|s| AggFunc::parse(s))
        .collect::<Result<_>>()?,
        missing_join_algorithms: m
            .get("missing_join_algorithms")
            .unwrap_or(&empty)
            .as_array()
            .ok_or_else(|| bad("missing_join_algorithms", v, "an array"))?
            .iter()
            .map(algorithm_from)
            .collect::<Result<_>>()?,
        // Window specs have no wire form yet, so a plugin's windows cannot be called
        // whatever it declares: core refuses them by name when the plan is built.
        windows: false,
        // Absent (an older plugin): core composes semi and anti joins itself.
        filter_joins: flag(m.get("filter_joins"), "filter_joins")?,
        // Absent (an older plugin): every column arrives in the plan's type.
        stored_forms: match m.get("stored_forms") {
            None => StoredForms::default(),
            Some(f) => {
                let f = f
                    .as_object()
                    .ok_or_else(|| bad("stored_forms", f, "an object"))?;
                StoredForms {
                    dictionary_keys: flag(f.get("dictionary_keys"), "dictionary_keys")?,
                    narrow_decimals: flag(f.get("narrow_decimals"), "narrow_decimals")?,
                    view_keys: flag(f.get("view_keys"), "view_keys")?,
                }
            }
        },
    })
}

/// A capability flag of the wire form: absent is `false`.
fn flag(v: Option<&Value>, what: &str) -> Result<bool> {
    match v {
        None => Ok(false),
        Some(b) => b.as_bool().ok_or_else(|| bad(what, b, "true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::frame::backend::Quantile;
    use tessera_core::frame::expr::{col, lit};

    #[test]
    fn every_expression_kind_round_trips() {
        let e = (col("a") + 1).gt(lit(2.5))
            & !col("b").is_null()
            & col("c").is_not_null()
            & !col("c").is_nan()
            & (-col("d")).lt_eq(lit(f64::NAN))
            & col("e").fill_null(lit(f64::NEG_INFINITY)).eq(0)
            & col("f")
                .cast(DataType::Timestamp(
                    arrow_schema::TimeUnit::Microsecond,
                    None,
                ))
                .is_not_null()
            & col("g").contains("x\"y")
            & col("h").date_part(DatePart::Weekday).not_eq(3)
            & col("i").sqrt().gt(1)
            & col("j").is_in([
                Literal::Null,
                Literal::Str("ä".into()),
                Literal::Int(-4),
                Literal::Bool(true),
            ])
            & (col("s").like("a%_") | (col("s").starts_with("x") & col("s").ends_with("y")))
            & col("s")
                .lower()
                .upper()
                .strip()
                .replace("a", "b")
                .substring(-3, Some(2))
                .eq("ab")
            & col("s").substring(1, None).str_len().gt(2)
            & col("s").matches(r"^\d+[a-z]?$")
            & col("s")
                .extract(r"(\w+)@(\w+)", 2)
                .split_part(".", -1)
                .eq("com")
            & col("s").split(",").is_not_null()
            & col("t")
                .offset_by(Interval::new(-3, 14, 3_600_000_000_001))
                .truncate(DateUnit::Quarter)
                .elapsed_since(col("u").truncate(DateUnit::Week), DateUnit::Microsecond)
                .gt(0)
            & tessera_core::frame::expr::when(col("a").gt(1))
                .then(1.5)
                .when(col("a").lt(0))
                .then(col("b"))
                .otherwise(lit(f64::NAN))
                .gt(0)
            & tessera_core::frame::expr::coalesce([col("a"), col("b"), lit(0)])
                .pow(2)
                .clip(0, 10)
                .lt(5);
        let program = FrameProgram {
            steps: vec![
                FrameStep::Filter(e),
                FrameStep::Project(vec![("z".into(), col("a") % 3), ("w".into(), lit("s"))]),
            ],
        };
        let mut m = Map::new();
        m.insert("program".into(), program_to(&program));
        let text = message(m);
        let back = program_from(field(&parse_message(&text).unwrap(), "program").unwrap()).unwrap();
        // NaN != NaN, so compare the wire forms.
        assert_eq!(program_to(&back), program_to(&program));
        assert_eq!(format!("{:?}", back.steps.len()), "2");
    }

    #[test]
    fn specs_and_capabilities_round_trip() {
        let mut aggs: Vec<AggSpec> = AggFunc::ALL
            .into_iter()
            .map(|f| {
                if f.is_pair() {
                    AggSpec::pair("x", f, "w", f.name())
                } else {
                    AggSpec::new("x", f, f.name())
                }
            })
            .collect();
        aggs.extend([
            AggSpec::new("y", AggFunc::Std, "s"),
            AggSpec::new("z", AggFunc::Quantile(Quantile::new(0.125).unwrap()), "q"),
            AggSpec::new(
                "z",
                AggFunc::ApproxQuantile(Quantile::new(1.0).unwrap()),
                "a",
            ),
            AggSpec::new("z", AggFunc::Largest(3), "top"),
            AggSpec::new("z", AggFunc::Smallest(1), "low"),
        ]);
        assert_eq!(aggs_from(&aggs_to(&aggs)).unwrap(), aggs);
        for bad in [
            "quantile(1.5)",
            "quantile(x)",
            "quantiles",
            "corr",
            "nlargest(0)",
            "nlargest(-1)",
        ] {
            let v = json!([{ "column": "z", "func": bad, "output": "q" }]);
            assert!(aggs_from(&v).is_err(), "{bad}");
        }
        let v = json!([{ "column": "z", "func": "sum", "output": "q", "with": "y" }]);
        let e = aggs_from(&v).unwrap_err().to_string();
        assert!(e.contains("takes one column"), "{e}");
        let by = vec![SortKey {
            column: "k".into(),
            descending: true,
        }];
        assert_eq!(sort_from(&sort_to(&by)).unwrap(), by);
        let spec = JoinSpec {
            left_on: vec!["a".into()],
            right_on: vec!["b".into()],
            how: JoinType::Outer,
            suffixes: ("_l".into(), "_r".into()),
            algorithm: JoinAlgorithm::SortedMerge,
        };
        assert_eq!(join_from(&join_to(&spec)).unwrap(), spec);
        for how in [JoinType::Semi, JoinType::Anti] {
            let spec = JoinSpec {
                how,
                ..spec.clone()
            };
            assert_eq!(join_from(&join_to(&spec)).unwrap(), spec);
        }
        let caps = FrameCapabilities {
            missing_aggregations: vec![
                AggFunc::Var,
                AggFunc::NUnique,
                AggFunc::ApproxQuantile(Quantile::MEDIAN),
            ],
            missing_join_algorithms: vec![JoinAlgorithm::SortedMerge],
            windows: true,
            filter_joins: true,
            stored_forms: StoredForms {
                dictionary_keys: true,
                narrow_decimals: false,
                view_keys: true,
            },
        };
        let back = capabilities_from(&capabilities_to(&caps)).unwrap();
        // Windows have no wire form: a plugin never offers them.
        assert!(!back.windows);
        assert!(back.filter_joins);
        let older = json!({"missing_aggregations": [], "missing_join_algorithms": []});
        assert!(!capabilities_from(&older).unwrap().filter_joins);
        assert_eq!(back.missing_aggregations, caps.missing_aggregations);
        // A missing quantile is missing at every level, and only that kind.
        assert!(back.lacks(AggFunc::ApproxQuantile(Quantile::new(0.9).unwrap())));
        assert!(!back.lacks(AggFunc::Quantile(Quantile::new(0.9).unwrap())));
        assert_eq!(back.missing_join_algorithms, caps.missing_join_algorithms);
        assert_eq!(back.stored_forms, caps.stored_forms);
    }

    #[test]
    fn malformed_and_foreign_messages_are_refused_with_the_reason() {
        let e = parse_message(r#"{"wire": "tessera-frame/9"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tessera-frame/9") && e.contains(WIRE_VERSION),
            "{e}"
        );
        let e = expr_from(&json!({"op": "**", "l": {"col": "a"}, "r": {"col": "b"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"**\"") && e.contains("one of +"), "{e}");
        let e = expr_from(&json!({"cast": {"col": "a"}, "to": "Wobble"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Wobble"), "{e}");
        assert!(aggs_from(&json!([{"column": "a", "func": "mode", "output": "m"}])).is_err());
    }
}

//! Column expressions: what `col("tip") / col("fare")` builds.
//!
//! An [`Expr`] is a small tree over the columns of one partition. Core owns the typing
//! rules ([`Expr::data_type`]): every backend evaluates the same expression to the same
//! Arrow type, so a plan's schema is known before anything runs, and a typo in a column
//! name is an error at plan time that lists the columns that exist.
//!
//! Typing follows pandas where Arrow leaves a choice: `/` on integers is true division
//! (Float64); mixed integer widths widen to Int64; an integer or float literal takes the
//! type of the column it meets, so `col("fare") > lit(0)` compares floats.

use std::collections::BTreeSet;
use std::fmt;

use arrow_schema::DataType;

use super::expr_schema::is_int;
use super::temporal::{DateUnit, Interval};
// The typing rules live in `expr_schema`; their paths here stay as they were.
pub use super::expr_schema::{
    binary_types, castable, common_type, decimal_types, is_in_operand, is_string, literal_type,
    sum_type, DecimalPlan, DECIMAL128_MAX_PRECISION,
};

/// A literal value in an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A typed null (`fill_null` targets, comparisons that yield null).
    Null,
    /// Boolean.
    Bool(bool),
    /// Integer (adapts to the other operand's numeric type).
    Int(i64),
    /// Float (adapts to a Float32 operand).
    Float(f64),
    /// UTF-8 string.
    Str(String),
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("null"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (true division: integers give Float64)
    Div,
    /// `%` (sign of the divisor for integers is not adjusted: Rust/Arrow remainder)
    Rem,
    /// `==`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// Logical and (Kleene: `false & null = false`)
    And,
    /// Logical or (Kleene: `true | null = true`)
    Or,
}

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Eq => "==",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "&",
            BinaryOp::Or => "|",
        }
    }

    /// True for the six comparisons.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        )
    }

    /// True for `+ - * / %`.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem
        )
    }
}

/// An elementwise numeric function, with NumPy's (and so pandas') semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathFunc {
    /// Absolute value; integers keep their type and wrap (`abs(i64::MIN)` is itself).
    Abs,
    /// Square root (NaN below zero).
    Sqrt,
    /// `e^x`.
    Exp,
    /// Natural logarithm (`-inf` at zero, NaN below).
    Ln,
    /// Largest integer not above; integers are their own floor.
    Floor,
    /// Smallest integer not below; integers are their own ceiling.
    Ceil,
    /// Nearest integer, halves to even (`np.round`, `Series.round()`); integers unchanged.
    Round,
}

impl MathFunc {
    /// Lower-case name, as in the method (`abs`, `sqrt`, `exp`, `ln`, ...).
    pub fn name(self) -> &'static str {
        match self {
            MathFunc::Abs => "abs",
            MathFunc::Sqrt => "sqrt",
            MathFunc::Exp => "exp",
            MathFunc::Ln => "ln",
            MathFunc::Floor => "floor",
            MathFunc::Ceil => "ceil",
            MathFunc::Round => "round",
        }
    }

    /// The array op with the same definition (`UnaryOp::apply_f64` and friends are the
    /// scalar semantics both engines share).
    pub fn unary_op(self) -> crate::program::UnaryOp {
        use crate::program::UnaryOp;
        match self {
            MathFunc::Abs => UnaryOp::Abs,
            MathFunc::Sqrt => UnaryOp::Sqrt,
            MathFunc::Exp => UnaryOp::Exp,
            MathFunc::Ln => UnaryOp::Log,
            MathFunc::Floor => UnaryOp::Floor,
            MathFunc::Ceil => UnaryOp::Ceil,
            MathFunc::Round => UnaryOp::Round,
        }
    }

    /// The result type for an input of type `t`: `float32` and `float64` stay; integers
    /// stay for `abs`, `floor`, `ceil` and `round`, and become `float64` for `sqrt`, `exp`
    /// and `ln` (NumPy's rules). `None` for anything but an integer or a float.
    pub fn result_type(self, t: &DataType) -> Option<DataType> {
        match t {
            DataType::Float32 | DataType::Float64 => Some(t.clone()),
            // Decimals compute in Float64.
            DataType::Decimal64(_, _) | DataType::Decimal128(_, _) | DataType::Decimal256(_, _) => {
                Some(DataType::Float64)
            }
            t if is_int(t) => Some(match self {
                MathFunc::Sqrt | MathFunc::Exp | MathFunc::Ln => DataType::Float64,
                _ => t.clone(),
            }),
            _ => None,
        }
    }
}

/// A part of a timestamp or date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatePart {
    /// Year.
    Year,
    /// Month, 1..=12.
    Month,
    /// Day of the month, 1..=31.
    Day,
    /// Hour, 0..=23.
    Hour,
    /// Minute, 0..=59.
    Minute,
    /// Second, 0..=59.
    Second,
    /// Day of the week, Monday = 0 .. Sunday = 6 (pandas' `dt.weekday`).
    Weekday,
    /// Quarter of the year, 1..=4 (pandas' `dt.quarter`).
    Quarter,
    /// Day of the year, 1..=366 (pandas' `dt.dayofyear`).
    DayOfYear,
}

impl DatePart {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            DatePart::Year => "year",
            DatePart::Month => "month",
            DatePart::Day => "day",
            DatePart::Hour => "hour",
            DatePart::Minute => "minute",
            DatePart::Second => "second",
            DatePart::Weekday => "weekday",
            DatePart::Quarter => "quarter",
            DatePart::DayOfYear => "day_of_year",
        }
    }
}

/// A string function ([`Expr::Str`]). Positions and lengths count characters (Unicode
/// scalar values), as Python and Polars do, not bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StrFunc {
    /// Starts with the literal prefix (Boolean).
    StartsWith(String),
    /// Ends with the literal suffix (Boolean).
    EndsWith(String),
    /// Matches a SQL `LIKE` pattern: `%` any run, `_` one character (Boolean).
    Like(String),
    /// Lower case (Unicode).
    Lower,
    /// Upper case (Unicode).
    Upper,
    /// Leading and trailing whitespace removed (Unicode `White_Space`).
    Strip,
    /// Number of characters (Int64).
    Len,
    /// Every occurrence of `from` replaced by `to` (literal text, not a pattern).
    Replace {
        /// The text replaced.
        from: String,
        /// Its replacement.
        to: String,
    },
    /// `len` characters from `start` (0-based; negative counts from the end, as in
    /// Python); to the end when `len` is `None`.
    Substring {
        /// First character.
        start: i64,
        /// Number of characters, or the rest.
        len: Option<u64>,
    },
    /// Whether the regular expression matches anywhere in the string (Boolean; pandas'
    /// `str.contains(pattern)`, Polars' `str.contains`). The syntax is Rust's `regex`
    /// crate's (RE2-like: no look-around or back-references; matching is linear in the
    /// input, so no pattern can take exponential time).
    Matches(String),
    /// Capture group `group` of the pattern's first match (0: the whole match); null where
    /// the pattern does not match or the group took no part (pandas' `str.extract`).
    Extract {
        /// The regular expression.
        pattern: String,
        /// Which group.
        group: usize,
    },
    /// The pieces between occurrences of the literal separator (a List of Utf8; pandas'
    /// `str.split(sep, regex=False)`, Polars' `str.split`).
    Split(String),
    /// Piece `index` of the split by the literal separator (0-based, negative counts from
    /// the end); null where there are fewer pieces (pandas' `str.split(sep).str[index]`).
    SplitPart {
        /// The separator.
        sep: String,
        /// Which piece.
        index: i64,
    },
}

impl StrFunc {
    /// Lower-case name, as in the method (`starts_with`, `len`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            StrFunc::StartsWith(_) => "starts_with",
            StrFunc::EndsWith(_) => "ends_with",
            StrFunc::Like(_) => "like",
            StrFunc::Lower => "lower",
            StrFunc::Upper => "upper",
            StrFunc::Strip => "strip",
            StrFunc::Len => "len",
            StrFunc::Replace { .. } => "replace",
            StrFunc::Substring { .. } => "substring",
            StrFunc::Matches(_) => "matches",
            StrFunc::Extract { .. } => "extract",
            StrFunc::Split(_) => "split",
            StrFunc::SplitPart { .. } => "split_part",
        }
    }

    /// The type of the result.
    pub fn result_type(&self) -> DataType {
        match self {
            StrFunc::StartsWith(_)
            | StrFunc::EndsWith(_)
            | StrFunc::Like(_)
            | StrFunc::Matches(_) => DataType::Boolean,
            StrFunc::Len => DataType::Int64,
            StrFunc::Split(_) => DataType::List(std::sync::Arc::new(
                arrow_schema::Field::new_list_field(DataType::Utf8, true),
            )),
            _ => DataType::Utf8,
        }
    }

    /// Checks the function's arguments: a regular expression compiles, a group exists,
    /// a separator is not empty.
    ///
    /// # Errors
    /// A text naming the argument and what is wrong with it.
    pub fn check(&self) -> std::result::Result<(), String> {
        match self {
            StrFunc::Matches(p) => compile(p).map(|_| ()),
            StrFunc::Extract { pattern, group } => {
                let re = compile(pattern)?;
                if *group >= re.captures_len() {
                    return Err(format!(
                        "the pattern {pattern:?} has {} capture group(s); group {group} does not exist (0 is the whole match)",
                        re.captures_len() - 1
                    ));
                }
                Ok(())
            }
            StrFunc::Split(sep) | StrFunc::SplitPart { sep, .. } if sep.is_empty() => {
                Err("the separator is empty; give at least one character".into())
            }
            _ => Ok(()),
        }
    }
}

/// Compiles a pattern of [`StrFunc::Matches`]/[`StrFunc::Extract`].
///
/// # Errors
/// The pattern and the parser's message.
pub fn compile(pattern: &str) -> std::result::Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 24)
        .build()
        .map_err(|e| format!("the regular expression {pattern:?} is invalid: {e}"))
}

/// A column expression, evaluated per partition.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column by name.
    Column(String),
    /// A literal.
    Literal(Literal),
    /// `left op right`.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// Logical not.
    Not(Box<Expr>),
    /// Arithmetic negation.
    Negate(Box<Expr>),
    /// True where the value is null.
    IsNull(Box<Expr>),
    /// True where the value is not null.
    IsNotNull(Box<Expr>),
    /// True where a float is NaN (false for null, and for every value of a non-float type).
    IsNan(Box<Expr>),
    /// Nulls replaced by `value`.
    FillNull {
        /// The input.
        expr: Box<Expr>,
        /// The replacement (cast to the input's type).
        value: Box<Expr>,
    },
    /// A cast (Arrow's safe cast: values that do not fit become null).
    Cast {
        /// The input.
        expr: Box<Expr>,
        /// Target type.
        to: DataType,
    },
    /// String contains a literal substring.
    Contains {
        /// A Utf8 input.
        expr: Box<Expr>,
        /// The substring.
        pattern: String,
    },
    /// A part of a timestamp/date (Int32).
    DatePart {
        /// A timestamp or date input.
        expr: Box<Expr>,
        /// Which part.
        part: DatePart,
    },
    /// An elementwise numeric function.
    Math {
        /// The function.
        func: MathFunc,
        /// A numeric input.
        expr: Box<Expr>,
    },
    /// True where the value equals one of `values` (pandas' `isin`): never null — a null
    /// value is true only when `values` holds [`Literal::Null`]; NaN matches NaN, and
    /// `-0.0` matches `0.0`.
    IsIn {
        /// The input.
        expr: Box<Expr>,
        /// The values looked for.
        values: Vec<Literal>,
    },
    /// A string function of a string column (null where the input is null).
    Str {
        /// The function.
        func: StrFunc,
        /// A Utf8 input.
        expr: Box<Expr>,
    },
    /// The value of the first branch whose condition is true, else `otherwise` (a null
    /// condition counts as false), as SQL `CASE WHEN` and Polars `when/then/otherwise`.
    /// Every value has the common type of the branches ([`Expr::data_type`]).
    When {
        /// `(condition, value)` pairs, first match wins.
        branches: Vec<(Expr, Expr)>,
        /// The value where no condition holds.
        otherwise: Box<Expr>,
    },
    /// The first non-null of the values, row by row (SQL `COALESCE`).
    Coalesce(Vec<Expr>),
    /// Values below `lower` raised to it, above `upper` lowered to it (pandas' `clip`:
    /// null and NaN stay), in the common type of the three.
    Clip {
        /// The input.
        expr: Box<Expr>,
        /// The lower bound.
        lower: Box<Expr>,
        /// The upper bound.
        upper: Box<Expr>,
    },
    /// `base ** exponent` in Float64 (NumPy's `power` on floats).
    Pow {
        /// The base.
        base: Box<Expr>,
        /// The exponent.
        exponent: Box<Expr>,
    },
    /// A date or timestamp moved by a calendar interval, in the input's type (see
    /// [`temporal`](super::temporal) for the calendar rules).
    Offset {
        /// A date or timestamp input.
        expr: Box<Expr>,
        /// How far.
        interval: Interval,
    },
    /// The whole `unit`s from `start` to `end`, rounded toward zero (Int64). Dates count
    /// as midnight UTC.
    Elapsed {
        /// The later instant (the result is negative when it is earlier).
        end: Box<Expr>,
        /// The earlier instant.
        start: Box<Expr>,
        /// A unit of fixed length: a week or shorter.
        unit: DateUnit,
    },
    /// A date or timestamp truncated to the start of its `unit`, in the input's type.
    Truncate {
        /// A date or timestamp input.
        expr: Box<Expr>,
        /// The unit.
        unit: DateUnit,
    },
}

/// `when(condition).then(value)...otherwise(value)`: starts a conditional expression.
pub fn when(condition: impl Into<Expr>) -> When {
    When {
        branches: Vec::new(),
        pending: condition.into(),
    }
}

/// A conditional expression being built: a condition waiting for its `then`.
#[derive(Debug, Clone)]
pub struct When {
    branches: Vec<(Expr, Expr)>,
    pending: Expr,
}

/// A conditional expression with at least one branch, waiting for another `when` or its
/// `otherwise`.
#[derive(Debug, Clone)]
pub struct Then {
    branches: Vec<(Expr, Expr)>,
}

impl When {
    /// The value where the condition holds.
    pub fn then(mut self, value: impl Into<Expr>) -> Then {
        self.branches.push((self.pending, value.into()));
        Then {
            branches: self.branches,
        }
    }
}

impl Then {
    /// Another branch, tried when the earlier ones do not hold.
    pub fn when(self, condition: impl Into<Expr>) -> When {
        When {
            branches: self.branches,
            pending: condition.into(),
        }
    }

    /// The value where no condition holds; ends the expression.
    pub fn otherwise(self, value: impl Into<Expr>) -> Expr {
        Expr::When {
            branches: self.branches,
            otherwise: Box::new(value.into()),
        }
    }
}

/// The first non-null of `values`, row by row (SQL `COALESCE`).
pub fn coalesce(values: impl IntoIterator<Item = Expr>) -> Expr {
    Expr::Coalesce(values.into_iter().collect())
}

/// A column reference.
pub fn col(name: impl Into<String>) -> Expr {
    Expr::Column(name.into())
}

/// A literal; `lit(3)`, `lit(0.5)`, `lit("CASH")`, `lit(true)`.
pub fn lit(value: impl Into<Literal>) -> Expr {
    Expr::Literal(value.into())
}

impl From<i64> for Literal {
    fn from(v: i64) -> Self {
        Literal::Int(v)
    }
}
impl From<i32> for Literal {
    fn from(v: i32) -> Self {
        Literal::Int(v.into())
    }
}
impl From<f64> for Literal {
    fn from(v: f64) -> Self {
        Literal::Float(v)
    }
}
impl From<bool> for Literal {
    fn from(v: bool) -> Self {
        Literal::Bool(v)
    }
}
impl From<&str> for Literal {
    fn from(v: &str) -> Self {
        Literal::Str(v.to_string())
    }
}
impl From<String> for Literal {
    fn from(v: String) -> Self {
        Literal::Str(v)
    }
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl Expr {
            $(
                $(#[$doc])*
                pub fn $name(self, other: impl Into<Expr>) -> Expr {
                    Expr::Binary { op: BinaryOp::$op, left: Box::new(self), right: Box::new(other.into()) }
                }
            )*
        }
    };
}

binary_methods! {
    /// `self == other`
    eq => Eq;
    /// `self != other`
    not_eq => NotEq;
    /// `self < other`
    lt => Lt;
    /// `self <= other`
    lt_eq => LtEq;
    /// `self > other`
    gt => Gt;
    /// `self >= other`
    gt_eq => GtEq;
    /// Logical and.
    and => And;
    /// Logical or.
    or => Or;
}

impl Expr {
    /// The terms of a conjunction, left to right (`a & (b & c)` gives `a, b, c`; anything
    /// that is not an `and` is its own only term). A row passes the conjunction exactly
    /// when it passes every term, so a filter can be split, moved or evaluated a term at a
    /// time.
    ///
    /// ```
    /// use tessera_core::frame::{col, lit};
    /// let e = col("a").gt(lit(1)).and(col("b").lt(lit(2)).and(col("c").eq(lit(3))));
    /// assert_eq!(e.conjuncts().len(), 3);
    /// assert_eq!(col("a").gt(lit(1)).or(col("b").lt(lit(2))).conjuncts().len(), 1);
    /// ```
    pub fn conjuncts(&self) -> Vec<&Expr> {
        fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
            match e {
                Expr::Binary {
                    op: BinaryOp::And,
                    left,
                    right,
                } => {
                    walk(left, out);
                    walk(right, out);
                }
                other => out.push(other),
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }

    /// True where null.
    pub fn is_null(self) -> Expr {
        Expr::IsNull(Box::new(self))
    }
    /// True where not null.
    pub fn is_not_null(self) -> Expr {
        Expr::IsNotNull(Box::new(self))
    }
    /// True where a float is NaN; null where null (Arrow keeps NaN and null apart; pandas
    /// counts both as missing).
    pub fn is_nan(self) -> Expr {
        Expr::IsNan(Box::new(self))
    }
    /// Nulls replaced by `value`.
    pub fn fill_null(self, value: impl Into<Expr>) -> Expr {
        Expr::FillNull {
            expr: Box::new(self),
            value: Box::new(value.into()),
        }
    }
    /// Cast to `to`.
    pub fn cast(self, to: DataType) -> Expr {
        Expr::Cast {
            expr: Box::new(self),
            to,
        }
    }
    /// The strings as a categorical ([`categorical_type`]: each distinct value stored
    /// once, the rows as 32-bit codes), as pandas' `astype("category")` and Polars'
    /// `Categorical`: groupbys, joins, sorts and comparisons read the values.
    pub fn categorical(self) -> Expr {
        self.cast(categorical_type())
    }
    /// String contains `pattern` (a literal substring, not a regex).
    pub fn contains(self, pattern: impl Into<String>) -> Expr {
        Expr::Contains {
            expr: Box::new(self),
            pattern: pattern.into(),
        }
    }
    /// A date part.
    pub fn date_part(self, part: DatePart) -> Expr {
        Expr::DatePart {
            expr: Box::new(self),
            part,
        }
    }
    /// Hour of a timestamp.
    pub fn hour(self) -> Expr {
        self.date_part(DatePart::Hour)
    }
    /// Day of the month.
    pub fn day(self) -> Expr {
        self.date_part(DatePart::Day)
    }
    /// Month.
    pub fn month(self) -> Expr {
        self.date_part(DatePart::Month)
    }
    /// Year.
    pub fn year(self) -> Expr {
        self.date_part(DatePart::Year)
    }
    /// Day of the week (Monday = 0).
    pub fn weekday(self) -> Expr {
        self.date_part(DatePart::Weekday)
    }
    /// Quarter of the year, 1..=4.
    pub fn quarter(self) -> Expr {
        self.date_part(DatePart::Quarter)
    }
    /// Day of the year, 1..=366.
    pub fn day_of_year(self) -> Expr {
        self.date_part(DatePart::DayOfYear)
    }

    /// `func` applied to every value.
    pub fn math(self, func: MathFunc) -> Expr {
        Expr::Math {
            func,
            expr: Box::new(self),
        }
    }
    /// Absolute value.
    pub fn abs(self) -> Expr {
        self.math(MathFunc::Abs)
    }
    /// Square root.
    pub fn sqrt(self) -> Expr {
        self.math(MathFunc::Sqrt)
    }
    /// `e^x`.
    pub fn exp(self) -> Expr {
        self.math(MathFunc::Exp)
    }
    /// Natural logarithm.
    pub fn ln(self) -> Expr {
        self.math(MathFunc::Ln)
    }
    /// Floor.
    pub fn floor(self) -> Expr {
        self.math(MathFunc::Floor)
    }
    /// Ceiling.
    pub fn ceil(self) -> Expr {
        self.math(MathFunc::Ceil)
    }
    /// Round half to even.
    pub fn round(self) -> Expr {
        self.math(MathFunc::Round)
    }
    /// True where the value is one of `values` (pandas' `isin`; see [`Expr::IsIn`]).
    pub fn is_in<L: Into<Literal>>(self, values: impl IntoIterator<Item = L>) -> Expr {
        Expr::IsIn {
            expr: Box::new(self),
            values: values.into_iter().map(Into::into).collect(),
        }
    }
    /// `low <= self <= high` (pandas' `between`, both ends included); null where the
    /// value is null.
    pub fn between(self, low: impl Into<Expr>, high: impl Into<Expr>) -> Expr {
        self.clone().gt_eq(low).and(self.lt_eq(high))
    }

    /// A string function of this string expression.
    pub fn str(self, func: StrFunc) -> Expr {
        Expr::Str {
            func,
            expr: Box::new(self),
        }
    }
    /// Starts with `prefix`.
    pub fn starts_with(self, prefix: impl Into<String>) -> Expr {
        self.str(StrFunc::StartsWith(prefix.into()))
    }
    /// Ends with `suffix`.
    pub fn ends_with(self, suffix: impl Into<String>) -> Expr {
        self.str(StrFunc::EndsWith(suffix.into()))
    }
    /// Matches the SQL `LIKE` pattern (`%`, `_`).
    pub fn like(self, pattern: impl Into<String>) -> Expr {
        self.str(StrFunc::Like(pattern.into()))
    }
    /// Lower case.
    pub fn lower(self) -> Expr {
        self.str(StrFunc::Lower)
    }
    /// Upper case.
    pub fn upper(self) -> Expr {
        self.str(StrFunc::Upper)
    }
    /// Whitespace stripped from both ends.
    pub fn strip(self) -> Expr {
        self.str(StrFunc::Strip)
    }
    /// Number of characters.
    pub fn str_len(self) -> Expr {
        self.str(StrFunc::Len)
    }
    /// Every occurrence of `from` replaced by `to`.
    pub fn replace(self, from: impl Into<String>, to: impl Into<String>) -> Expr {
        self.str(StrFunc::Replace {
            from: from.into(),
            to: to.into(),
        })
    }
    /// `len` characters from `start` (negative from the end), or the rest.
    pub fn substring(self, start: i64, len: Option<u64>) -> Expr {
        self.str(StrFunc::Substring { start, len })
    }
    /// Whether the regular expression `pattern` matches anywhere ([`StrFunc::Matches`]).
    pub fn matches(self, pattern: impl Into<String>) -> Expr {
        self.str(StrFunc::Matches(pattern.into()))
    }
    /// Capture group `group` of the first match of `pattern` ([`StrFunc::Extract`]).
    pub fn extract(self, pattern: impl Into<String>, group: usize) -> Expr {
        self.str(StrFunc::Extract {
            pattern: pattern.into(),
            group,
        })
    }
    /// The pieces between occurrences of `sep` ([`StrFunc::Split`]).
    pub fn split(self, sep: impl Into<String>) -> Expr {
        self.str(StrFunc::Split(sep.into()))
    }
    /// Piece `index` of the split by `sep` ([`StrFunc::SplitPart`]).
    pub fn split_part(self, sep: impl Into<String>, index: i64) -> Expr {
        self.str(StrFunc::SplitPart {
            sep: sep.into(),
            index,
        })
    }
    /// `self ** exponent`, in Float64.
    pub fn pow(self, exponent: impl Into<Expr>) -> Expr {
        Expr::Pow {
            base: Box::new(self),
            exponent: Box::new(exponent.into()),
        }
    }
    /// Values below `lower` become `lower`, above `upper` become `upper` (pandas' `clip`;
    /// null and NaN stay).
    pub fn clip(self, lower: impl Into<Expr>, upper: impl Into<Expr>) -> Expr {
        Expr::Clip {
            expr: Box::new(self),
            lower: Box::new(lower.into()),
            upper: Box::new(upper.into()),
        }
    }

    /// Adds the names of the columns this expression reads to `out`.
    pub fn columns_into(&self, out: &mut BTreeSet<String>) {
        match self {
            Expr::Column(c) => {
                out.insert(c.clone());
            }
            Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } => {
                left.columns_into(out);
                right.columns_into(out);
            }
            Expr::FillNull { expr, value } => {
                expr.columns_into(out);
                value.columns_into(out);
            }
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::IsNan(e)
            | Expr::Cast { expr: e, .. }
            | Expr::Contains { expr: e, .. }
            | Expr::DatePart { expr: e, .. }
            | Expr::Math { expr: e, .. }
            | Expr::Str { expr: e, .. }
            | Expr::Offset { expr: e, .. }
            | Expr::Truncate { expr: e, .. }
            | Expr::IsIn { expr: e, .. } => e.columns_into(out),
            Expr::Elapsed { end, start, .. } => {
                end.columns_into(out);
                start.columns_into(out);
            }
            Expr::When {
                branches,
                otherwise,
            } => {
                for (c, v) in branches {
                    c.columns_into(out);
                    v.columns_into(out);
                }
                otherwise.columns_into(out);
            }
            Expr::Coalesce(values) => values.iter().for_each(|v| v.columns_into(out)),
            Expr::Pow { base, exponent } => {
                base.columns_into(out);
                exponent.columns_into(out);
            }
            Expr::Clip { expr, lower, upper } => {
                expr.columns_into(out);
                lower.columns_into(out);
                upper.columns_into(out);
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(c) => write!(f, "{c}"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::Negate(e) => write!(f, "-{e}"),
            Expr::IsNull(e) => write!(f, "{e}.is_null()"),
            Expr::IsNotNull(e) => write!(f, "{e}.is_not_null()"),
            Expr::IsNan(e) => write!(f, "{e}.is_nan()"),
            Expr::FillNull { expr, value } => write!(f, "{expr}.fill_null({value})"),
            Expr::Cast { expr, to } => write!(f, "{expr}.cast({to})"),
            Expr::Contains { expr, pattern } => write!(f, "{expr}.contains({pattern:?})"),
            Expr::DatePart { expr, part } => write!(f, "{expr}.{}()", part.name()),
            Expr::Math { func, expr } => write!(f, "{expr}.{}()", func.name()),
            Expr::IsIn { expr, values } => {
                let v: Vec<String> = values.iter().map(|l| l.to_string()).collect();
                write!(f, "{expr}.is_in([{}])", v.join(", "))
            }
            Expr::Str { func, expr } => match func {
                StrFunc::StartsWith(x) | StrFunc::EndsWith(x) | StrFunc::Like(x) => {
                    write!(f, "{expr}.{}({x:?})", func.name())
                }
                StrFunc::Replace { from, to } => write!(f, "{expr}.replace({from:?}, {to:?})"),
                StrFunc::Substring { start, len } => match len {
                    Some(n) => write!(f, "{expr}.substring({start}, {n})"),
                    None => write!(f, "{expr}.substring({start})"),
                },
                StrFunc::Matches(p) | StrFunc::Split(p) => {
                    write!(f, "{expr}.{}({p:?})", func.name())
                }
                StrFunc::Extract { pattern, group } => {
                    write!(f, "{expr}.extract({pattern:?}, {group})")
                }
                StrFunc::SplitPart { sep, index } => {
                    write!(f, "{expr}.split_part({sep:?}, {index})")
                }
                _ => write!(f, "{expr}.{}()", func.name()),
            },
            Expr::When {
                branches,
                otherwise,
            } => {
                for (i, (c, v)) in branches.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "." };
                    write!(f, "{sep}when({c}).then({v})")?;
                }
                write!(f, ".otherwise({otherwise})")
            }
            Expr::Coalesce(values) => {
                let v: Vec<String> = values.iter().map(|e| e.to_string()).collect();
                write!(f, "coalesce({})", v.join(", "))
            }
            Expr::Pow { base, exponent } => write!(f, "{base}.pow({exponent})"),
            Expr::Clip { expr, lower, upper } => write!(f, "{expr}.clip({lower}, {upper})"),
            Expr::Offset { expr, interval } => write!(f, "{expr}.offset_by({interval})"),
            Expr::Elapsed { end, start, unit } => {
                write!(f, "{end}.elapsed_since({start}, {})", unit.name())
            }
            Expr::Truncate { expr, unit } => write!(f, "{expr}.truncate({})", unit.name()),
        }
    }
}

impl From<Literal> for Expr {
    fn from(l: Literal) -> Self {
        Expr::Literal(l)
    }
}
impl From<i64> for Expr {
    fn from(v: i64) -> Self {
        lit(v)
    }
}
impl From<i32> for Expr {
    fn from(v: i32) -> Self {
        lit(v)
    }
}
impl From<f64> for Expr {
    fn from(v: f64) -> Self {
        lit(v)
    }
}
impl From<bool> for Expr {
    fn from(v: bool) -> Self {
        lit(v)
    }
}
impl From<&str> for Expr {
    fn from(v: &str) -> Self {
        lit(v)
    }
}

macro_rules! std_ops {
    ($($trait:ident $method:ident => $op:ident;)*) => {$(
        impl<R: Into<Expr>> std::ops::$trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                Expr::Binary { op: BinaryOp::$op, left: Box::new(self), right: Box::new(rhs.into()) }
            }
        }
    )*};
}

std_ops! {
    Add add => Add;
    Sub sub => Sub;
    Mul mul => Mul;
    Div div => Div;
    Rem rem => Rem;
    BitAnd bitand => And;
    BitOr bitor => Or;
}

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Negate(Box::new(self))
    }
}

/// The type of a categorical column: a dictionary of `Utf8` values with `Int32` codes
/// (what pyarrow gives pandas' `category` of strings, and Polars' `Categorical`).
pub fn categorical_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{Field, Schema, TimeUnit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
            Field::new("g", DataType::Float32, true),
            Field::new("t", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        ])
    }

    #[test]
    fn typing_follows_pandas() {
        let s = schema();
        assert_eq!(
            (col("i") / col("i")).data_type(&s).unwrap(),
            DataType::Float64
        );
        assert_eq!(
            (col("i") + col("s")).data_type(&s).unwrap(),
            DataType::Int64
        );
        assert_eq!(
            (col("g") * lit(2)).data_type(&s).unwrap(),
            DataType::Float32
        );
        assert_eq!(
            (col("g") * lit(2.5)).data_type(&s).unwrap(),
            DataType::Float32
        );
        assert_eq!(
            (col("i") * lit(2.5)).data_type(&s).unwrap(),
            DataType::Float64
        );
        assert_eq!((col("s") + lit(1)).data_type(&s).unwrap(), DataType::Int32);
        assert_eq!(col("f").gt(0).data_type(&s).unwrap(), DataType::Boolean);
        assert_eq!(col("ts").hour().data_type(&s).unwrap(), DataType::Int32);
        assert_eq!(
            col("ts").gt_eq(lit("2015-01-10")).data_type(&s).unwrap(),
            DataType::Boolean
        );
        assert_eq!(
            (col("b") & col("f").gt(1)).data_type(&s).unwrap(),
            DataType::Boolean
        );
    }

    #[test]
    fn decimals_type_as_duckdb_does() {
        let schema = Schema::new(vec![
            arrow_schema::Field::new("p", DataType::Decimal128(15, 2), true),
            arrow_schema::Field::new("t", DataType::Decimal128(10, 4), true),
            arrow_schema::Field::new("i", DataType::Int32, true),
            arrow_schema::Field::new("f", DataType::Float64, true),
            arrow_schema::Field::new("w", DataType::Decimal128(38, 20), true),
        ]);
        let t = |e: Expr| e.data_type(&schema);
        assert_eq!(t(col("p") + col("t")).unwrap(), DataType::Decimal128(18, 4));
        assert_eq!(t(lit(1) - col("p")).unwrap(), DataType::Decimal128(16, 2));
        assert_eq!(t(col("p") * col("t")).unwrap(), DataType::Decimal128(25, 6));
        assert_eq!(t(col("p") * col("i")).unwrap(), DataType::Decimal128(25, 2));
        assert_eq!(t(col("p") / col("t")).unwrap(), DataType::Float64);
        // A float literal is the decimal it is written as (DuckDB reads `0.5` so).
        assert_eq!(t(col("p") * lit(0.5)).unwrap(), DataType::Decimal128(16, 3));
        assert_eq!(t(col("p") * lit(1e-300)).unwrap(), DataType::Float64);
        assert_eq!(t(col("p") + col("f")).unwrap(), DataType::Float64);
        assert_eq!(t(col("p").gt(col("t"))).unwrap(), DataType::Boolean);
        let plan = decimal_types(
            BinaryOp::Lt,
            &col("p"),
            &DataType::Decimal128(15, 2),
            &lit(3),
            &DataType::Int64,
        )
        .unwrap()
        .unwrap();
        // The column is compared as it is; the literal is cast to it.
        assert_eq!(plan.operand, DataType::Decimal128(15, 2));
        let plan = decimal_types(
            BinaryOp::LtEq,
            &col("p"),
            &DataType::Decimal128(15, 2),
            &lit(0.055),
            &DataType::Float64,
        )
        .unwrap()
        .unwrap();
        assert_eq!(plan.operand, DataType::Decimal128(16, 3));
        let e = t(col("w") * col("w")).unwrap_err().to_string();
        assert!(e.contains("scale 40") && e.contains("Float64"), "{e}");
        assert_eq!(t(col("p").sqrt()).unwrap(), DataType::Float64);
    }

    #[test]
    fn type_errors_name_the_problem() {
        let s = schema();
        let e = col("nope").data_type(&s).unwrap_err().to_string();
        assert!(
            e.contains("no column 'nope'") && e.contains("columns: i, s"),
            "{e}"
        );
        let e = (col("t") + lit(1)).data_type(&s).unwrap_err().to_string();
        assert!(e.contains("cannot combine Utf8 and Int64"), "{e}");
        let e = col("f").hour().data_type(&s).unwrap_err().to_string();
        assert!(e.contains("parse_dates"), "{e}");
        let e = (col("i") & col("b")).data_type(&s).unwrap_err().to_string();
        assert!(e.contains("cannot combine Int64 and Boolean"), "{e}");
        let e = (col("i") | col("i")).data_type(&s).unwrap_err().to_string();
        assert!(e.contains("needs booleans, got Int64 and Int64"), "{e}");
    }

    #[test]
    fn columns_and_display() {
        let e = (col("tip") / col("fare")).gt(0.1) & !col("x").is_null();
        let mut cols = BTreeSet::new();
        e.columns_into(&mut cols);
        assert_eq!(cols.into_iter().collect::<Vec<_>>(), ["fare", "tip", "x"]);
        assert_eq!(e.to_string(), "(((tip / fare) > 0.1) & !x.is_null())");
    }
}

//! The text of a reduction's accumulator: its dtype, identity, the fold of one element and
//! the combine of two partial results (tessera-core's `ReduceOp` semantics).
//!
//! Integer sums and products wrap in the result dtype (`int64` or `uint64`), as NumPy's do;
//! min and max propagate NaN; the arg-reductions carry the C-order position over the
//! reduced axes next to the value and prefer the first NaN, then the smaller value, then
//! the smaller position, so that folding in any order gives the first extremum.

use tessera_core::program::ReduceOp;
use tessera_core::DType;

use super::names::ctype;

/// The dtype pass one accumulates `op` over `x` in.
pub(super) fn acc_dtype(op: ReduceOp, x: DType) -> DType {
    match op {
        ReduceOp::ArgMin | ReduceOp::ArgMax => x,
        _ => op.result_dtype(x),
    }
}

pub(super) struct Reducer {
    op: ReduceOp,
    x: DType,
    pub acc: DType,
    pub out: DType,
}

impl Reducer {
    pub fn new(op: ReduceOp, x: DType) -> Self {
        Reducer {
            op,
            x,
            acc: acc_dtype(op, x),
            out: op.result_dtype(x),
        }
    }

    pub fn is_arg(&self) -> bool {
        matches!(self.op, ReduceOp::ArgMin | ReduceOp::ArgMax)
    }

    fn float(&self) -> bool {
        self.x.is_float()
    }

    /// The accumulator's starting value.
    pub fn identity(&self) -> String {
        let a = ctype(self.acc);
        match self.op {
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Count | ReduceOp::Any => format!("({a})0"),
            ReduceOp::Prod | ReduceOp::All => format!("({a})1"),
            ReduceOp::ArgMin | ReduceOp::ArgMax => format!("({a})0"),
            ReduceOp::Min | ReduceOp::Max => {
                let min = self.op == ReduceOp::Min;
                if self.float() {
                    let inf = if min {
                        "0x7ff0000000000000ULL"
                    } else {
                        "0xfff0000000000000ULL"
                    };
                    format!("({a})tsr_f64_of({inf})")
                } else {
                    // The type's largest value for min, its smallest for max.
                    let (lo, hi) = bounds(self.x);
                    format!("({a}){}", if min { hi } else { lo })
                }
            }
        }
    }

    /// The statement folding element `v` (at reduced position `r`) into `acc` (and `ai`).
    pub fn fold(&self, v: &str, r: &str) -> String {
        let a = ctype(self.acc);
        let wrapping = !self.acc.is_float();
        match self.op {
            ReduceOp::Sum | ReduceOp::NanSum if wrapping => {
                format!("acc = ({a})((u64)acc + (u64)({a}){v});")
            }
            ReduceOp::NanSum => format!("if ({v} == {v}) acc = acc + {v};"),
            ReduceOp::Sum => format!("acc = acc + {v};"),
            ReduceOp::Prod if wrapping => format!("acc = ({a})((u64)acc * (u64)({a}){v});"),
            ReduceOp::Prod => format!("acc = acc * {v};"),
            ReduceOp::Min | ReduceOp::Max => {
                format!("{{ {a} y = {v}; {} }}", self.pick("acc", "y"))
            }
            ReduceOp::Any => format!("acc = (b8)(acc | (b8)({v} != 0));"),
            ReduceOp::All => format!("acc = (b8)(acc & (b8)({v} != 0));"),
            ReduceOp::Count if self.float() => format!("acc += ({v} == {v}) ? 1 : 0;"),
            ReduceOp::Count => "acc += 1;".to_string(),
            ReduceOp::ArgMin | ReduceOp::ArgMax => format!(
                "{{ {a} y = {v}; i64 yi = {r}; if ({}) {{ acc = y; ai = yi; }} }}",
                self.better("y", "yi", "acc", "ai")
            ),
        }
    }

    /// The statement combining partial `y` (`yi`) into `x` (`xi`); `x` holds the earlier
    /// positions, so ties keep it.
    pub fn combine(&self, x: &str, xi: &str, y: &str, yi: &str) -> String {
        let a = ctype(self.acc);
        let wrapping = !self.acc.is_float();
        match self.op {
            ReduceOp::Sum | ReduceOp::NanSum if wrapping => {
                format!("{x} = ({a})((u64){x} + (u64){y});")
            }
            ReduceOp::Sum | ReduceOp::NanSum => format!("{x} = {x} + {y};"),
            ReduceOp::Prod if wrapping => format!("{x} = ({a})((u64){x} * (u64){y});"),
            ReduceOp::Prod => format!("{x} = {x} * {y};"),
            ReduceOp::Min | ReduceOp::Max => self.pick(x, y),
            ReduceOp::Any => format!("{x} = (b8)({x} | {y});"),
            ReduceOp::All => format!("{x} = (b8)({x} & {y});"),
            ReduceOp::Count => format!("{x} += {y};"),
            ReduceOp::ArgMin | ReduceOp::ArgMax => format!(
                "if ({}) {{ {x} = {y}; {xi} = {yi}; }}",
                self.better(y, yi, x, xi)
            ),
        }
    }

    /// `x = min(x, y)` or max, NaN-propagating for floats.
    fn pick(&self, x: &str, y: &str) -> String {
        let min = self.op == ReduceOp::Min;
        if self.float() {
            let f = match (min, self.x == DType::F32) {
                (true, true) => "tsr_fminf",
                (true, false) => "tsr_fmin",
                (false, true) => "tsr_fmaxf",
                (false, false) => "tsr_fmax",
            };
            format!("{x} = {f}({x}, {y});")
        } else {
            let c = if min { "<" } else { ">" };
            format!("if ({y} {c} {x}) {x} = {y};")
        }
    }

    /// Whether candidate `v` at position `vi` beats the current `a` at `ai` (`ai < 0`:
    /// nothing yet; `vi < 0`: no candidate).
    fn better(&self, v: &str, vi: &str, a: &str, ai: &str) -> String {
        let c = if self.op == ReduceOp::ArgMin {
            "<"
        } else {
            ">"
        };
        if self.float() {
            format!(
                "{vi} >= 0 && ({ai} < 0 || (({v} != {v}) ? ({a} == {a} || {vi} < {ai}) : ({a} == {a} && ({v} {c} {a} || ({v} == {a} && {vi} < {ai})))))"
            )
        } else {
            format!("{vi} >= 0 && ({ai} < 0 || {v} {c} {a} || ({v} == {a} && {vi} < {ai}))")
        }
    }

    /// The result from the final accumulator.
    pub fn finish(&self, x: &str, xi: &str) -> String {
        if self.is_arg() {
            xi.to_string()
        } else {
            x.to_string()
        }
    }
}

/// The smallest and largest value of an integer (or bool) dtype, as C literals.
fn bounds(d: DType) -> (&'static str, &'static str) {
    match d {
        DType::Bool => ("0", "1"),
        DType::I8 => ("-128", "127"),
        DType::I16 => ("-32768", "32767"),
        DType::I32 => ("(-2147483647 - 1)", "2147483647"),
        DType::I64 => ("(i64)0x8000000000000000ULL", "(i64)0x7fffffffffffffffULL"),
        DType::U8 => ("0", "255"),
        DType::U16 => ("0", "65535"),
        DType::U32 => ("0", "4294967295U"),
        _ => ("0", "0xffffffffffffffffULL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::dtype::DTypeKind;

    #[test]
    fn accumulators_follow_numpy_result_types() {
        assert_eq!(acc_dtype(ReduceOp::Sum, DType::U8), DType::U64);
        assert_eq!(acc_dtype(ReduceOp::Sum, DType::Bool), DType::I64);
        assert_eq!(acc_dtype(ReduceOp::Prod, DType::F32), DType::F32);
        assert_eq!(acc_dtype(ReduceOp::ArgMax, DType::I16), DType::I16);
        assert_eq!(acc_dtype(ReduceOp::Count, DType::F64), DType::I64);
        assert_eq!(DTypeKind::Int, DType::I8.kind());
    }

    #[test]
    fn min_and_max_start_from_the_far_end() {
        assert_eq!(
            Reducer::new(ReduceOp::Min, DType::U16).identity(),
            "(u16)65535"
        );
        assert_eq!(
            Reducer::new(ReduceOp::Max, DType::I8).identity(),
            "(i8)-128"
        );
        assert!(Reducer::new(ReduceOp::Min, DType::F64)
            .identity()
            .contains("0x7ff0000000000000"));
    }
}

//! NumPy ufuncs on tessera arrays (`__array_ufunc__`): `np.sqrt(x)`, `np.add(a, x)`,
//! `np_array * x` stay lazy and run on the array's backend. A ufunc tessera does not have
//! gives `None`, so the caller returns `NotImplemented` and NumPy raises its usual
//! `TypeError`.

use tessera::program::{BinaryOp, UnaryOp};
use tessera::{Array, Scalar};

/// An operand of an operator or a ufunc: an array, or a weak Python scalar (NEP 50).
pub enum Operand {
    /// A tessera array (NumPy data already converted into one).
    Array(Array),
    /// A Python `bool`, `int` or `float`.
    Weak(Scalar),
}

/// The unary ufunc of that NumPy name.
pub fn unary_op(name: &str) -> Option<UnaryOp> {
    UnaryOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .or(match name {
            "absolute" => Some(UnaryOp::Abs),
            "rint" => Some(UnaryOp::Round),
            _ => None,
        })
}

/// The binary ufunc of that NumPy name.
pub fn binary_op(name: &str) -> Option<BinaryOp> {
    BinaryOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .or(match name {
            "true_divide" => Some(BinaryOp::Div),
            "mod" => Some(BinaryOp::Rem),
            _ => None,
        })
}

/// Applies the ufunc `name` to `inputs`; `None` for a ufunc or an arity tessera does
/// not have, or for scalars alone.
pub fn apply(name: &str, inputs: Vec<Operand>) -> Option<tessera::Result<Array>> {
    let mut it = inputs.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(Operand::Array(a)), None, None) => unary_op(name).map(|op| a.unary(op)),
        (Some(a), Some(b), None) => {
            let op = binary_op(name)?;
            match (a, b) {
                (Operand::Array(a), Operand::Array(b)) => Some(a.binary(op, &b)),
                (Operand::Array(a), Operand::Weak(s)) => Some(a.binary_scalar(op, s, false)),
                (Operand::Weak(s), Operand::Array(b)) => Some(b.binary_scalar(op, s, true)),
                (Operand::Weak(_), Operand::Weak(_)) => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_names_map_to_ops() {
        assert_eq!(unary_op("sqrt"), Some(UnaryOp::Sqrt));
        assert_eq!(unary_op("absolute"), Some(UnaryOp::Abs));
        assert_eq!(binary_op("true_divide"), Some(BinaryOp::Div));
        assert_eq!(binary_op("floor_divide"), Some(BinaryOp::FloorDiv));
        assert_eq!(binary_op("arctan2"), Some(BinaryOp::Atan2));
        assert_eq!(binary_op("bitwise_and"), Some(BinaryOp::BitAnd));
        assert_eq!(unary_op("invert"), Some(UnaryOp::Invert));
        assert_eq!(binary_op("ldexp"), None);
    }
}

//! Reductions over axes ([`ReduceOp`]): their dtype rules, identities and scalar folds.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Reductions over axes.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Prod,
    /// NaN-propagating minimum.
    Min,
    /// NaN-propagating maximum.
    Max,
    Any,
    All,
    /// Sum ignoring NaN.
    NanSum,
    /// Number of non-NaN elements (`int64`).
    Count,
    /// C-order flat position of the first minimum over the reduced axes (first NaN wins).
    ArgMin,
    /// C-order flat position of the first maximum over the reduced axes (first NaN wins).
    ArgMax,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 10] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Any,
        ReduceOp::All,
        ReduceOp::NanSum,
        ReduceOp::Count,
        ReduceOp::ArgMin,
        ReduceOp::ArgMax,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
            ReduceOp::NanSum => "nansum",
            ReduceOp::Count => "count",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::ArgMax => "argmax",
        }
    }

    /// Result dtype for an input of dtype `x`.
    pub fn result_dtype(self, x: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::NanSum => x.sum_result(),
            ReduceOp::Min | ReduceOp::Max => x,
            ReduceOp::Any | ReduceOp::All => DType::Bool,
            ReduceOp::Count | ReduceOp::ArgMin | ReduceOp::ArgMax => DType::I64,
        }
    }

    /// Whether the reduction is defined on an empty set (min/max/arg* are not).
    pub fn has_identity(self) -> bool {
        !matches!(
            self,
            ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax
        )
    }

    /// Checks that the reduction over `axes` of `shape` has a value. Min, max and the
    /// arg-reductions have no identity, so a reduced axis of length 0 is an error, even
    /// when the result itself would be empty (NumPy's rule). Every backend's `reduce` and
    /// reduction epilogue applies it, so all of them refuse the same inputs.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the op and the shape.
    pub fn check_identity(self, shape: &[usize], axes: &[usize]) -> Result<()> {
        if self.has_identity() || !axes.iter().any(|&a| shape.get(a) == Some(&0)) {
            return Ok(());
        }
        Err(Error::invalid(
            self.name(),
            format!(
                "zero-size array (shape {shape:?}, axes {axes:?}) to reduction operation {} which has no identity",
                self.name()
            ),
        ))
    }

    /// Whether an input dtype is accepted: every reduction takes every dtype (NumPy 2's
    /// `nansum` of bool counts the trues: a bool has no NaN).
    pub fn accepts(self, x: DType) -> bool {
        let _ = (self, x);
        true
    }
}

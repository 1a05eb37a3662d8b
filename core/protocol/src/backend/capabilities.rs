//! What an array backend declares it does not do: [`Capabilities`], the `(op, dtype)`
//! pairs it declares unsupported, each op an [`ArrayOp`].

use std::collections::BTreeSet;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::program::ArrayOp;

/// What a backend supports, as data: a set of `(op, dtype)` pairs it does *not* support.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    unsupported: BTreeSet<(ArrayOp, DType)>,
    /// Where the chunks live (`host`, `cuda:0`, ...), for reprs and listings.
    pub device: String,
    /// True when [`ArrayBackend::execute`](super::ArrayBackend::execute) runs fused programs natively. Informational:
    /// shown by `tessera backends`; the engine hands programs to `execute` either way.
    pub native_programs: bool,
}

impl Capabilities {
    /// Everything supported, on `device`.
    pub fn all(device: &str) -> Capabilities {
        Capabilities {
            unsupported: BTreeSet::new(),
            device: device.to_string(),
            native_programs: false,
        }
    }

    /// Declares `op` unsupported for each of `dtypes`.
    pub fn without(mut self, op: impl Into<ArrayOp>, dtypes: &[DType]) -> Capabilities {
        let op = op.into();
        for &d in dtypes {
            self.unsupported.insert((op, d));
        }
        self
    }

    /// Declares each of `ops` unsupported for every dtype: for an optional op family the
    /// backend does not implement at all (e.g. [`Capabilities::BLOCK_LINALG`]).
    pub fn without_ops(mut self, ops: &[ArrayOp]) -> Capabilities {
        for &op in ops {
            self = self.without(op, &DType::ALL);
        }
        self
    }

    /// The optional block linear-algebra kernels ([`ArrayBackend::qr`](super::ArrayBackend::qr),
    /// [`ArrayBackend::svd`](super::ArrayBackend::svd)): a backend that does not implement them declares them with
    /// `without_ops(Capabilities::BLOCK_LINALG)`, and `tessera-array`'s linear algebra
    /// runs them on the host with the `cpu` backend, saying so in the log.
    pub const BLOCK_LINALG: &'static [ArrayOp] = &[ArrayOp::Qr, ArrayOp::Svd];

    /// Marks native program execution.
    pub fn with_native_programs(mut self) -> Capabilities {
        self.native_programs = true;
        self
    }

    /// True when `op` on `dtype` is supported.
    pub fn supports(&self, op: impl Into<ArrayOp>, dtype: DType) -> bool {
        !self.unsupported.contains(&(op.into(), dtype))
    }

    /// `Ok` when supported, else [`Error::Unsupported`] naming `backend`.
    ///
    /// # Errors
    /// As above.
    pub fn check(&self, backend: &str, op: impl Into<ArrayOp>, dtype: DType) -> Result<()> {
        let op = op.into();
        if self.supports(op, dtype) {
            Ok(())
        } else {
            Err(Error::Unsupported {
                backend: backend.to_string(),
                op: op.name().to_string(),
                dtype,
            })
        }
    }

    /// The declared gaps.
    pub fn unsupported(&self) -> impl Iterator<Item = &(ArrayOp, DType)> {
        self.unsupported.iter()
    }

    /// Every op name the protocol knows, for listings and the conformance matrix.
    pub fn op_names() -> Vec<&'static str> {
        ArrayOp::all().into_iter().map(ArrayOp::name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::UnaryOp;

    #[test]
    fn a_declared_gap_is_refused_with_the_op_named() {
        let caps = Capabilities::all("host").without(UnaryOp::Cos, &[DType::F32]);
        assert!(caps.supports(UnaryOp::Cos, DType::F64));
        assert!(!caps.supports(ArrayOp::Unary(UnaryOp::Cos), DType::F32));
        let err = caps.check("b", UnaryOp::Cos, DType::F32).unwrap_err();
        assert!(
            matches!(&err, Error::Unsupported { op, .. } if op == "cos"),
            "{err}"
        );
    }
}

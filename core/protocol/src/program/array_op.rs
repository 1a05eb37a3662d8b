//! [`ArrayOp`]: the name of every op a backend can be asked for, as a closed set. A
//! backend's capabilities name their gaps with it, so a misspelt op fails to compile, and
//! fails to load where ops travel by name (the plugin ABI).

use std::fmt;

use super::ops::{BinaryOp, ReduceOp, UnaryOp};
use super::scan_op::ScanOp;

/// An op a backend can declare unsupported for a dtype: the structural entry points of
/// `ArrayBackend` and every elementwise and reduce op of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArrayOp {
    /// `from_host`: a chunk made from host data (also every chunk a storage format reads).
    FromHost,
    /// `to_host`.
    ToHost,
    /// `full`.
    Full,
    /// `random`: counter-based random generation.
    Random,
    /// `iota`: coordinates.
    Iota,
    /// `astype`, to any dtype.
    Astype,
    /// `where`.
    Where,
    /// `slice`.
    Slice,
    /// `transpose`.
    Transpose,
    /// `reshape`.
    Reshape,
    /// `broadcast_to`.
    BroadcastTo,
    /// `concatenate`.
    Concatenate,
    /// `matmul`.
    Matmul,
    /// `qr` of a block (optional: see `Capabilities::BLOCK_LINALG`).
    Qr,
    /// `svd` of a block (optional, as `qr`).
    Svd,
    /// `sort` of a block along an axis (optional: the default sorts on the host).
    Sort,
    /// An elementwise unary op.
    Unary(UnaryOp),
    /// An elementwise binary op.
    Binary(BinaryOp),
    /// A reduction.
    Reduce(ReduceOp),
    /// A cumulative scan along one axis ([`ArrayBackend::scan`](crate::ArrayBackend::scan)).
    Scan(ScanOp),
}

impl ArrayOp {
    /// The structural ops, in the order listings show them.
    const STRUCTURAL: [ArrayOp; 16] = [
        ArrayOp::FromHost,
        ArrayOp::ToHost,
        ArrayOp::Full,
        ArrayOp::Random,
        ArrayOp::Iota,
        ArrayOp::Astype,
        ArrayOp::Where,
        ArrayOp::Slice,
        ArrayOp::Transpose,
        ArrayOp::Reshape,
        ArrayOp::BroadcastTo,
        ArrayOp::Concatenate,
        ArrayOp::Matmul,
        ArrayOp::Qr,
        ArrayOp::Svd,
        ArrayOp::Sort,
    ];

    /// Every op: the structural ones, then the unary, binary, reduce and scan ops.
    pub fn all() -> Vec<ArrayOp> {
        let mut v = ArrayOp::STRUCTURAL.to_vec();
        v.extend(UnaryOp::ALL.iter().map(|&o| ArrayOp::Unary(o)));
        v.extend(BinaryOp::ALL.iter().map(|&o| ArrayOp::Binary(o)));
        v.extend(ReduceOp::ALL.iter().map(|&o| ArrayOp::Reduce(o)));
        v.extend(ScanOp::ALL.iter().map(|&o| ArrayOp::Scan(o)));
        v
    }

    /// The op's name, as listings, errors and the plugin ABI carry it (`from_host`,
    /// `sqrt`, `add`, `sum`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ArrayOp::FromHost => "from_host",
            ArrayOp::ToHost => "to_host",
            ArrayOp::Full => "full",
            ArrayOp::Random => "random",
            ArrayOp::Iota => "iota",
            ArrayOp::Astype => "astype",
            ArrayOp::Where => "where",
            ArrayOp::Slice => "slice",
            ArrayOp::Transpose => "transpose",
            ArrayOp::Reshape => "reshape",
            ArrayOp::BroadcastTo => "broadcast_to",
            ArrayOp::Concatenate => "concatenate",
            ArrayOp::Matmul => "matmul",
            ArrayOp::Qr => "qr",
            ArrayOp::Svd => "svd",
            ArrayOp::Sort => "sort",
            ArrayOp::Unary(o) => o.name(),
            ArrayOp::Binary(o) => o.name(),
            ArrayOp::Reduce(o) => o.name(),
            ArrayOp::Scan(o) => o.name(),
        }
    }

    /// The op named `name`, if the protocol has one.
    pub fn parse(name: &str) -> Option<ArrayOp> {
        ArrayOp::all().into_iter().find(|op| op.name() == name)
    }
}

impl fmt::Display for ArrayOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<UnaryOp> for ArrayOp {
    fn from(op: UnaryOp) -> ArrayOp {
        ArrayOp::Unary(op)
    }
}

impl From<BinaryOp> for ArrayOp {
    fn from(op: BinaryOp) -> ArrayOp {
        ArrayOp::Binary(op)
    }
}

impl From<ScanOp> for ArrayOp {
    fn from(op: ScanOp) -> ArrayOp {
        ArrayOp::Scan(op)
    }
}

impl From<ReduceOp> for ArrayOp {
    fn from(op: ReduceOp) -> ArrayOp {
        ArrayOp::Reduce(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_op_name_parses_back_to_its_op_and_names_are_distinct() {
        let all = ArrayOp::all();
        for &op in &all {
            assert_eq!(ArrayOp::parse(op.name()), Some(op), "{op}");
        }
        let names: BTreeSet<&str> = all.iter().map(|o| o.name()).collect();
        assert_eq!(names.len(), all.len(), "two ops share a name");
        assert_eq!(ArrayOp::parse("from_source"), None);
    }
}

//! Analyses of a program before its tiles run: which constants can stay scalars, and
//! which float64 random sources are only shifted by a constant (`x + c`, `c + x`, `x - c`)
//! and can be generated with the shift added.

use tessera_core::program::{BinaryOp, Node, Program};
use tessera_core::DType;

/// Which nodes are constants read only as the scalar side of float arithmetic
/// (`x + 1`), so that `run_range` need not fill a tile with them.
pub(crate) fn scalar_constants(program: &Program) -> Vec<bool> {
    let arith = |op: BinaryOp| {
        matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    };
    let mut scalar: Vec<bool> = program
        .nodes
        .iter()
        .zip(&program.dtypes)
        .map(|(n, d)| matches!(n, Node::Const(_)) && matches!(d, DType::F64 | DType::F32))
        .collect();
    for n in &program.nodes {
        // A constant on one side of arithmetic with a tile on the other stays a scalar.
        let as_scalar = matches!(*n, Node::Binary { op, a, b }
            if arith(op)
                && matches!(program.nodes[a], Node::Const(_))
                    != matches!(program.nodes[b], Node::Const(_)));
        if !as_scalar {
            for x in n.operands() {
                scalar[x] = false;
            }
        }
    }
    for o in &program.outputs {
        scalar[o.node] = false;
    }
    scalar
}

/// Float64 random sources that a program only shifts by a constant (`x + c`, `c + x`,
/// `x - c`, with nothing else reading `x`), such as the seed's `(x + 1)[::2, ::2]`.
/// `plus[i]` is the constant to add to source `i` as it is generated
/// (`RandomSpec::sample_runs_plus_into`, `-c` for `x - c`), and `from[j]` the source
/// whose tile the shift `j` then simply takes. The generator adds the same constant in the
/// same order, so the bits are those of the separate pass it saves. Both are empty for a
/// program without random sources.
pub(crate) struct Shifts {
    pub(crate) plus: Vec<Option<f64>>,
    pub(crate) from: Vec<Option<usize>>,
}

impl Shifts {
    pub(crate) fn of(program: &Program, scalar: &[bool]) -> Shifts {
        // Most programs have no random source: no allocation for them.
        if !program
            .nodes
            .iter()
            .any(|n| matches!(n, Node::Random { .. }))
        {
            return Shifts {
                plus: Vec::new(),
                from: Vec::new(),
            };
        }
        let n = program.nodes.len();
        let mut readers = vec![0usize; n];
        for k in program.nodes.iter().flat_map(Node::operands) {
            readers[k] += 1;
        }
        for o in &program.outputs {
            readers[o.node] += 1;
        }
        let mut shifts = Shifts {
            plus: vec![None; n],
            from: vec![None; n],
        };
        for (j, node) in program.nodes.iter().enumerate() {
            let Node::Binary { op, a, b } = *node else {
                continue;
            };
            let (source, c) = match (op, &program.nodes[a], &program.nodes[b]) {
                (BinaryOp::Add, Node::Random { .. }, Node::Const(c)) if scalar[b] => {
                    (a, c.as_f64())
                }
                (BinaryOp::Add, Node::Const(c), Node::Random { .. }) if scalar[a] => {
                    (b, c.as_f64())
                }
                (BinaryOp::Sub, Node::Random { .. }, Node::Const(c)) if scalar[b] => {
                    (a, -c.as_f64())
                }
                _ => continue,
            };
            let float64 = program.dtypes[j] == DType::F64 && program.dtypes[source] == DType::F64;
            if float64 && readers[source] == 1 {
                shifts.plus[source] = Some(c);
                shifts.from[j] = Some(source);
            }
        }
        shifts
    }
}

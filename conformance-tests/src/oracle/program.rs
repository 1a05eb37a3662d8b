//! A fused program evaluated node by node over the whole region, from the node
//! definitions: what every backend's `execute` must agree with, however it fuses, tiles
//! or vectorises.

use tessera_core::program::{Node, Program};
use tessera_core::{DType, HostArray};

use super::layout::{count, map_coords, ravel, unravel};
use super::random::sample;
use super::reduce::{reduce, NoIdentity};
use super::values::{binary, build, cast, read, unary, V};

/// The program's results on `inputs`; `None` when it samples a distribution the oracle
/// does not define (normal), `Err` when a reduction epilogue has no identity.
pub fn execute(
    program: &Program,
    inputs: &[HostArray],
) -> Option<Result<Vec<HostArray>, NoIdentity>> {
    let shape = &program.shape;
    let n = count(shape);
    let positions: Vec<Vec<usize>> = (0..n).map(|p| unravel(p, shape)).collect();
    let data: Vec<Vec<V>> = inputs.iter().map(read).collect();
    let mut vals: Vec<Vec<V>> = Vec::with_capacity(program.nodes.len());
    for node in &program.nodes {
        let dt = |id: usize| program.dtypes[id];
        let col: Vec<V> = match node {
            Node::Input { slot, map } => positions
                .iter()
                .map(|o| data[*slot][ravel(&map_coords(map, o), &map.src_shape)])
                .collect(),
            Node::Const(s) => vec![V::of(*s); n],
            Node::Random { spec, map } => positions
                .iter()
                .map(|o| sample(spec, ravel(&map_coords(map, o), &map.src_shape) as u64))
                .collect::<Option<Vec<V>>>()?,
            Node::Index { map, axis } => positions
                .iter()
                .map(|o| V::I(map_coords(map, o)[*axis] as i128))
                .collect(),
            Node::Cast { x, to } => vals[*x].iter().map(|&v| cast(v, *to)).collect(),
            Node::Unary { op, x } => vals[*x].iter().map(|&v| unary(*op, v, dt(*x))).collect(),
            Node::Binary { op, a, b } => vals[*a]
                .iter()
                .zip(&vals[*b])
                .map(|(&x, &y)| binary(*op, x, y, dt(*a)))
                .collect(),
            Node::Where { cond, a, b } => (0..n)
                .map(|p| {
                    if vals[*cond][p].truthy() {
                        vals[*a][p]
                    } else {
                        vals[*b][p]
                    }
                })
                .collect(),
        };
        vals.push(col);
    }
    let out = program
        .outputs
        .iter()
        .map(|o| {
            let d: DType = program.dtypes[o.node];
            match &o.reduce {
                None => Ok(build(shape, d, &vals[o.node])),
                Some(r) => {
                    let (v, s) = reduce(&vals[o.node], shape, d, r.op, &r.axes)?;
                    Ok(build(&s, r.op.result_dtype(d), &v))
                }
            }
        })
        .collect();
    Some(out)
}

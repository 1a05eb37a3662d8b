//! The backend primitives as fused programs: one program each.
//!
//! A backend that executes programs natively implements most primitives by building the
//! program here and running it, so every elementwise op, generator, strided read and
//! reduction the protocol asks for goes through the same executor as the fused chains the
//! engine lowers — on the CPU one tiled pass, on a GPU one generated kernel. The CPU and
//! CUDA backends share these definitions. Reshape, concatenate, matmul and host transfers
//! are copies or library calls, not programs. [`program_primitives!`](crate::program_primitives)
//! writes the trait methods that build these and run them.

use super::{BinaryOp, IndexMap, Program, ProgramBuilder, ReduceOp, Reduction, UnaryOp};
use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::random::RandomSpec;

/// Runs a primitive's one-output program on `backend` and returns its output.
///
/// # Errors
/// Those of the backend's [`ArrayBackend::execute`].
pub fn run_one<B: ArrayBackend + ?Sized>(
    backend: &B,
    program: Program,
    inputs: &[Chunk],
) -> Result<Chunk> {
    let mut out = backend.execute(&program, inputs)?;
    if out.len() != 1 {
        return Err(Error::Internal(format!(
            "backend '{}' returned {} outputs for a one-output program",
            backend.name(),
            out.len()
        )));
    }
    Ok(out.remove(0))
}

/// Implements the program-shaped primitives of [`ArrayBackend`] — `random`, `iota`,
/// `unary`, `binary`, `where_`, `slice`, `transpose`, `broadcast_to`, `reduce` — by building
/// each one's program here and running it through the backend's own `execute`. Write it
/// inside `impl ArrayBackend for YourBackend { ... }` when `execute` runs programs
/// natively; `full` and `cast` stay yours (a host backend fills and casts directly).
#[macro_export]
macro_rules! program_primitives {
    () => {
        fn random(
            &self,
            spec: &$crate::random::RandomSpec,
            map: &$crate::program::IndexMap,
            shape: &[usize],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(self, p::random(spec, map, shape)?, &[])
        }

        fn iota(
            &self,
            map: &$crate::program::IndexMap,
            axis: usize,
            shape: &[usize],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(self, p::iota(map, axis, shape)?, &[])
        }

        fn unary(
            &self,
            op: $crate::program::UnaryOp,
            x: &$crate::backend::Chunk,
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(
                self,
                p::unary(op, x.dtype(), x.shape())?,
                ::std::slice::from_ref(x),
            )
        }

        fn binary(
            &self,
            op: $crate::program::BinaryOp,
            a: &$crate::backend::Chunk,
            b: &$crate::backend::Chunk,
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            let program = p::binary(op, (a.dtype(), a.shape()), (b.dtype(), b.shape()))?;
            p::run_one(self, program, &[a.clone(), b.clone()])
        }

        fn where_(
            &self,
            cond: &$crate::backend::Chunk,
            a: &$crate::backend::Chunk,
            b: &$crate::backend::Chunk,
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            let program = p::where_(
                (cond.dtype(), cond.shape()),
                (a.dtype(), a.shape()),
                (b.dtype(), b.shape()),
            )?;
            p::run_one(self, program, &[cond.clone(), a.clone(), b.clone()])
        }

        fn slice(
            &self,
            x: &$crate::backend::Chunk,
            slices: &[$crate::backend::AxisSlice],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(
                self,
                p::slice(x.dtype(), x.shape(), slices)?,
                ::std::slice::from_ref(x),
            )
        }

        fn transpose(
            &self,
            x: &$crate::backend::Chunk,
            perm: &[usize],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(
                self,
                p::transpose(x.dtype(), x.shape(), perm)?,
                ::std::slice::from_ref(x),
            )
        }

        fn broadcast_to(
            &self,
            x: &$crate::backend::Chunk,
            shape: &[usize],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(
                self,
                p::broadcast_to(x.dtype(), x.shape(), shape)?,
                ::std::slice::from_ref(x),
            )
        }

        fn reduce(
            &self,
            x: &$crate::backend::Chunk,
            op: $crate::program::ReduceOp,
            axes: &[usize],
        ) -> $crate::Result<$crate::backend::Chunk> {
            use $crate::program::primitives as p;
            p::run_one(
                self,
                p::reduce(x.dtype(), x.shape(), op, axes)?,
                ::std::slice::from_ref(x),
            )
        }
    };
}

/// A one-output program over `shape` built by `build`.
fn single(
    shape: &[usize],
    reduce: Option<Reduction>,
    build: impl FnOnce(&mut ProgramBuilder) -> Result<usize>,
) -> Result<Program> {
    let mut pb = ProgramBuilder::new(shape);
    let node = build(&mut pb)?;
    pb.finish(vec![(node, reduce)])
}

/// `full(shape, value)`.
///
/// # Errors
/// Those of [`ProgramBuilder::finish`].
pub fn full(shape: &[usize], value: Scalar) -> Result<Program> {
    single(shape, None, |pb| Ok(pb.constant(value)))
}

/// `random(spec, map, shape)`: counter-based numbers at `map(out)`.
///
/// # Errors
/// Those of [`ProgramBuilder::finish`].
pub fn random(spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Program> {
    single(shape, None, |pb| Ok(pb.random(*spec, map.clone())))
}

/// `iota(map, axis, shape)`: the coordinate along source axis `axis`.
///
/// # Errors
/// Those of [`ProgramBuilder::finish`].
pub fn iota(map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Program> {
    single(shape, None, |pb| Ok(pb.index(map.clone(), axis)))
}

/// `astype` of an input of `dtype` and `shape`.
///
/// # Errors
/// Those of [`ProgramBuilder::finish`].
pub fn cast(dtype: DType, shape: &[usize], to: DType) -> Result<Program> {
    single(shape, None, |pb| {
        let x = pb.input(0, dtype, IndexMap::identity(shape));
        Ok(pb.cast(x, to))
    })
}

/// A unary op on an input of `dtype` and `shape`.
///
/// # Errors
/// [`Error::DType`] where the op does not take the dtype (`-bool`).
pub fn unary(op: UnaryOp, dtype: DType, shape: &[usize]) -> Result<Program> {
    single(shape, None, |pb| {
        let x = pb.input(0, dtype, IndexMap::identity(shape));
        pb.unary(op, x)
    })
}

/// A binary op on two inputs of one `shape`; integer `divide` is floor division in the
/// operands' dtype, as the protocol defines it.
///
/// # Errors
/// [`Error::Shape`] for operands of different shapes; the builder's dtype errors.
pub fn binary(op: BinaryOp, a: (DType, &[usize]), b: (DType, &[usize])) -> Result<Program> {
    let shape = same_shape(op.name(), &[a.1, b.1])?;
    if a.0 != b.0 {
        return Err(Error::dtype(
            op.name(),
            b.0,
            format!("primitive operands must share a dtype; left is {}", a.0),
        ));
    }
    single(&shape, None, |pb| {
        let x = pb.input(0, a.0, IndexMap::identity(&shape));
        let y = pb.input(1, b.0, IndexMap::identity(&shape));
        if op == BinaryOp::Div && !a.0.is_float() {
            pb.floor_div(x, y)
        } else {
            pb.binary(op, x, y)
        }
    })
}

/// `where(cond, a, b)` on three inputs of one shape.
///
/// # Errors
/// [`Error::Shape`] for operands of different shapes.
pub fn where_(
    cond: (DType, &[usize]),
    a: (DType, &[usize]),
    b: (DType, &[usize]),
) -> Result<Program> {
    let shape = same_shape("where", &[cond.1, a.1, b.1])?;
    single(&shape, None, |pb| {
        let c = pb.input(0, cond.0, IndexMap::identity(&shape));
        let x = pb.input(1, a.0, IndexMap::identity(&shape));
        let y = pb.input(2, b.0, IndexMap::identity(&shape));
        Ok(pb.where_(c, x, y))
    })
}

/// A strided slice of an input.
///
/// # Errors
/// [`Error::Invalid`] for a wrong count of slices or one out of bounds.
pub fn slice(dtype: DType, src: &[usize], slices: &[AxisSlice]) -> Result<Program> {
    let (map, shape) = AxisSlice::map(src, slices)?;
    single(&shape, None, |pb| Ok(pb.input(0, dtype, map)))
}

/// A transpose of an input.
///
/// # Errors
/// [`Error::Invalid`] when `perm` is not a permutation of the axes.
pub fn transpose(dtype: DType, src: &[usize], perm: &[usize]) -> Result<Program> {
    let (map, shape) = IndexMap::permuted(src, perm)?;
    single(&shape, None, |pb| Ok(pb.input(0, dtype, map)))
}

/// An input broadcast to `shape`.
///
/// # Errors
/// [`Error::Shape`] when the input does not broadcast.
pub fn broadcast_to(dtype: DType, src: &[usize], shape: &[usize]) -> Result<Program> {
    let map = IndexMap::broadcast(src, shape)?;
    single(shape, None, |pb| Ok(pb.input(0, dtype, map)))
}

/// A reduction of an input over `axes` (any order, duplicates allowed).
///
/// # Errors
/// [`Error::Invalid`] for an axis out of range, or a reduction without identity over an
/// empty axis.
pub fn reduce(dtype: DType, shape: &[usize], op: ReduceOp, axes: &[usize]) -> Result<Program> {
    if axes.iter().any(|&a| a >= shape.len()) {
        return Err(Error::invalid(
            op.name(),
            format!("axes {axes:?} out of range for shape {shape:?}"),
        ));
    }
    let mut axes = axes.to_vec();
    axes.sort_unstable();
    axes.dedup();
    op.check_identity(shape, &axes)?;
    single(shape, Some(Reduction { op, axes }), |pb| {
        Ok(pb.input(0, dtype, IndexMap::identity(shape)))
    })
}

fn same_shape(op: &str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    for s in &shapes[1..] {
        if *s != shapes[0] {
            return Err(Error::shape(
                op,
                format!("operands of shapes {:?} and {:?}", shapes[0], s),
            ));
        }
    }
    Ok(shapes[0].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_are_one_output_programs() {
        let p = reduce(DType::I8, &[3, 4, 5], ReduceOp::Sum, &[2, 0, 2]).unwrap();
        assert_eq!(p.outputs[0].reduce.as_ref().unwrap().axes, vec![0, 2]);
        assert_eq!(p.output_dtype(0), DType::I64);
        let p = binary(
            BinaryOp::Div,
            (DType::I32, &[2][..]),
            (DType::I32, &[2][..]),
        )
        .unwrap();
        assert_eq!(
            p.output_dtype(0),
            DType::I32,
            "integer divide stays integer"
        );
        assert!(binary(
            BinaryOp::Add,
            (DType::I32, &[2][..]),
            (DType::I32, &[3][..])
        )
        .is_err());
        assert!(reduce(DType::F64, &[0, 2], ReduceOp::Min, &[0]).is_err());
        let p = slice(
            DType::F32,
            &[10],
            &[AxisSlice {
                start: 9,
                step: -3,
                len: 4,
            }],
        )
        .unwrap();
        assert_eq!(p.shape, vec![4]);
    }
}

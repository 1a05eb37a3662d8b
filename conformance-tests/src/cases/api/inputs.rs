//! The inputs the array API families build: families from a run function, arrays on a
//! side's backend (irregularly chunked on the backend under test, one chunk on the
//! reference), chunk specs, broadcast shapes, index values and the tolerances of results.

use tessera_array::{Array, Index};
use tessera_core::chunks::{ChunkSpec, Chunks};
use tessera_core::program::BinaryOp;
use tessera_core::{DType, HostArray, Result, Scalar};

use crate::case::{Family, Group, Produced, Side};
use crate::cases::domain::describe;
use crate::compare::Tol;
use crate::gen::{Gen, Values};

pub(super) fn fam(
    op: &str,
    dtypes: Vec<DType>,
    run: impl Fn(&Side, &mut Gen, DType, usize) -> Result<Produced> + Send + Sync + 'static,
) -> Family {
    Family::new(format!("api.{op}"), Group::Api, dtypes, run)
}

/// Generated data as a chunked array on the side's backend, with its description.
pub(super) fn arr(
    s: &Side,
    g: &mut Gen,
    name: &str,
    shape: &[usize],
    d: DType,
    v: usize,
) -> Result<(HostArray, Array, String)> {
    arr_with(s, g, name, shape, d, v, |h| h)
}

/// Like [`arr`], with the generated data passed through `tame` first.
pub(super) fn arr_with(
    s: &Side,
    g: &mut Gen,
    name: &str,
    shape: &[usize],
    d: DType,
    v: usize,
    tame: fn(HostArray) -> HostArray,
) -> Result<(HostArray, Array, String)> {
    let h = tame(g.host(shape, d, Values::of_variant(v)));
    let drawn = g.chunks(shape);
    let desc = describe(name, d, shape, Some(&drawn));
    let used = if s.reference {
        ChunkSpec::Exact(Chunks::single(shape))
    } else {
        ChunkSpec::Exact(drawn)
    };
    let a = Array::from_host(h.clone(), used, Some(s.name()))?;
    Ok((h, a, desc))
}

/// The chunks a side uses for a generated array: drawn ones, or one chunk.
pub(super) fn spec(s: &Side, g: &mut Gen, shape: &[usize]) -> ChunkSpec {
    let drawn = g.chunks(shape);
    if s.reference {
        ChunkSpec::Exact(Chunks::single(shape))
    } else {
        ChunkSpec::Exact(drawn)
    }
}

/// Two shapes that broadcast together (trailing alignment, size-1 axes, fewer dims).
pub(super) fn broadcast_pair(g: &mut Gen) -> (Vec<usize>, Vec<usize>) {
    let out = g.shape(0, 4);
    let side = |g: &mut Gen| -> Vec<usize> {
        let drop = g
            .below(out.len() + 1)
            .min(if g.chance(0.6) { 0 } else { out.len() });
        out[drop..]
            .iter()
            .map(|&n| if g.chance(0.3) { 1 } else { n })
            .collect()
    };
    (side(g), side(g))
}

pub(super) fn tol_for_binary(op: BinaryOp, out: DType) -> Tol {
    match op {
        o if o.is_transcendental() => Tol::transcendental(out),
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            Tol::arithmetic(out)
        }
        _ => Tol::EXACT,
    }
}

pub(super) fn one(a: Array, tol: Tol, inputs: String) -> Result<Produced> {
    Ok(Produced::one(a.compute()?, tol, inputs))
}

/// A random `start:stop:step` for an axis of length `n`, negative bounds and steps too.
pub(super) fn random_slice(g: &mut Gen, n: usize) -> Index {
    let n = n as i64;
    let bound = |g: &mut Gen| -> Option<i64> {
        if g.chance(0.3) {
            None
        } else {
            Some(g.below((2 * n + 3) as usize) as i64 - n - 1)
        }
    };
    let step = g.pick(&[1, 1, 2, 3, -1, -2]);
    Index::slice(bound(g), bound(g), step)
}

/// Integer indices along `axis` of length `n`: `m` of them, negative ones among them
/// (counted from the end), of a signed dtype, or unsigned and in range; one out of
/// range when `stray`.
pub(super) fn index_values(g: &mut Gen, n: usize, m: usize, stray: bool) -> (Vec<i64>, DType) {
    let unsigned = g.chance(0.2);
    let mut v: Vec<i64> = (0..m)
        .map(|_| {
            let i = g.below(n) as i64;
            if !unsigned && g.chance(0.3) {
                i - n as i64
            } else {
                i
            }
        })
        .collect();
    if stray && m > 0 {
        let at = g.below(m);
        v[at] = if unsigned || g.chance(0.5) {
            n as i64 + g.below(3) as i64
        } else {
            -(n as i64) - 1 - g.below(3) as i64
        };
    }
    let dt = if unsigned {
        DType::U16
    } else {
        g.pick(&[DType::I64, DType::I32])
    };
    (v, dt)
}

/// Index values as an array on the side's backend, chunked as drawn (one chunk on the
/// reference); `lazy` makes them the result of an op, whose values the plan cannot read
/// before it runs.
pub(super) fn index_array(
    s: &Side,
    g: &mut Gen,
    values: &[i64],
    shape: &[usize],
    dt: DType,
    lazy: bool,
) -> Result<(HostArray, Array)> {
    let h = HostArray::I64(
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), values.to_vec())
            .map_err(|e| tessera_core::Error::Internal(format!("index shape: {e}")))?,
    )
    .cast(dt);
    let a = Array::from_host(h.clone(), spec(s, g, shape), Some(s.name()))?;
    let a = if lazy {
        a.binary_scalar(BinaryOp::Add, Scalar::I64(0).cast(dt), false)?
    } else {
        a
    };
    Ok((h, a))
}

/// True for a negative integer scalar.
pub(super) fn negative_int(k: Scalar) -> bool {
    matches!(k, Scalar::I64(x) if x < 0)
}

/// True for the unsigned integer dtypes.
pub(super) fn unsigned(d: DType) -> bool {
    d.kind() == tessera_core::dtype::DTypeKind::UInt
}

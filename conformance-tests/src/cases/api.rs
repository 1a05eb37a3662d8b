//! Cases for the user-level `Array` API on chunked arrays.
//!
//! These run the whole stack: chunk-grid arithmetic, alignment of differently chunked
//! operands, broadcasting and promotion, lowering into fused programs, tree reductions,
//! rechunking and the scheduler. The backend under test gets irregular chunkings; the
//! reference computes the same expression with one chunk per array, so the CPU backend
//! checked against itself still proves that results do not depend on the chunking.

use std::sync::Arc;

use tessera_array::{Array, Index, RandomState};
use tessera_core::chunks::{numel, ChunkSpec, Chunks};
use tessera_core::program::{BinaryOp, ReduceOp, ScanOp, UnaryOp};
use tessera_core::{DType, HostArray, Result, Scalar};

use super::domain::{all, describe, floats, integers, numeric};
use crate::case::{Family, Group, Produced, Side};
use crate::compare::{has_subnormal, max_abs, Tol};
use crate::gen::{for_product, for_sum, Gen, Values};
use crate::oracle::api::{self as expect, Moment};
use crate::oracle::{self, ErrorKind, Expect};

fn fam(
    op: &str,
    dtypes: Vec<DType>,
    run: impl Fn(&Side, &mut Gen, DType, usize) -> Result<Produced> + Send + Sync + 'static,
) -> Family {
    Family::new(format!("api.{op}"), Group::Api, dtypes, run)
}

/// Generated data as a chunked array on the side's backend, with its description.
fn arr(
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
fn arr_with(
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
fn spec(s: &Side, g: &mut Gen, shape: &[usize]) -> ChunkSpec {
    let drawn = g.chunks(shape);
    if s.reference {
        ChunkSpec::Exact(Chunks::single(shape))
    } else {
        ChunkSpec::Exact(drawn)
    }
}

/// Two shapes that broadcast together (trailing alignment, size-1 axes, fewer dims).
fn broadcast_pair(g: &mut Gen) -> (Vec<usize>, Vec<usize>) {
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

fn tol_for_binary(op: BinaryOp, out: DType) -> Tol {
    match op {
        o if o.is_transcendental() => Tol::transcendental(out),
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            Tol::arithmetic(out)
        }
        _ => Tol::EXACT,
    }
}

fn one(a: Array, tol: Tol, inputs: String) -> Result<Produced> {
    Ok(Produced::one(a.compute()?, tol, inputs))
}

/// Every API family.
pub fn families() -> Vec<Family> {
    let mut v = creation();
    v.extend(elementwise());
    v.extend(indexing());
    v.extend(reductions());
    v.extend(scans());
    v.push(sorting());
    v.extend(gathers());
    v.extend(quantiles());
    v.extend(searches());
    v.extend(structure());
    v.extend(blocks_and_linalg());
    v
}

fn creation() -> Vec<Family> {
    vec![
        fam("full", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let value = g.scalar(d, Values::of_variant(v));
            let c = spec(s, g, &shape);
            s.expect(|| vec![oracle::full(&shape, value)]);
            one(
                Array::full(&shape, value, c, Some(s.name()))?,
                Tol::EXACT,
                format!("shape {shape:?}, value {value}"),
            )
        }),
        fam("arange", numeric(), |s, g, d, _v| {
            let n = g.dim() * 3;
            let (start, step) = if d.is_float() {
                (g.unit() * 10.0 - 5.0, g.pick(&[0.5, 0.25, -0.75, 1.5, 3.0]))
            } else if d.kind() == tessera_core::dtype::DTypeKind::UInt {
                (g.below(10) as f64, g.pick(&[1.0, 2.0, 3.0]))
            } else {
                (g.below(21) as f64 - 10.0, g.pick(&[1.0, 2.0, -1.0, -3.0]))
            };
            let stop = start + step * n as f64;
            let c = g.below(n.max(1)) + 1;
            let c = if s.reference { n.max(1) } else { c };
            s.expect(|| vec![expect::arange(start, stop, step, d)]);
            one(
                Array::arange(start, stop, step, d, c, Some(s.name()))?,
                Tol::arithmetic(d),
                format!("arange({start}, {stop}, {step}, {d})"),
            )
        }),
        fam("linspace", vec![DType::F64], |s, g, _d, _v| {
            let num = g.dim() * 3;
            let (start, stop) = (g.unit() * 20.0 - 10.0, g.unit() * 20.0 - 10.0);
            let endpoint = g.chance(0.7);
            let c = spec(s, g, &[num]);
            s.expect(|| vec![expect::linspace(start, stop, num, endpoint)]);
            one(
                Array::linspace(start, stop, num, endpoint, c, Some(s.name()))?,
                Tol::arithmetic(DType::F64),
                format!("linspace({start}, {stop}, {num}, endpoint={endpoint})"),
            )
        }),
        fam("eye", all(), |s, g, d, _v| {
            let n = g.dim();
            let m = if g.chance(0.5) { Some(g.dim()) } else { None };
            let k = g.below(7) as i64 - 3;
            let c = spec(s, g, &[n, m.unwrap_or(n)]);
            s.expect(|| vec![expect::eye(n, m, k, d)]);
            one(
                Array::eye(n, m, k, d, c, Some(s.name()))?,
                Tol::EXACT,
                format!("eye({n}, {m:?}, k={k}, {d})"),
            )
        }),
        fam("random", [floats(), integers()].concat(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let rs = RandomState::new(g.next_u64());
            let c = spec(s, g, &shape);
            let (x, tol) = if d.is_float() {
                if v == 1 {
                    (
                        rs.normal_typed(1.0, 2.0, d, &shape, c, Some(s.name()))?,
                        Tol::transcendental(d),
                    )
                } else {
                    (
                        rs.uniform_typed(-3.0, 5.0, d, &shape, c, Some(s.name()))?,
                        Tol::EXACT,
                    )
                }
            } else {
                let (lo, hi) = Gen::int_range(d);
                let (low, high) = if v == 2 {
                    (
                        lo.max(i64::MIN as i128) as i64,
                        hi.min(i64::MAX as i128) as i64,
                    )
                } else {
                    (
                        lo.max(-20) as i64,
                        lo.max(-20) as i64 + 1 + g.below(40) as i64,
                    )
                };
                (
                    rs.randint(low, high, d, &shape, c, Some(s.name()))?,
                    Tol::EXACT,
                )
            };
            // A strided slice of a random array generates only the kept elements.
            let idx: Vec<Index> = shape
                .iter()
                .map(|_| Index::step(g.pick(&[1, 2, -1, -3])))
                .collect();
            let y = x.slice(&idx)?;
            Ok(Produced {
                out: vec![x.compute()?, y.compute()?],
                tol,
                inputs: format!("{d}{shape:?}, then sliced {idx:?}"),
            })
        }),
        fam("from_host", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![h]);
            one(a, Tol::EXACT, desc)
        }),
        fam("to_backend", all(), |s, g, d, v| {
            // Into the backend from the reference, and back out.
            let shape = g.shape(0, 4);
            let h = g.host(&shape, d, Values::of_variant(v));
            let c = spec(s, g, &shape);
            s.expect(|| vec![h.clone(), h.clone()]);
            let on_ref = Array::from_host(h.clone(), c.clone(), Some("cpu"))?;
            let there = on_ref.to_backend(s.name())?.persist()?;
            let back = Array::from_host(h, c, Some(s.name()))?.to_backend("cpu")?;
            Ok(Produced {
                out: vec![there.compute()?, back.compute()?],
                tol: Tol::EXACT,
                inputs: describe("x", d, &shape, None),
            })
        }),
        fam("persist", all(), |s, g, d, v| {
            let shape = g.shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![expect::index(&h, &[Index::step(-1)]).expect("a full slice")]);
            let p = a.persist()?;
            one(p.slice(&[Index::step(-1)])?, Tol::EXACT, desc)
        }),
    ]
}

fn elementwise() -> Vec<Family> {
    let mut v = Vec::new();
    for op in BinaryOp::ALL {
        let dtypes = if op.is_arithmetic() { numeric() } else { all() };
        let name = if op == BinaryOp::Div {
            "true_divide"
        } else {
            op.name()
        };
        v.push(fam(name, dtypes, move |s, g, d, v| {
            let (sa, sb) = broadcast_pair(g);
            let (ha, a, da) = arr(s, g, "a", &sa, d, v)?;
            let r = match v {
                0 | 1 => {
                    let e = if v == 1 { g.pick(&DType::ALL) } else { d };
                    let (hb, b, db) = arr(s, g, "b", &sb, e, v)?;
                    s.expect_outcome(|| expect::binary(op, &ha, &hb).map(|r| vec![r]).into());
                    (a.binary(op, &b)?, format!("{da}; {db}"))
                }
                _ => {
                    let k = if g.chance(0.5) {
                        Scalar::F64(g.unit() * 8.0 - 4.0)
                    } else {
                        Scalar::I64(g.below(9) as i64 - 4)
                    };
                    let left = g.chance(0.5);
                    // NumPy 2 (NEP 50): a negative Python int meeting an unsigned array
                    // raises where the op would have to convert it.
                    let folds = op.is_comparison() || op.is_logical() || op == BinaryOp::Div;
                    if negative_int(k) && unsigned(d) && !folds {
                        s.expect_error(ErrorKind::DType);
                    }
                    // A float array, or a float scalar (which makes the result float),
                    // meets a bitwise op: NumPy's TypeError.
                    if op.is_bitwise() && (d.is_float() || matches!(k, Scalar::F64(_))) {
                        s.expect_error(ErrorKind::DType);
                    }
                    (
                        a.binary_scalar(op, k, left)?,
                        format!(
                            "{da}; scalar {k} on the {}",
                            if left { "left" } else { "right" }
                        ),
                    )
                }
            };
            let tol = tol_for_binary(op, r.0.dtype());
            one(r.0, tol, r.1)
        }));
    }
    for op in UnaryOp::ALL {
        let dtypes: Vec<DType> = DType::ALL
            .iter()
            .copied()
            .filter(|&d| op.operand_dtype(d).is_some())
            .collect();
        v.push(fam(op.name(), dtypes, move |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            if let Some(od) = op.operand_dtype(d) {
                s.expect(|| vec![oracle::unary(op, &oracle::cast(&h, od))]);
            }
            let r = a.unary(op)?;
            let tol = match op {
                UnaryOp::Sqrt => Tol::arithmetic(r.dtype()),
                o if o.is_transcendental() => Tol::transcendental(r.dtype()),
                _ => Tol::EXACT,
            };
            one(r, tol, desc)
        }));
    }
    v.push(fam("astype", all(), |s, g, d, v| {
        let shape = g.shape(0, 3);
        let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
        s.expect(|| DType::ALL.iter().map(|&t| oracle::cast(&h, t)).collect());
        let out = DType::ALL
            .iter()
            .map(|&t| a.astype(t).compute())
            .collect::<Result<Vec<_>>>()?;
        Ok(Produced {
            out,
            tol: Tol::EXACT,
            inputs: format!("{desc} to every dtype"),
        })
    }));
    v.push(fam("where", all(), |s, g, d, v| {
        let (sa, sb) = broadcast_pair(g);
        let e = if v == 1 { g.pick(&DType::ALL) } else { d };
        let (hc, c, dc) = arr(s, g, "cond", &sa, DType::Bool, v)?;
        let (ha, a, da) = arr(s, g, "a", &sb, d, v)?;
        let (hb, b, db) = arr(s, g, "b", &sa, e, v)?;
        s.expect_outcome(|| expect::where_(&hc, &ha, &hb).map(|r| vec![r]).into());
        one(c.where_(&a, &b)?, Tol::EXACT, format!("{dc}; {da}; {db}"))
    }));
    v.push(fam("clip", numeric(), |s, g, d, v| {
        let shape = g.shape(0, 4);
        let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
        let lo = g.below(10) as i64 - 5;
        let hi = lo + g.below(10) as i64;
        let (lo, hi) = (
            g.chance(0.8).then_some(Scalar::I64(lo)),
            g.chance(0.8).then_some(Scalar::I64(hi)),
        );
        // NumPy 2 ignores a lower bound below an unsigned dtype's range, and raises
        // for an upper bound below it (`np.clip(uint8, None, -1)`: OverflowError).
        if unsigned(d) && hi.is_some_and(negative_int) {
            s.expect_error(ErrorKind::DType);
        } else {
            let int = |k: Option<Scalar>| match k {
                Some(Scalar::I64(x)) => Some(x),
                _ => None,
            };
            s.expect(|| vec![expect::clip(&h, int(lo), int(hi))]);
        }
        one(
            a.clip(lo, hi)?,
            Tol::EXACT,
            format!("{desc}, clip({lo:?}, {hi:?})"),
        )
    }));
    v
}

/// A random `start:stop:step` for an axis of length `n`, negative bounds and steps too.
fn random_slice(g: &mut Gen, n: usize) -> Index {
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

fn indexing() -> Vec<Family> {
    vec![
        fam("slice", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let idx: Vec<Index> = shape.iter().map(|&n| random_slice(g, n)).collect();
            let first = a.slice(&idx)?;
            // A slice of a slice composes into one view.
            let idx2: Vec<Index> = first.shape().iter().map(|&n| random_slice(g, n)).collect();
            s.expect(|| {
                let once = expect::index(&h, &idx).expect("slices never fail");
                let twice = expect::index(&once, &idx2).expect("slices never fail");
                vec![once, twice]
            });
            Ok(Produced {
                out: vec![first.compute()?, first.slice(&idx2)?.compute()?],
                tol: Tol::EXACT,
                inputs: format!("{desc}, x{idx:?}, then {idx2:?}"),
            })
        }),
        fam("index", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let mut idx = Vec::new();
            for &n in &shape {
                if g.chance(0.3) {
                    idx.push(Index::NewAxis);
                }
                idx.push(if g.chance(0.5) {
                    let i = g.below(n) as i64;
                    Index::At(if g.chance(0.5) { i - n as i64 } else { i })
                } else {
                    random_slice(g, n)
                });
            }
            if g.chance(0.3) {
                let at = g.below(idx.len() + 1);
                idx.truncate(at);
                idx.push(Index::Ellipsis);
            }
            s.expect(|| vec![expect::index(&h, &idx).expect("in-range positions")]);
            one(a.slice(&idx)?, Tol::EXACT, format!("{desc}, x{idx:?}"))
        }),
    ]
}

/// A user-level reduction: one of the protocol's through `Array::reduce`, or one that
/// core composes from them.
#[derive(Clone, Copy)]
enum Red {
    Op(ReduceOp),
    Mean,
    NanMean,
    Var,
    Std,
    NanVar,
    NanStd,
    /// `nanmax`, `nanmin`, `nanprod`.
    Nan(ReduceOp),
}

/// `cumulative` over irregular chunks: each block scanned, the carries of the blocks
/// before it combined in, against one chunk on the reference and the oracle's scan.
fn scans() -> Vec<Family> {
    ScanOp::ALL
        .into_iter()
        .map(|op| {
            fam(op.name(), all(), move |s, g, d, v| {
                let shape = g.shape(1, 4);
                let tame = match op {
                    ScanOp::Prod => for_product,
                    ScanOp::Sum => for_sum,
                    _ => |h| h,
                };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axis = g.below(shape.len());
                let initial = matches!(op, ScanOp::Sum | ScanOp::Prod) && g.chance(0.3);
                let rd = expect::scan_dtype(op, d);
                s.expect(|| vec![expect::cumulative(&h, op, axis, initial)]);
                let n = shape[axis];
                let tol = match op {
                    ScanOp::Sum => Tol::reduction(rd, n, max_abs(&h)),
                    ScanOp::Prod => Tol::product(rd, n, has_subnormal(&h)),
                    _ => Tol::EXACT,
                };
                one(
                    a.cumulative(op, axis, None, initial)?,
                    tol,
                    format!("{desc}, axis {axis}, include_initial {initial}"),
                )
            })
        })
        .collect()
}

/// `sort` over irregular chunks: each block sorted, each output block merged from its
/// lane's sorted blocks, against one chunk on the reference and the oracle's sort.
fn sorting() -> Family {
    fam("sort", all(), |s, g, d, v| {
        let shape = g.shape(1, 4);
        let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, |h| h)?;
        let axis = g.below(shape.len());
        let descending = g.chance(0.3);
        s.expect(|| vec![crate::oracle::sort::sort(&h, axis, descending)]);
        one(
            a.sort(axis, descending)?,
            Tol::EXACT,
            format!("{desc}, axis {axis}, descending {descending}"),
        )
    })
}

/// Integer indices along `axis` of length `n`: `m` of them, negative ones among them
/// (counted from the end), of a signed dtype, or unsigned and in range; one out of
/// range when `stray`.
fn index_values(g: &mut Gen, n: usize, m: usize, stray: bool) -> (Vec<i64>, DType) {
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
fn index_array(
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

/// `argsort`, `take` and `take_along_axis` over irregular chunks: per-block argsorts
/// merged with their indices, and gathers that read the blocks of a lane the indices
/// touch, against one chunk on the reference and the oracle's definitions.
fn gathers() -> Vec<Family> {
    vec![
        fam("argsort", all(), |s, g, d, v| {
            let shape = g.shape(1, 4);
            let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, |h| h)?;
            let axis = g.below(shape.len());
            let descending = g.chance(0.4);
            s.expect(|| vec![crate::oracle::sort::argsort(&h, axis, descending)]);
            one(
                a.argsort(axis, descending)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, descending {descending}"),
            )
        }),
        fam("take", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len());
            let m = g.below(2 * shape[axis] + 2);
            let stray = g.chance(0.1);
            let (values, dt) = index_values(g, shape[axis], m, stray);
            let lazy = g.chance(0.5);
            let (ih, idx) = index_array(s, g, &values, &[m], dt, lazy)?;
            s.expect_outcome(|| match crate::oracle::take::take(&h, &ih, axis) {
                Some(out) => Expect::Values(vec![out]),
                None => Expect::Error(ErrorKind::Invalid),
            });
            one(
                a.take(&idx, axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, {dt} indices {values:?} (lazy {lazy})"),
            )
        }),
        fam("take_along_axis", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len());
            let n = shape[axis];
            // The indices' shape: their own length along the axis, and the array's
            // lengths elsewhere or 1 (broadcast).
            let ishape: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(i, &len)| {
                    if i == axis {
                        g.below(2 * n + 1)
                    } else if g.chance(0.25) {
                        1
                    } else {
                        len
                    }
                })
                .collect();
            let stray = g.chance(0.1);
            let (values, dt) = index_values(g, n, numel(&ishape), stray);
            let lazy = g.chance(0.5);
            let (ih, idx) = index_array(s, g, &values, &ishape, dt, lazy)?;
            s.expect_outcome(
                || match crate::oracle::take::take_along_axis(&h, &ih, axis) {
                    Some(out) => Expect::Values(vec![out]),
                    None => Expect::Error(ErrorKind::Invalid),
                },
            );
            one(
                a.take_along_axis(&idx, axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, {dt} indices of shape {ishape:?} (lazy {lazy})"),
            )
        }),
    ]
}

/// `quantile`, `nanquantile`, `median` and `nanmedian` over irregular chunks: the lane
/// sorted chunk by chunk and only the needed order statistics read (lazily, by each
/// lane's count of numbers, for the NaN-skipping forms), against one chunk on the
/// reference and the oracle's NumPy arithmetic.
fn quantiles() -> Vec<Family> {
    use crate::oracle::quantile::{select, Select};
    [
        ("quantile", false, false),
        ("nanquantile", false, true),
        ("median", true, false),
        ("nanmedian", true, true),
    ]
    .into_iter()
    .map(|(name, median, skip_nan)| {
        fam(name, numeric(), move |s, g, d, v| {
            let shape = g.nonempty_shape(1, 3);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = if g.chance(0.25) {
                None
            } else {
                Some(g.below(shape.len()))
            };
            let keepdims = g.chance(0.3);
            if median {
                let dtype = if d == DType::F32 {
                    DType::F32
                } else {
                    DType::F64
                };
                s.expect(|| {
                    vec![select(
                        &h,
                        &[Select::Median],
                        axis,
                        keepdims,
                        skip_nan,
                        dtype,
                        false,
                    )]
                });
                return one(
                    a.median(axis, keepdims, skip_nan)?,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keepdims}"),
                );
            }
            let k = 1 + g.below(3);
            let q: Vec<f64> = (0..k)
                .map(|_| match g.below(5) {
                    0 => 0.0,
                    1 => 1.0,
                    2 => 0.5,
                    _ => g.unit(),
                })
                .collect();
            let dtype = if d == DType::F32 && g.chance(0.5) {
                DType::F32
            } else {
                DType::F64
            };
            let sels: Vec<Select> = q.iter().map(|&v| Select::Quantile(v)).collect();
            s.expect(|| vec![select(&h, &sels, axis, keepdims, skip_nan, dtype, true)]);
            one(
                a.quantile(&q, axis, keepdims, skip_nan, dtype)?,
                Tol::EXACT,
                format!("{desc}, q {q:?} in {dtype}, axis {axis:?}, keepdims {keepdims}"),
            )
        })
    })
    .collect()
}

/// `searchsorted` and `isin` over irregular chunks on both sides: every sorted block
/// searched for each value block, against one chunk on the reference and the oracle's
/// counts and comparisons; the other side sometimes of another dtype (compared in the
/// common dtype).
fn searches() -> Vec<Family> {
    fn other_dtype(g: &mut Gen, d: DType) -> DType {
        if g.chance(0.3) {
            g.pick(&[DType::I64, DType::F64, DType::F32, DType::U8])
        } else {
            d
        }
    }
    vec![
        fam("searchsorted", all(), |s, g, d, v| {
            let n = g.dim() * 2;
            let raw = g.host(&[n], d, Values::of_variant(v));
            let sorted = crate::oracle::sort::sort(&raw, 0, false);
            let a = Array::from_host(sorted.clone(), spec(s, g, &[n]), Some(s.name()))?;
            let vshape = g.shape(0, 3);
            let vd = other_dtype(g, d);
            let (vh, va, vdesc) = arr(s, g, "values", &vshape, vd, v)?;
            let right = g.chance(0.5);
            s.expect(|| vec![crate::oracle::search::searchsorted(&sorted, &vh, right)]);
            one(
                a.searchsorted(&va, right)?,
                Tol::EXACT,
                format!(
                    "sorted {d}[{n}] {:?}, {vdesc}, right {right}",
                    sorted.to_f64_vec()
                ),
            )
        }),
        fam("isin", all(), |s, g, d, v| {
            /// A NaN first, for a float array: NaN in both `x` and the set must still
            /// not be a member.
            fn first_nan(h: HostArray) -> HostArray {
                match h {
                    HostArray::F64(mut a) if !a.is_empty() => {
                        a.as_slice_mut().expect("generated arrays are contiguous")[0] = f64::NAN;
                        HostArray::F64(a)
                    }
                    HostArray::F32(mut a) if !a.is_empty() => {
                        a.as_slice_mut().expect("generated arrays are contiguous")[0] = f32::NAN;
                        HostArray::F32(a)
                    }
                    other => other,
                }
            }
            let shape = g.shape(0, 3);
            let tame = if g.chance(0.5) { first_nan } else { |h| h };
            let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
            // The set: drawn values, and about half of them picked from `x` (NaN, the
            // zeros and the extremes included when `x` has them).
            let tlen = g.below(9);
            let td = other_dtype(g, d);
            let drawn = g.host(&[tlen], td, Values::of_variant(v));
            let picks: Vec<Scalar> = (0..tlen)
                .map(|i| match h.len() {
                    0 => drawn.get_flat(i),
                    _ if i == 0 => h.get_flat(0),
                    n if g.chance(0.5) => h.get_flat(g.below(n)),
                    _ => drawn.get_flat(i),
                })
                .collect::<Option<_>>()
                .ok_or_else(|| tessera_core::Error::Internal("a flat index past the end".into()))?;
            let th = HostArray::from_scalars(&[tlen], td, &picks)?;
            let ta = Array::from_host(th.clone(), spec(s, g, &[tlen]), Some(s.name()))?;
            let tdesc = format!("test {td} {:?}", th.to_f64_vec());
            let invert = g.chance(0.3);
            s.expect(|| vec![crate::oracle::search::isin(&h, &th, invert)]);
            one(
                a.isin(&ta, invert)?,
                Tol::EXACT,
                format!("{desc}, {tdesc}, invert {invert}"),
            )
        }),
    ]
}

fn reductions() -> Vec<Family> {
    let mut list: Vec<(&str, Red, Vec<DType>)> = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Any,
        ReduceOp::All,
        ReduceOp::NanSum,
    ]
    .into_iter()
    .map(|op| {
        let dtypes = if op == ReduceOp::NanSum {
            numeric()
        } else {
            all()
        };
        (op.name(), Red::Op(op), dtypes)
    })
    .collect();
    list.extend([
        ("mean", Red::Mean, numeric()),
        ("nanmean", Red::NanMean, numeric()),
        ("var", Red::Var, numeric()),
        ("std", Red::Std, numeric()),
        ("nanvar", Red::NanVar, numeric()),
        ("nanstd", Red::NanStd, numeric()),
        ("nanmax", Red::Nan(ReduceOp::Max), all()),
        ("nanmin", Red::Nan(ReduceOp::Min), all()),
        ("nanprod", Red::Nan(ReduceOp::Prod), numeric()),
    ]);
    let mut v: Vec<Family> = list
        .into_iter()
        .map(|(name, red, dtypes)| {
            fam(name, dtypes, move |s, g, d, v| {
                let shape = g.shape(0, 4);
                let tame = match red {
                    Red::Op(ReduceOp::Prod) | Red::Nan(ReduceOp::Prod) => for_product,
                    Red::Op(ReduceOp::Sum | ReduceOp::NanSum)
                    | Red::Mean
                    | Red::NanMean
                    | Red::Var
                    | Red::Std
                    | Red::NanVar
                    | Red::NanStd => for_sum,
                    _ => |h| h,
                };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axes = g.axes(shape.len());
                let axes_opt = if g.chance(0.25) {
                    None
                } else {
                    Some(axes.as_slice())
                };
                let keep = g.chance(0.4);
                let ddof = g.below(2);
                let n: usize = match axes_opt {
                    None => numel(&shape),
                    Some(ax) => ax.iter().map(|&i| shape[i]).product(),
                };
                let scale = max_abs(&h);
                s.expect_outcome(|| match red {
                    Red::Op(op) => expect::reduce(&h, op, axes_opt, keep)
                        .map(|r| vec![r])
                        .into(),
                    Red::Mean => {
                        Expect::Values(vec![expect::moment(&h, Moment::Mean, axes_opt, keep)])
                    }
                    Red::NanMean => {
                        Expect::Values(vec![expect::moment(&h, Moment::NanMean, axes_opt, keep)])
                    }
                    Red::Var => {
                        Expect::Values(vec![expect::moment(&h, Moment::Var(ddof), axes_opt, keep)])
                    }
                    Red::Std => {
                        Expect::Values(vec![expect::moment(&h, Moment::Std(ddof), axes_opt, keep)])
                    }
                    Red::NanVar => Expect::Values(vec![expect::moment(
                        &h,
                        Moment::NanVar(ddof),
                        axes_opt,
                        keep,
                    )]),
                    Red::NanStd => Expect::Values(vec![expect::moment(
                        &h,
                        Moment::NanStd(ddof),
                        axes_opt,
                        keep,
                    )]),
                    Red::Nan(op) => expect::nan_reduce(&h, op, axes_opt, keep)
                        .map(|r| vec![r])
                        .into(),
                });
                let r = match red {
                    Red::Op(op) => a.reduce(op, axes_opt, keep)?,
                    Red::Mean => a.mean(axes_opt, keep)?,
                    Red::NanMean => a.nanmean(axes_opt, keep)?,
                    Red::Var => a.var(axes_opt, ddof, keep)?,
                    Red::Std => a.std(axes_opt, ddof, keep)?,
                    Red::NanVar => a.nanvar(axes_opt, ddof, keep)?,
                    Red::NanStd => a.nanstd(axes_opt, ddof, keep)?,
                    Red::Nan(ReduceOp::Max) => a.nanmax(axes_opt, keep)?,
                    Red::Nan(ReduceOp::Min) => a.nanmin(axes_opt, keep)?,
                    Red::Nan(_) => a.nanprod(axes_opt, keep)?,
                };
                let od = r.dtype();
                let tol = match red {
                    Red::Op(ReduceOp::Sum | ReduceOp::NanSum) | Red::Mean | Red::NanMean => {
                        Tol::reduction(od, n, scale)
                    }
                    Red::Op(ReduceOp::Prod) | Red::Nan(ReduceOp::Prod) => {
                        Tol::product(od, n, has_subnormal(&h))
                    }
                    Red::Var | Red::NanVar => Tol::reduction(od, n, scale * scale),
                    Red::Std | Red::NanStd => Tol::reduction(od, n, scale),
                    _ => Tol::EXACT,
                };
                one(
                    r,
                    tol,
                    format!("{desc}, axes {axes_opt:?}, keepdims {keep}, ddof {ddof}"),
                )
            })
        })
        .collect();
    // argmin/argmax take one axis (or none: the flat position).
    for max in [false, true] {
        v.push(fam(
            if max { "argmax" } else { "argmin" },
            all(),
            move |s, g, d, v| {
                let shape = g.shape(0, 4);
                let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
                let axis = if shape.is_empty() || g.chance(0.3) {
                    None
                } else {
                    Some(g.below(shape.len()))
                };
                let keep = g.chance(0.4);
                let empty = match axis {
                    None => numel(&shape) == 0,
                    Some(a) => shape[a] == 0,
                };
                let op = if max {
                    ReduceOp::ArgMax
                } else {
                    ReduceOp::ArgMin
                };
                s.expect_outcome(|| {
                    let r = expect::arg_reduce(&h, op, axis, keep).map(|r| vec![r]);
                    debug_assert_eq!(r.is_err(), empty);
                    r.into()
                });
                let r = if max {
                    a.argmax(axis, keep)?
                } else {
                    a.argmin(axis, keep)?
                };
                one(
                    r,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keep}"),
                )
            },
        ));
    }
    // nanargmin/nanargmax: NaN as the op's identity, an error for a lane of NaN only.
    for max in [false, true] {
        v.push(fam(
            if max { "nanargmax" } else { "nanargmin" },
            all(),
            move |s, g, d, v| {
                /// Every element NaN (a float array): every lane has no answer.
                fn all_nan(h: HostArray) -> HostArray {
                    match h {
                        HostArray::F64(a) => HostArray::F64(a.mapv(|_| f64::NAN)),
                        HostArray::F32(a) => HostArray::F32(a.mapv(|_| f32::NAN)),
                        other => other,
                    }
                }
                let shape = g.shape(0, 3);
                let tame = if g.chance(0.2) { all_nan } else { |h| h };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axis = if shape.is_empty() || g.chance(0.3) {
                    None
                } else {
                    Some(g.below(shape.len()))
                };
                let keep = g.chance(0.4);
                s.expect_outcome(|| expect::nan_arg_reduce(&h, max, axis, keep));
                let r = if max {
                    a.nanargmax(axis, keep)?
                } else {
                    a.nanargmin(axis, keep)?
                };
                one(
                    r,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keep}"),
                )
            },
        ));
    }
    v
}

/// True for a negative integer scalar.
fn negative_int(k: Scalar) -> bool {
    matches!(k, Scalar::I64(x) if x < 0)
}

/// True for the unsigned integer dtypes.
fn unsigned(d: DType) -> bool {
    d.kind() == tessera_core::dtype::DTypeKind::UInt
}

fn structure() -> Vec<Family> {
    vec![
        fam("permute_dims", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let perm = g.permutation(shape.len());
            s.expect(|| vec![oracle::transpose(&h, &perm)]);
            one(
                a.permute_dims(&perm)?,
                Tol::EXACT,
                format!("{desc}, perm {perm:?}"),
            )
        }),
        fam("reshape", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let n = numel(&shape);
            let mut to: Vec<i64> = if n == 0 {
                vec![0, g.below(3) as i64]
            } else {
                let k = g.pick(&(1..=n).filter(|k| n.is_multiple_of(*k)).collect::<Vec<_>>());
                vec![k as i64, (n / k) as i64]
            };
            if n > 0 && g.chance(0.4) {
                to[g.below(2)] = -1;
            }
            if g.chance(0.3) {
                to.insert(g.below(3), 1);
            }
            s.expect(|| {
                // One -1 is the size the others leave.
                let known: usize = to
                    .iter()
                    .filter(|&&k| k >= 0)
                    .map(|&k| k as usize)
                    .product();
                let dims: Vec<usize> = to
                    .iter()
                    .map(|&k| if k < 0 { n / known.max(1) } else { k as usize })
                    .collect();
                vec![oracle::reshape(&h, &dims)]
            });
            one(a.reshape(&to)?, Tol::EXACT, format!("{desc}, to {to:?}"))
        }),
        fam("broadcast_to", all(), |s, g, d, v| {
            let to = g.shape(0, 4);
            let drop = g.below(to.len() + 1);
            let shape: Vec<usize> = to[drop..]
                .iter()
                .map(|&n| if g.chance(0.5) { 1 } else { n })
                .collect();
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![expect::stretch(&h, d, &to)]);
            one(
                a.broadcast_to(&to)?,
                Tol::EXACT,
                format!("{desc}, to {to:?}"),
            )
        }),
        fam("concatenate", all(), |s, g, d, v| {
            let base = g.shape(1, 4);
            let axis = g.below(base.len());
            let mut parts = Vec::new();
            let mut hosts = Vec::new();
            let mut words = Vec::new();
            for i in 0..1 + g.below(3) {
                let mut sh = base.clone();
                sh[axis] = g.dim();
                let e = if v == 1 { g.pick(&DType::ALL) } else { d };
                let (h, a, desc) = arr(s, g, &format!("part {i}"), &sh, e, v)?;
                parts.push(a);
                hosts.push(h);
                words.push(desc);
            }
            s.expect(|| vec![expect::concatenate(&hosts, axis)]);
            let refs: Vec<&Array> = parts.iter().collect();
            one(
                Array::concatenate(&refs, axis)?,
                Tol::EXACT,
                format!("{}; axis {axis}", words.join("; ")),
            )
        }),
        fam("stack", all(), |s, g, d, v| {
            let shape = g.shape(0, 3);
            let axis = g.below(shape.len() + 1);
            let mut parts = Vec::new();
            let mut hosts = Vec::new();
            let mut words = Vec::new();
            for i in 0..1 + g.below(3) {
                let (h, a, desc) = arr(s, g, &format!("part {i}"), &shape, d, v)?;
                parts.push(a);
                hosts.push(h);
                words.push(desc);
            }
            s.expect(|| vec![expect::stack(&hosts, axis)]);
            let refs: Vec<&Array> = parts.iter().collect();
            one(
                Array::stack(&refs, axis)?,
                Tol::EXACT,
                format!("{}; axis {axis}", words.join("; ")),
            )
        }),
        fam("rechunk", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![h.clone()]);
            let to = g.chunks(&shape);
            let r = a.rechunk(to.clone())?;
            if r.chunks() != &to {
                return Err(tessera_core::Error::Internal(format!(
                    "rechunk to {:?} produced chunks {:?}",
                    to.sizes(),
                    r.chunks().sizes()
                )));
            }
            one(r, Tol::EXACT, format!("{desc}, to {:?}", to.sizes()))
        }),
        fam("squeeze", all(), |s, g, d, v| {
            let shape: Vec<usize> = g
                .shape(0, 4)
                .into_iter()
                .map(|n| if g.chance(0.5) { 1 } else { n })
                .collect();
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let ones: Vec<usize> = (0..shape.len())
                .filter(|&i| shape[i] == 1 && g.chance(0.6))
                .collect();
            let axes = if g.chance(0.3) {
                None
            } else {
                Some(ones.as_slice())
            };
            s.expect(|| {
                let keep: Vec<usize> = (0..shape.len())
                    .filter(|i| match axes {
                        None => shape[*i] != 1,
                        Some(ax) => !ax.contains(i),
                    })
                    .map(|i| shape[i])
                    .collect();
                vec![oracle::reshape(&h, &keep)]
            });
            one(
                a.squeeze(axes)?,
                Tol::EXACT,
                format!("{desc}, axes {axes:?}"),
            )
        }),
        fam("expand_dims", all(), |s, g, d, v| {
            let shape = g.shape(0, 3);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len() + 1);
            s.expect(|| {
                let mut to = shape.clone();
                to.insert(axis, 1);
                vec![oracle::reshape(&h, &to)]
            });
            one(
                a.expand_dims(axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}"),
            )
        }),
    ]
}

fn blocks_and_linalg() -> Vec<Family> {
    vec![
        fam("map_blocks", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![expect::twice_minus_one(&h)]);
            // An elementwise function, so the result must not depend on the chunking.
            let f: tessera_array::array::HostBlockFn = Arc::new(|blocks: &[HostArray]| {
                let x = blocks[0].cast(DType::F64).into_typed::<f64>()?;
                Ok(HostArray::F64(x.mapv(|e| 2.0 * e - 1.0)))
            });
            one(
                Array::map_blocks(&[&a], f, DType::F64, None)?,
                Tol::EXACT,
                desc,
            )
        }),
        fam("map_blocks_backend", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (_, a, da) = arr(s, g, "a", &shape, d, v)?;
            let (hb, b, db) = arr(s, g, "b", &shape, d, v)?;
            // where(cond, b, b) is b, whatever cond holds.
            s.expect(|| vec![oracle::cast(&hb, DType::F64)]);
            let f: tessera_array::array::BackendBlockFn = Arc::new(|be, chunks| {
                let c = be.where_(&chunks[0], &chunks[1], &chunks[1])?;
                be.cast(&c, DType::F64)
            });
            let cond = a.astype(DType::Bool);
            one(
                Array::map_blocks_backend(&[&cond, &b, &a], f, DType::F64, None)?,
                Tol::EXACT,
                format!("{da}; {db}"),
            )
        }),
        fam("matmul", numeric(), |s, g, d, v| {
            let (m, k, n) = (g.dim(), g.dim(), g.dim());
            let (ha, a, da) = arr_with(s, g, "a", &[m, k], d, v, for_sum)?;
            let (hb, b, db) = arr_with(s, g, "b", &[k, n], d, v, for_sum)?;
            let tol = Tol::reduction(d, k, max_abs(&ha) * max_abs(&hb)).max(Tol::arithmetic(d));
            s.expect(|| vec![oracle::matmul(&ha, &hb)]);
            one(a.matmul(&b)?, tol, format!("{da}; {db}"))
        }),
        fam("matmul_streamed", floats(), |s, g, d, v| {
            // Operands that are fused programs (a transposed or negated input), which the
            // planner streams into the product through `matmul_program` (the larger block
            // of the two): `(-aᵀ) @ b` and `bᵀ @ (-a)`, on every backend.
            let (m, k, n) = (g.dim(), g.dim(), g.dim());
            let (ha, a, da) = arr_with(s, g, "a", &[k, m], d, v, for_sum)?;
            let (hb, b, db) = arr_with(s, g, "b", &[k, n], d, v, for_sum)?;
            let tol = Tol::reduction(d, k, max_abs(&ha) * max_abs(&hb)).max(Tol::arithmetic(d));
            s.expect(|| {
                let neg = oracle::unary(UnaryOp::Neg, &ha);
                vec![
                    oracle::matmul(&oracle::transpose(&neg, &[1, 0]), &hb),
                    oracle::matmul(&oracle::transpose(&hb, &[1, 0]), &neg),
                ]
            });
            let neg_at = a.T()?.unary(UnaryOp::Neg)?;
            let neg_a = a.unary(UnaryOp::Neg)?;
            Ok(Produced {
                out: vec![
                    neg_at.matmul(&b)?.compute()?,
                    b.T()?.matmul(&neg_a)?.compute()?,
                ],
                tol,
                inputs: format!("(-aᵀ) @ b and bᵀ @ (-a); {da}; {db}"),
            })
        }),
        fam("sketch", floats(), |s, g, d, v| {
            // The one-pass range sketch `[x Ω ; xᵀ x Ω]` of svd_compressed, of a stored
            // block (`sketch_with_primitives`) and of a fused one (`-x`, streamed through
            // `sketch_program`); whole rows per chunk, as the sketch needs.
            let (m, n, l) = (g.dim(), g.dim(), g.dim());
            let (hx, x, dx) = arr_with(s, g, "x", &[m, n], d, v, for_sum)?;
            let (ho, omega, dom) = arr_with(s, g, "omega", &[n, l], d, v, for_sum)?;
            let rows = Chunks::new(&[m, n], vec![x.chunks().axis(0).to_vec(), vec![n]])?;
            let x = x.rechunk(ChunkSpec::Exact(rows))?;
            let (sx, so) = (max_abs(&hx), max_abs(&ho));
            // xᵀ (x Ω) sums m n products of magnitude up to |x|² |Ω|.
            let tol = Tol::reduction(d, 2 * m * n, sx * sx * so)
                .max(Tol::reduction(d, n, sx * so))
                .max(Tol::arithmetic(d));
            s.expect(|| {
                let mut out = Vec::new();
                for op in [hx.clone(), oracle::unary(UnaryOp::Neg, &hx)] {
                    let y = oracle::matmul(&op, &ho);
                    out.push(oracle::matmul(&oracle::transpose(&op, &[1, 0]), &y));
                    out.insert(out.len() - 1, y);
                }
                out
            });
            let mut out = Vec::new();
            for operand in [x.clone(), x.unary(UnaryOp::Neg)?] {
                let sk = tessera_array::linalg::sketch(&operand, &omega)?;
                out.push(sk.y.compute()?);
                out.push(sk.xty.compute()?);
            }
            Ok(Produced {
                out,
                tol,
                inputs: format!("sketch of x and of -x; {dx}; {dom}"),
            })
        }),
        fam("tensordot", numeric(), |s, g, d, v| {
            let (p, q, k) = (g.dim(), g.dim(), g.dim());
            let r = g.dim();
            let (ha, a, da) = arr_with(s, g, "a", &[p, k, q], d, v, for_sum)?;
            let (hb, b, db) = arr_with(s, g, "b", &[r, k], d, v, for_sum)?;
            let tol = Tol::reduction(d, k, max_abs(&ha) * max_abs(&hb)).max(Tol::arithmetic(d));
            s.expect(|| vec![expect::tensordot_middle(&ha, &hb)]);
            one(
                a.tensordot(&b, &[1], &[1])?,
                tol,
                format!("{da}; {db}; axes ([1], [1])"),
            )
        }),
    ]
}

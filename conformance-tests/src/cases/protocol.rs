//! Cases for every method of the `ArrayBackend` protocol, called on single chunks.
//!
//! Each family name is the capability name a backend declares (`add`, `sum`, `slice`,
//! ...), so a backend's [`Capabilities`](tessera_core::Capabilities) decide directly which
//! cases must pass and which must be refused. `execute` checks whole fused programs:
//! random DAGs over inputs read through affine maps, generators, casts, unary, binary and
//! `where` nodes, with and without a reduction epilogue.

use ndarray::{ArrayD, IxDyn};
use tessera_core::chunks::numel;
use tessera_core::program::{
    ArrayOp, BinaryOp, ProgramBuilder, ReduceOp, Reduction, ScanOp, UnaryOp,
};
use tessera_core::random::{Distribution, RandomSpec};
use tessera_core::{AxisSlice, Chunk, DType, Error, HostArray, Result, Scalar};

use super::domain::{all, describe, floats, index_map, integers, numeric};
use crate::case::{Family, Group, Produced, Side};
use crate::compare::{has_subnormal, max_abs, Tol};
use crate::gen::{for_product, for_sum, Gen, Values};
use crate::oracle;

fn fam(
    op: &str,
    dtypes: Vec<DType>,
    run: impl Fn(&Side, &mut Gen, DType, usize) -> Result<Produced> + Send + Sync + 'static,
) -> Family {
    Family::new(op, Group::Protocol, dtypes, run)
}

/// Uploads generated data of `shape`.
fn input(s: &Side, g: &mut Gen, shape: &[usize], d: DType, v: usize) -> Result<(HostArray, Chunk)> {
    input_with(s, g, shape, d, v, |h| h)
}

/// Like [`input`], with the data passed through `tame` (see [`for_sum`]).
fn input_with(
    s: &Side,
    g: &mut Gen,
    shape: &[usize],
    d: DType,
    v: usize,
    tame: fn(HostArray) -> HostArray,
) -> Result<(HostArray, Chunk)> {
    let h = tame(g.host(shape, d, Values::of_variant(v)));
    if v != 1 || h.is_empty() {
        let c = s.upload(&h)?;
        return Ok((h, c));
    }
    // Variant 1 is a "background" input: about 70% of the elements equal one value (the
    // first drawn), the rest are drawn data. The backend builds it with its own
    // generators — `where(mask, data, full(value))` — so a backend that stores a fill
    // value (sparse) meets non-zero fills in every op. A backend that lacks `where` or
    // `full` for this dtype gets the same values uploaded instead.
    let fill = h.get_flat(0).unwrap_or(Scalar::zero(d));
    let mask: Vec<bool> = (0..h.len()).map(|_| g.chance(0.3)).collect();
    let mask = HostArray::Bool(
        ArrayD::from_shape_vec(IxDyn(shape), mask)
            .map_err(|e| Error::Internal(format!("mask shape: {e}")))?,
    );
    let merged = where_host(&mask, &h, fill);
    let caps = s.b().capabilities();
    let c = if caps.supports(ArrayOp::Where, d)
        && caps.supports(ArrayOp::Full, d)
        && caps.supports(ArrayOp::FromHost, DType::Bool)
    {
        let data = s.upload(&h)?;
        let m = s.upload(&mask)?;
        let background = s.b().full(shape, fill)?;
        s.b().where_(&m, &data, &background)?
    } else {
        s.upload(&merged)?
    };
    Ok((merged, c))
}

/// Finite, moderate data for factorisations: non-finite values become 0.5, magnitudes
/// are capped at 1e6 (a NaN has no SVD to compare).
fn finite(h: HostArray) -> HostArray {
    let v: Vec<f64> = h
        .to_f64_vec()
        .into_iter()
        .map(|x| {
            if x.is_finite() {
                x.clamp(-1e6, 1e6)
            } else {
                0.5
            }
        })
        .collect();
    let shape = h.shape().to_vec();
    HostArray::F64(ArrayD::from_shape_vec(IxDyn(&shape), v).expect("same shape")).cast(h.dtype())
}

/// `a @ b` (or `a^T @ b` with `transpose_a`) of 2-d host arrays, in `f64`.
fn matmul_host(a: &HostArray, b: &HostArray, transpose_a: bool) -> HostArray {
    let (sa, sb) = (a.shape(), b.shape());
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let (m, k) = if transpose_a {
        (sa[1], sa[0])
    } else {
        (sa[0], sa[1])
    };
    let n = sb[1];
    let at = |i: usize, p: usize| {
        if transpose_a {
            av[p * sa[1] + i]
        } else {
            av[i * sa[1] + p]
        }
    };
    let out: Vec<f64> = (0..m * n)
        .map(|ij| (0..k).map(|p| at(ij / n, p) * bv[p * n + ij % n]).sum())
        .collect();
    HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[m, n]), out).expect("m x n"))
}

/// The `k x k` identity in `f64`.
fn identity(k: usize) -> HostArray {
    HostArray::F64(ArrayD::from_shape_fn(IxDyn(&[k, k]), |i| {
        f64::from(u8::from(i[0] == i[1]))
    }))
}

/// A 1-d `f64` host array.
fn vec_host(v: Vec<f64>) -> HostArray {
    let n = v.len();
    HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[n]), v).expect("1-d"))
}

/// `where(mask, h, fill)` on the host.
fn where_host(mask: &HostArray, h: &HostArray, fill: Scalar) -> HostArray {
    let keep = mask.to_f64_vec();
    let back = HostArray::full(h.shape(), fill, h.dtype());
    tessera_core::dispatch_host!(h, a => {
        let mut out = a.clone();
        let b = tessera_core::host::HostElement::view(&back).expect("same dtype");
        for ((o, &k), &f) in out.iter_mut().zip(&keep).zip(b.iter()) {
            if k == 0.0 {
                *o = f;
            }
        }
        tessera_core::host::HostElement::wrap(out)
    })
}

/// Every protocol family.
pub fn families() -> Vec<Family> {
    let mut v = vec![
        fam("from_host", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, c) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![h.clone()]);
            Ok(Produced::one(
                s.download(&c)?,
                Tol::EXACT,
                describe("x", d, &shape, None),
            ))
        }),
        fam("to_host", all(), |s, g, d, v| {
            // A chunk the backend made itself, then a copy of uploaded data.
            let shape = g.shape(0, 4);
            let value = g.scalar(d, Values::of_variant(v));
            let c = s.b().full(&shape, value)?;
            let (h, x) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![oracle::full(&shape, value), h.clone()]);
            Ok(Produced {
                out: vec![s.download(&c)?, s.download(&x)?],
                tol: Tol::EXACT,
                inputs: format!("{}, fill {value}", describe("x", d, &shape, None)),
            })
        }),
        fam("full", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let value = g.scalar(d, Values::of_variant(v));
            s.expect(|| vec![oracle::full(&shape, value)]);
            let c = s.b().full(&shape, value)?;
            Ok(Produced::one(
                s.download(&c)?,
                Tol::EXACT,
                format!("shape {shape:?}, value {value}"),
            ))
        }),
        fam("random", [floats(), integers()].concat(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let map = index_map(g, &shape);
            let (dist, tol) = if d.is_float() {
                if v == 0 {
                    let low = g.unit() * 10.0 - 5.0;
                    (
                        Distribution::Uniform {
                            low,
                            high: low + 0.5 + g.unit() * 10.0,
                        },
                        Tol::EXACT,
                    )
                } else {
                    (
                        Distribution::Normal {
                            mean: g.unit() * 4.0 - 2.0,
                            std: 0.1 + g.unit() * 3.0,
                        },
                        Tol::transcendental(d),
                    )
                }
            } else {
                let (lo, hi) = Gen::int_range(d);
                let (lo, hi) = (lo.max(i64::MIN as i128), hi.min(i64::MAX as i128));
                let (low, high) = if v == 2 {
                    (lo as i64, hi as i64)
                } else {
                    let low = (lo.max(-100) + g.below(50) as i128) as i64;
                    (low, low + 1 + g.below(60) as i64)
                };
                (Distribution::RandInt { low, high }, Tol::EXACT)
            };
            let spec = RandomSpec {
                seed: g.next_u64(),
                stream: g.below(4) as u64,
                dist,
                dtype: d,
            };
            // The normal distribution's ziggurat is defined by its tables: its samples are
            // compared with the reference only (see `oracle::random`).
            if s.reference {
                if let Some(h) = oracle::random(&spec, &map, &shape) {
                    s.expect(|| vec![h]);
                }
            }
            let c = s.b().random(&spec, &map, &shape)?;
            Ok(Produced::one(
                s.download(&c)?,
                tol,
                format!("shape {shape:?}, {spec:?}, map {map:?}"),
            ))
        }),
        fam("iota", vec![DType::I64], |s, g, _d, _v| {
            let shape = g.shape(0, 4);
            let map = index_map(g, &shape);
            let axis = g.below(map.src_shape.len());
            s.expect(|| vec![oracle::iota(&map, axis, &shape)]);
            let c = s.b().iota(&map, axis, &shape)?;
            Ok(Produced::one(
                s.download(&c)?,
                Tol::EXACT,
                format!("shape {shape:?}, axis {axis}, map {map:?}"),
            ))
        }),
        fam("astype", all(), |s, g, d, v| {
            let shape = g.shape(0, 3);
            let (h, x) = input(s, g, &shape, d, v)?;
            s.expect(|| DType::ALL.iter().map(|&to| oracle::cast(&h, to)).collect());
            let mut out = Vec::new();
            for to in DType::ALL {
                out.push(s.download(&s.b().cast(&x, to)?)?);
            }
            Ok(Produced {
                out,
                tol: Tol::EXACT,
                inputs: format!("{} to every dtype", describe("x", d, &shape, None)),
            })
        }),
        fam("where", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (hc, c) = input(s, g, &shape, DType::Bool, v)?;
            let (ha, a) = input(s, g, &shape, d, v)?;
            let (hb, b) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![oracle::where_(&hc, &ha, &hb)]);
            let r = s.b().where_(&c, &a, &b)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                describe("cond, a, b", d, &shape, None),
            ))
        }),
        fam("slice", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, x) = input(s, g, &shape, d, v)?;
            let slices: Vec<AxisSlice> = shape
                .iter()
                .map(|&n| {
                    let step: isize = g.pick(&[1, 2, 3, -1, -2]);
                    if n == 0 {
                        return AxisSlice {
                            start: 0,
                            step,
                            len: 0,
                        };
                    }
                    let start = g.below(n);
                    let room = if step > 0 {
                        (n - 1 - start) / step as usize + 1
                    } else {
                        start / (-step) as usize + 1
                    };
                    AxisSlice {
                        start,
                        step,
                        len: g.below(room + 1),
                    }
                })
                .collect();
            s.expect(|| vec![oracle::slice(&h, &slices)]);
            let r = s.b().slice(&x, &slices)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                format!("{}, slices {slices:?}", describe("x", d, &shape, None)),
            ))
        }),
        fam("transpose", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, x) = input(s, g, &shape, d, v)?;
            let perm = g.permutation(shape.len());
            s.expect(|| vec![oracle::transpose(&h, &perm)]);
            let r = s.b().transpose(&x, &perm)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                format!("{}, perm {perm:?}", describe("x", d, &shape, None)),
            ))
        }),
        fam("reshape", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, x) = input(s, g, &shape, d, v)?;
            let to = refactor(g, &shape);
            s.expect(|| vec![oracle::reshape(&h, &to)]);
            let r = s.b().reshape(&x, &to)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                format!("{}, to {to:?}", describe("x", d, &shape, None)),
            ))
        }),
        fam("broadcast_to", all(), |s, g, d, v| {
            let to = g.shape(0, 4);
            let shape: Vec<usize> = to
                .iter()
                .map(|&n| if g.chance(0.5) { 1 } else { n })
                .collect();
            let (h, x) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![oracle::broadcast_to(&h, &to)]);
            let r = s.b().broadcast_to(&x, &to)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                format!("{}, to {to:?}", describe("x", d, &shape, None)),
            ))
        }),
        fam("concatenate", all(), |s, g, d, v| {
            let base = g.shape(1, 4);
            let axis = g.below(base.len());
            let mut parts = Vec::new();
            let mut hosts = Vec::new();
            let mut lens = Vec::new();
            for _ in 0..1 + g.below(4) {
                let mut sh = base.clone();
                sh[axis] = g.dim();
                lens.push(sh[axis]);
                let (h, c) = input(s, g, &sh, d, v)?;
                hosts.push(h);
                parts.push(c);
            }
            s.expect(|| vec![oracle::concatenate(&hosts, axis)]);
            let r = s.b().concatenate(&parts, axis)?;
            Ok(Produced::one(
                s.download(&r)?,
                Tol::EXACT,
                format!(
                    "{}, axis {axis}, part lengths {lens:?}",
                    describe("parts", d, &base, None)
                ),
            ))
        }),
        fam("matmul", numeric(), |s, g, d, v| {
            let (m, k, n) = (g.dim(), g.dim(), g.dim());
            let (ha, a) = input_with(s, g, &[m, k], d, v, for_sum)?;
            let (hb, b) = input_with(s, g, &[k, n], d, v, for_sum)?;
            s.expect(|| vec![oracle::matmul(&ha, &hb)]);
            let r = s.b().matmul(&a, &b)?;
            let tol = Tol::reduction(d, k, max_abs(&ha) * max_abs(&hb)).max(Tol::arithmetic(d));
            Ok(Produced::one(
                s.download(&r)?,
                tol,
                format!("a: {d}[{m}, {k}], b: {d}[{k}, {n}]"),
            ))
        }),
        fam("qr", floats(), |s, g, d, v| {
            let (m, n) = (g.dim().max(1), g.dim().max(1));
            let (hx, x) = input_with(s, g, &[m, n], d, v, finite)?;
            let k = m.min(n);
            s.expect(|| {
                vec![
                    oracle::cast(&hx, DType::F64),
                    identity(k),
                    vec_host(vec![0.0; k * (k - 1) / 2]),
                ]
            });
            let (q, r) = s.b().qr(&x)?;
            let (q, r) = (s.download(&q)?, s.download(&r)?);
            if q.shape() != [m, k] || r.shape() != [k, n] {
                return Err(tessera_core::Error::shape(
                    "qr",
                    format!(
                        "factors {:?} and {:?} for a {m}x{n} input",
                        q.shape(),
                        r.shape()
                    ),
                ));
            }
            // The factors are unique only up to signs: compare what is not — the product,
            // the orthonormality of Q, and R's zero lower triangle.
            let lower: Vec<f64> = (0..k * n)
                .filter(|&i| i % n < i / n)
                .map(|i| r.to_f64_vec()[i])
                .collect();
            // Backward-stable factorisations: errors grow like `m n eps |x|`.
            let tol = Tol::reduction(d, m * n, max_abs(&hx).max(1.0)).max(Tol::arithmetic(d));
            Ok(Produced {
                out: vec![
                    matmul_host(&q, &r, false),
                    matmul_host(&q, &q, true),
                    vec_host(lower),
                ],
                tol,
                inputs: format!("x: {d}[{m}, {n}]; outputs Q R, Q^T Q, R below its diagonal"),
            })
        }),
        fam("svd", floats(), |s, g, d, v| {
            let (m, n) = (g.dim().max(1), g.dim().max(1));
            let (hx, x) = input_with(s, g, &[m, n], d, v, finite)?;
            let k = m.min(n);
            s.expect(|| {
                vec![
                    oracle::cast(&hx, DType::F64),
                    identity(k),
                    vec_host(oracle::singular_values(&hx)),
                ]
            });
            let (u, sv, vt) = s.b().svd(&x)?;
            let (u, sv, vt) = (s.download(&u)?, s.download(&sv)?, s.download(&vt)?);
            if u.shape() != [m, k] || sv.shape() != [k] || vt.shape() != [k, n] {
                return Err(tessera_core::Error::shape(
                    "svd",
                    format!(
                        "factors {:?}, {:?}, {:?} for a {m}x{n} input",
                        u.shape(),
                        sv.shape(),
                        vt.shape()
                    ),
                ));
            }
            // Singular values are unique; vectors only up to sign: compare U diag(S) Vt,
            // U^T U and S itself.
            let svals = sv.to_f64_vec();
            let mut us = u.to_f64_vec();
            for (i, e) in us.iter_mut().enumerate() {
                *e *= svals[i % k];
            }
            let us = tessera_core::HostArray::F64(
                ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[m, k]), us)
                    .map_err(|e| tessera_core::Error::Internal(e.to_string()))?,
            );
            // Backward-stable factorisations: errors grow like `m n eps |x|`.
            let tol = Tol::reduction(d, m * n, max_abs(&hx).max(1.0)).max(Tol::arithmetic(d));
            Ok(Produced {
                out: vec![
                    matmul_host(&us, &vt, false),
                    matmul_host(&u, &u, true),
                    vec_host(svals),
                ],
                tol,
                inputs: format!("x: {d}[{m}, {n}]; outputs U S Vt, U^T U, S"),
            })
        }),
    ];
    for op in UnaryOp::ALL {
        // The dtypes a backend's `unary` meets the op in: what the builder does not cast,
        // less `~` of a bool, which the builder sends as `logical_not`.
        let dtypes: Vec<DType> = DType::ALL
            .iter()
            .copied()
            .filter(|&d| op.operand_dtype(d) == Some(d))
            .filter(|&d| !(op == UnaryOp::Invert && d == DType::Bool))
            .collect();
        v.push(fam(op.name(), dtypes, move |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, x) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![oracle::unary(op, &h)]);
            let r = s.b().unary(op, &x)?;
            let tol = match op {
                UnaryOp::Sqrt => Tol::arithmetic(d),
                o if o.is_transcendental() => Tol::transcendental(d),
                _ => Tol::EXACT,
            };
            Ok(Produced::one(
                s.download(&r)?,
                tol,
                describe("x", d, &shape, None),
            ))
        }));
    }
    for op in BinaryOp::ALL {
        // The dtypes a backend's `binary` takes the op in (the builder casts or refuses
        // the rest before a backend sees them).
        let dtypes = if op.is_logical() {
            vec![DType::Bool]
        } else if op.is_float_only() {
            floats()
        } else if op.is_shift() {
            integers()
        } else if op.is_bitwise() {
            let mut d = integers();
            d.push(DType::Bool);
            d
        } else if op.is_arithmetic() {
            numeric()
        } else {
            all()
        };
        v.push(fam(op.name(), dtypes, move |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (ha, a) = input(s, g, &shape, d, v)?;
            let (hb, b) = input(s, g, &shape, d, v)?;
            s.expect(|| vec![oracle::binary(op, &ha, &hb)]);
            let r = s.b().binary(op, &a, &b)?;
            let tol = match op {
                o if o.is_transcendental() => Tol::transcendental(d),
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                    Tol::arithmetic(d)
                }
                _ => Tol::EXACT,
            };
            Ok(Produced::one(
                s.download(&r)?,
                tol,
                describe("a, b", d, &shape, None),
            ))
        }));
    }
    for op in ReduceOp::ALL {
        let dtypes: Vec<DType> = DType::ALL
            .iter()
            .copied()
            .filter(|&d| op.accepts(d))
            .collect();
        v.push(fam(op.name(), dtypes, move |s, g, d, v| {
            let shape = g.shape(0, 4);
            let tame = match op {
                ReduceOp::Prod => for_product,
                ReduceOp::Sum | ReduceOp::NanSum => for_sum,
                _ => |h| h,
            };
            let (h, x) = input_with(s, g, &shape, d, v, tame)?;
            let axes = g.axes(shape.len());
            s.expect_outcome(|| oracle::reduce(&h, op, &axes).map(|r| vec![r]).into());
            let r = s.b().reduce(&x, op, &axes)?;
            let n: usize = axes.iter().map(|&a| shape[a]).product();
            let rd = op.result_dtype(d);
            let tol = match op {
                ReduceOp::Sum | ReduceOp::NanSum => Tol::reduction(rd, n, max_abs(&h)),
                ReduceOp::Prod => Tol::product(rd, n, has_subnormal(&h)),
                _ => Tol::EXACT,
            };
            Ok(Produced::one(
                s.download(&r)?,
                tol,
                format!("{}, axes {axes:?}", describe("x", d, &shape, None)),
            ))
        }));
    }
    for op in ScanOp::ALL {
        v.push(fam(op.name(), all(), move |s, g, d, v| {
            let shape = g.shape(1, 4);
            let tame = match op {
                ScanOp::Prod => for_product,
                ScanOp::Sum => for_sum,
                _ => |h| h,
            };
            let (h, x) = input_with(s, g, &shape, d, v, tame)?;
            let axis = g.below(shape.len());
            s.expect(|| vec![oracle::scan::scan(&h, op, axis)]);
            let r = s.b().scan(&x, op, axis)?;
            let n = shape[axis];
            let tol = match op {
                ScanOp::Sum => Tol::reduction(d, n, max_abs(&h)),
                ScanOp::Prod => Tol::product(d, n, has_subnormal(&h)),
                _ => Tol::EXACT,
            };
            Ok(Produced::one(
                s.download(&r)?,
                tol,
                format!("{}, axis {axis}", describe("x", d, &shape, None)),
            ))
        }));
    }
    v.push(fam("sort", all(), |s, g, d, v| {
        let shape = g.shape(1, 4);
        let (h, x) = input(s, g, &shape, d, v)?;
        let axis = g.below(shape.len());
        let descending = g.chance(0.3);
        s.expect(|| vec![oracle::sort::sort(&h, axis, descending)]);
        let r = s.b().sort(&x, axis, descending)?;
        Ok(Produced::one(
            s.download(&r)?,
            Tol::EXACT,
            format!(
                "{}, axis {axis}, descending {descending}",
                describe("x", d, &shape, None)
            ),
        ))
    }));
    v.push(fam("execute", all(), program_case));
    v
}

/// A shape with the same number of elements as `shape`, factored differently.
fn refactor(g: &mut Gen, shape: &[usize]) -> Vec<usize> {
    let n = numel(shape);
    if n == 0 {
        let mut to = vec![g.below(4), 0];
        to.rotate_left(g.below(2));
        return to;
    }
    let mut left = n;
    let mut to = Vec::new();
    while left > 1 && to.len() < 3 {
        let divisors: Vec<usize> = (1..=left).filter(|k| left.is_multiple_of(*k)).collect();
        let k = g.pick(&divisors);
        to.push(k);
        left /= k;
    }
    to.push(left);
    if g.chance(0.3) {
        to.insert(g.below(to.len() + 1), 1);
    }
    to
}

/// A random fused program over one or two inputs, generators and every kind of node.
fn program_case(s: &Side, g: &mut Gen, d: DType, v: usize) -> Result<Produced> {
    let shape = g.shape(0, 3);
    let mut pb = ProgramBuilder::new(&shape);
    let mut inputs = Vec::new();
    let mut hosts = Vec::new();
    let mut words = Vec::new();
    let mut pool = Vec::new();
    for slot in 0..1 + g.below(2) {
        let map = index_map(g, &shape);
        let (h, c) = input_with(s, g, &map.src_shape.clone(), d, v, for_sum)?;
        words.push(format!("input {slot}: {d}{:?} via {map:?}", map.src_shape));
        pool.push(pb.input(slot, d, map));
        inputs.push(c);
        hosts.push(h);
    }
    let k = g.scalar(d, Values::Small);
    pool.push(pb.constant(k));
    words.push(format!("const {k}"));
    if g.chance(0.5) {
        let map = index_map(g, &shape);
        let axis = g.below(map.src_shape.len());
        let idx = pb.index(map, axis);
        pool.push(pb.cast(idx, d));
    }
    // A few random nodes; only correctly rounded ops so backends agree to the ulp.
    let bins = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ];
    for _ in 0..2 + g.below(4) {
        let a = pool[g.below(pool.len())];
        let b = pool[g.below(pool.len())];
        let node = match g.below(5) {
            0 | 1 if d != DType::Bool => pb.binary(g.pick(&bins), a, b)?,
            2 => {
                let cmp = pb.binary(BinaryOp::Lt, a, b)?;
                pb.where_(cmp, a, b)
            }
            3 if d != DType::Bool => pb.unary(g.pick(&[UnaryOp::Neg, UnaryOp::Abs]), a)?,
            _ => {
                let to = g.pick(&DType::ALL);
                let c = pb.cast(a, to);
                pb.cast(c, d)
            }
        };
        pool.push(node);
    }
    if v == 1 && d != DType::Bool {
        // A chain of two arithmetic ops always, `(x + y) * z`: what a fusing code
        // generator must get right (register reuse, operand order, rounding per op).
        let (x, y, z) = (
            pool[g.below(pool.len())],
            pool[g.below(pool.len())],
            pool[g.below(pool.len())],
        );
        let sum = pb.binary(BinaryOp::Add, x, y)?;
        let chained = pb.binary(BinaryOp::Mul, sum, z)?;
        pool.push(chained);
    }
    let out = *pool.last().expect("the pool is never empty");
    let out_dtype = pb.dtype(out);
    let reduce = (v == 2).then(|| Reduction {
        op: if out_dtype == DType::Bool {
            ReduceOp::Any
        } else {
            g.pick(&[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Count])
        },
        axes: g.axes(shape.len()),
    });
    let program = pb.finish(vec![(out, None), (out, reduce)])?;
    if s.reference {
        // `None` where the program samples the normal distribution (see `oracle::random`).
        if let Some(expected) = oracle::program::execute(&program, &hosts) {
            s.expect_outcome(|| expected.into());
        }
    }
    let results = s.b().execute(&program, &inputs)?;
    let out = results
        .iter()
        .map(|c| s.download(c))
        .collect::<Result<Vec<_>>>()?;
    let scale = hosts
        .iter()
        .map(max_abs)
        .fold(k.as_f64().abs(), f64::max)
        .max(1.0);
    let n = numel(&shape).max(1);
    let tol = Tol::reduction(d, n, scale * scale).max(Tol::arithmetic(d));
    Ok(Produced {
        out,
        tol,
        inputs: format!(
            "shape {shape:?}; {}\n{}",
            words.join("; "),
            program.describe()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::Scalar;

    #[test]
    fn refactor_keeps_the_element_count() {
        let mut g = Gen::new(1);
        for _ in 0..200 {
            let s = g.shape(0, 4);
            assert_eq!(numel(&refactor(&mut g, &s)), numel(&s));
        }
    }

    #[test]
    fn every_protocol_op_has_a_family() {
        let names: Vec<String> = families().into_iter().map(|f| f.op).collect();
        for op in tessera_core::Capabilities::op_names() {
            assert!(names.iter().any(|n| n == op), "no family for {op}");
        }
    }

    #[test]
    fn scalars_of_every_dtype_are_generated() {
        let mut g = Gen::new(2);
        for d in DType::ALL {
            let sc: Scalar = g.scalar(d, Values::Special);
            assert_eq!(sc.dtype(), d);
        }
    }
}

//! Blocked ops and linear algebra: matmul, blockwise, TSQR and the SVDs.

use std::sync::Arc;

use tessera_array::Array;
use tessera_core::chunks::{ChunkSpec, Chunks};
use tessera_core::program::UnaryOp;
use tessera_core::{DType, HostArray};

use super::inputs::{arr, arr_with, fam, one};
use crate::case::{Family, Produced};
use crate::cases::domain::{all, floats, numeric};
use crate::compare::{max_abs, Tol};
use crate::gen::for_sum;
use crate::oracle::api::{self as expect};
use crate::oracle::{self};

pub(super) fn blocks_and_linalg() -> Vec<Family> {
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

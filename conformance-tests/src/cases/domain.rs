//! What the array suite's cases range over, shared by its two families: the dtype sets
//! (`all`, `numeric`, `floats`, `integers`), a case's description, and random index maps.

use tessera_core::chunks::Chunks;
use tessera_core::program::{AxisMap, IndexMap};
use tessera_core::DType;

use crate::gen::Gen;

/// Every dtype.
pub fn all() -> Vec<DType> {
    DType::ALL.to_vec()
}

/// Every dtype but bool.
pub fn numeric() -> Vec<DType> {
    DType::ALL
        .iter()
        .copied()
        .filter(|d| *d != DType::Bool)
        .collect()
}

/// `float32`, `float64`.
pub fn floats() -> Vec<DType> {
    vec![DType::F32, DType::F64]
}

/// The integer dtypes.
pub fn integers() -> Vec<DType> {
    DType::ALL
        .iter()
        .copied()
        .filter(|d| d.is_integer())
        .collect()
}

/// `shape` and chunks in words, e.g. `[3, 4] chunks [[1, 2], [4]]`.
pub fn describe(name: &str, dtype: DType, shape: &[usize], chunks: Option<&Chunks>) -> String {
    match chunks {
        Some(c) => format!("{name}: {dtype}{shape:?} chunks {:?}", c.sizes()),
        None => format!("{name}: {dtype}{shape:?}"),
    }
}

/// A random affine map producing `out_shape` from a larger source: strided, reversed,
/// broadcast (step 0) and fixed axes, in shuffled source order. At least one source axis.
pub fn index_map(g: &mut Gen, out_shape: &[usize]) -> IndexMap {
    let mut axes: Vec<(AxisMap, usize)> = Vec::new();
    for (o, &n) in out_shape.iter().enumerate() {
        let step: i64 = g.pick(&[1, 1, 2, 3, -1, -2, 0]);
        let span = step.unsigned_abs() as usize * n.saturating_sub(1);
        let (start, len) = if step >= 0 {
            let start = g.below(3);
            (start, start + span + 1 + g.below(3))
        } else {
            let start = span + g.below(3);
            (start, start + 1 + g.below(2))
        };
        axes.push((
            AxisMap {
                start: start as i64,
                step,
                out_axis: Some(o),
            },
            len,
        ));
    }
    let fixed = if out_shape.is_empty() {
        1 + g.below(2)
    } else {
        g.below(2)
    };
    for _ in 0..fixed {
        let len = 1 + g.below(4);
        axes.push((
            AxisMap {
                start: g.below(len) as i64,
                step: 1,
                out_axis: None,
            },
            len,
        ));
    }
    let order = g.permutation(axes.len());
    let axes: Vec<(AxisMap, usize)> = order.into_iter().map(|i| axes[i]).collect();
    IndexMap {
        src_shape: axes.iter().map(|a| a.1).collect(),
        axes: axes.iter().map(|a| a.0).collect(),
    }
}

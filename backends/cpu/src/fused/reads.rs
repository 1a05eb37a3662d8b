//! Reading a program's leaves into tile buffers: stored inputs gathered through their
//! affine maps, constants filled (into spare buffers kept from the previous tile).

use tessera_core::program::{Linear, Node, Program};
use tessera_core::{DType, HostArray, Scalar};

use super::tile::Buf;

/// Which elements of an input a tile reads.
pub(crate) enum Read<'a> {
    /// These flat indices, in order.
    At(&'a [i64]),
    /// `start .. start + len`, contiguous: copied, not gathered.
    Range(usize, usize),
}

/// The elements `read` names, widened into a tile buffer.
pub(crate) fn gather(h: &HostArray, read: Read<'_>) -> Buf {
    macro_rules! g {
        ($a:expr, $variant:ident, $conv:expr) => {{
            let s = $a.as_slice().expect("cpu chunks are C-contiguous");
            Buf::$variant(match read {
                Read::At(idx) => idx.iter().map(|&i| $conv(s[i as usize])).collect(),
                Read::Range(start, len) => {
                    s[start..start + len].iter().map(|&v| $conv(v)).collect()
                }
            })
        }};
    }
    match h {
        HostArray::Bool(a) => g!(a, B, |v: bool| v),
        HostArray::I8(a) => g!(a, I, |v: i8| v as i64),
        HostArray::I16(a) => g!(a, I, |v: i16| v as i64),
        HostArray::I32(a) => g!(a, I, |v: i32| v as i64),
        HostArray::I64(a) => g!(a, I, |v: i64| v),
        HostArray::U8(a) => g!(a, I, |v: u8| v as i64),
        HostArray::U16(a) => g!(a, I, |v: u16| v as i64),
        HostArray::U32(a) => g!(a, I, |v: u32| v as i64),
        HostArray::U64(a) => g!(a, U, |v: u64| v),
        HostArray::F32(a) => g!(a, F32, |v: f32| v),
        HostArray::F64(a) => g!(a, F64, |v: f64| v),
    }
}

/// A tile of `n` copies of `c`; a `float64` one fills a spare tile buffer when there is
/// one (see [`SPARE`]).
pub(crate) fn constant(c: Scalar, n: usize, spare: &mut Vec<Vec<f64>>) -> Buf {
    match c.dtype() {
        DType::Bool => Buf::B(vec![c.as_bool(); n]),
        DType::U64 => Buf::U(vec![c.as_u64(); n]),
        DType::F32 => Buf::F32(vec![c.as_f64() as f32; n]),
        DType::F64 => {
            let mut v = spare.pop().unwrap_or_default();
            v.clear();
            v.resize(n, c.as_f64());
            Buf::F64(v)
        }
        _ => Buf::I(vec![c.as_i64(); n]),
    }
}

/// The linear maps of a program's leaves (inputs, random sources, index sources), by
/// node: what running any range of its elements needs.
pub(crate) fn leaf_maps(program: &Program) -> Vec<Option<Linear>> {
    let ndim = program.shape.len();
    program
        .nodes
        .iter()
        .map(|n| match n {
            Node::Input { map, .. } | Node::Random { map, .. } => Some(map.flat_linear(ndim)),
            Node::Index { map, axis } => Some(map.axis_linear(*axis, ndim)),
            _ => None,
        })
        .collect()
}

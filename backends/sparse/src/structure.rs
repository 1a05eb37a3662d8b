//! Structural kernels on explicit entries: strided slice, transpose, broadcast,
//! concatenate. Each maps every explicit entry's coordinates and re-sorts; the fill is
//! unchanged, so the work is proportional to the explicit entries, never to the chunk's
//! dense size. (Reshape needs no kernel: C-order flat indices do not change.)

use tessera_core::backend::AxisSlice;
use tessera_core::chunks::c_strides;
use tessera_core::{Error, Result};

use crate::chunk::SparseChunk;

/// Decodes a flat C-order index into `coords`.
pub(crate) fn decode(mut flat: u64, strides: &[usize], coords: &mut [usize]) {
    for (c, &s) in coords.iter_mut().zip(strides) {
        let s = s.max(1) as u64;
        *c = (flat / s) as usize;
        flat %= s;
    }
}

/// Encodes coordinates into a flat C-order index.
pub(crate) fn encode(coords: &[usize], strides: &[usize]) -> u64 {
    coords
        .iter()
        .zip(strides)
        .map(|(&c, &s)| (c * s) as u64)
        .sum()
}

/// Strided slice, one [`AxisSlice`] per axis (validated like the reference).
pub(crate) fn slice(x: &SparseChunk, slices: &[AxisSlice]) -> Result<SparseChunk> {
    let (_, shape) = AxisSlice::map(&x.shape, slices)?;
    let (src, dst) = (c_strides(&x.shape), c_strides(&shape));
    let mut c = vec![0; shape.len()];
    let mut pairs = Vec::new();
    'entries: for (k, &flat) in x.idx.iter().enumerate() {
        decode(flat, &src, &mut c);
        for (ci, s) in c.iter_mut().zip(slices) {
            let d = *ci as i64 - s.start as i64;
            let step = s.step as i64;
            if d % step != 0 {
                continue 'entries;
            }
            let i = d / step;
            if i < 0 || i >= s.len as i64 {
                continue 'entries;
            }
            *ci = i as usize;
        }
        pairs.push((encode(&c, &dst), k));
    }
    Ok(x.permuted(&shape, pairs))
}

/// Axis permutation: output axis `i` is input axis `perm[i]`.
pub(crate) fn transpose(x: &SparseChunk, perm: &[usize]) -> Result<SparseChunk> {
    let n = x.shape.len();
    if perm.len() != n || (0..n).any(|i| !perm.contains(&i)) {
        return Err(Error::invalid(
            "transpose",
            format!("{perm:?} is not a permutation of {n} axes"),
        ));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let (src, dst) = (c_strides(&x.shape), c_strides(&shape));
    let mut c = vec![0; n];
    let mut out = vec![0; n];
    let pairs = x
        .idx
        .iter()
        .enumerate()
        .map(|(k, &flat)| {
            decode(flat, &src, &mut c);
            for (o, &p) in out.iter_mut().zip(perm) {
                *o = c[p];
            }
            (encode(&out, &dst), k)
        })
        .collect();
    Ok(x.permuted(&shape, pairs))
}

/// C-order reshape (the flat indices stay).
pub(crate) fn reshape(x: &SparseChunk, shape: &[usize]) -> Result<SparseChunk> {
    if x.len() != shape.iter().product::<usize>() {
        return Err(Error::shape(
            "reshape",
            format!("cannot reshape {:?} into {:?}", x.shape, shape),
        ));
    }
    let mut out = x.clone();
    out.shape = shape.to_vec();
    Ok(out)
}

/// Broadcast of size-1 axes: every explicit entry repeats along them.
pub(crate) fn broadcast_to(x: &SparseChunk, shape: &[usize]) -> Result<SparseChunk> {
    let own = &x.shape;
    if own.len() != shape.len() || own.iter().zip(shape).any(|(&a, &b)| a != b && a != 1) {
        return Err(Error::shape(
            "broadcast_to",
            format!("cannot broadcast {own:?} to {shape:?}"),
        ));
    }
    let (src, dst) = (c_strides(own), c_strides(shape));
    let expand: Vec<usize> = (0..shape.len()).filter(|&a| own[a] != shape[a]).collect();
    let reps: usize = expand.iter().map(|&a| shape[a]).product();
    let mut c = vec![0; shape.len()];
    let mut pairs = Vec::with_capacity(x.idx.len() * reps);
    for (k, &flat) in x.idx.iter().enumerate() {
        decode(flat, &src, &mut c);
        for r in 0..reps {
            let mut rest = r;
            for &a in expand.iter().rev() {
                c[a] = rest % shape[a];
                rest /= shape[a];
            }
            pairs.push((encode(&c, &dst), k));
        }
    }
    Ok(x.permuted(shape, pairs))
}

/// Concatenation along `axis` of chunks sharing a fill (the caller handles others).
pub(crate) fn concatenate(parts: &[&SparseChunk], axis: usize) -> Result<SparseChunk> {
    let first = parts[0];
    let mut shape = first.shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let dst = c_strides(&shape);
    let mut pairs = Vec::new();
    let mut vals = Vec::new();
    let mut offset = 0;
    let mut base = 0;
    let mut c = vec![0; shape.len()];
    for p in parts {
        let src = c_strides(&p.shape);
        for (k, &flat) in p.idx.iter().enumerate() {
            decode(flat, &src, &mut c);
            c[axis] += offset;
            pairs.push((encode(&c, &dst), base + k));
        }
        base += p.nnz();
        vals.push(p.values().clone());
        offset += p.shape[axis];
    }
    // One value array of all parts, in part order, then re-sorted by the new indices.
    let joined = SparseChunk {
        shape: shape.clone(),
        fill: first.fill,
        idx: Vec::new(),
        vals: concat_values(&vals)?,
    };
    Ok(joined.permuted(&shape, pairs))
}

fn concat_values(vals: &[tessera_core::HostArray]) -> Result<tessera_core::HostArray> {
    use crate::chunk::{to_vec, vec1, with_type};
    let dtype = vals[0].dtype();
    Ok(with_type!(dtype, T => {
        let mut all: Vec<T> = Vec::new();
        for v in vals {
            all.extend(to_vec::<T>(v));
        }
        vec1(all)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::vec1;
    use tessera_core::Scalar;

    fn chunk(shape: &[usize], idx: Vec<u64>, vals: Vec<f64>) -> SparseChunk {
        SparseChunk::from_parts(shape, Scalar::F64(0.0), idx, vec1(vals))
    }

    #[test]
    fn structure_matches_the_dense_definition() {
        // [[0, 1, 0], [2, 0, 3]]
        let x = chunk(&[2, 3], vec![1, 3, 5], vec![1.0, 2.0, 3.0]);
        let t = transpose(&x, &[1, 0]).unwrap();
        assert_eq!(
            t.to_dense().to_f64_vec(),
            vec![0.0, 2.0, 1.0, 0.0, 0.0, 3.0]
        );
        let s = slice(
            &x,
            &[
                AxisSlice {
                    start: 1,
                    step: -1,
                    len: 2,
                },
                AxisSlice {
                    start: 2,
                    step: -2,
                    len: 2,
                },
            ],
        )
        .unwrap();
        assert_eq!(s.to_dense().to_f64_vec(), vec![3.0, 2.0, 0.0, 0.0]);
        let row = chunk(&[1, 3], vec![0, 2], vec![4.0, 5.0]);
        let b = broadcast_to(&row, &[2, 3]).unwrap();
        assert_eq!(
            b.to_dense().to_f64_vec(),
            vec![4.0, 0.0, 5.0, 4.0, 0.0, 5.0]
        );
        let c = concatenate(&[&x, &row], 0).unwrap();
        assert_eq!(
            c.to_dense().to_f64_vec(),
            vec![0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0]
        );
        let c1 = concatenate(&[&x, &x], 1).unwrap();
        assert_eq!(c1.indices(), &[1, 4, 6, 8, 9, 11]);
        assert!(reshape(&x, &[4]).is_err());
    }
}

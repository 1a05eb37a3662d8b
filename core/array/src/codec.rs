//! Chunks as bytes: the elements in C order, and a self-describing message form.
//!
//! Spill files hold the bare elements (their dtype and shape live beside them); chunks
//! sent between ranks of a distributed run carry a small header instead — dtype, rank,
//! shape — so the receiver rebuilds the chunk from the bytes alone, and a truncated or
//! mislabelled message is an error, never a wrong array.

use std::io::{Read, Write};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::{HostArray, HostElement};

/// Bytes of the elements in C order (booleans as one byte each).
pub(crate) fn write_elements(host: &HostArray, w: &mut dyn Write) -> std::io::Result<()> {
    fn typed<T: HostElement + bytemuck::Pod>(
        h: &HostArray,
        w: &mut dyn Write,
    ) -> std::io::Result<()> {
        let v = T::view(h).expect("dtype checked by the caller");
        match v.as_slice() {
            Some(s) => w.write_all(bytemuck::cast_slice(s)),
            None => {
                let owned: Vec<T> = v.iter().copied().collect();
                w.write_all(bytemuck::cast_slice(&owned))
            }
        }
    }
    match host {
        HostArray::Bool(a) => {
            let bytes: Vec<u8> = a.iter().map(|&b| u8::from(b)).collect();
            w.write_all(&bytes)
        }
        HostArray::I8(_) => typed::<i8>(host, w),
        HostArray::I16(_) => typed::<i16>(host, w),
        HostArray::I32(_) => typed::<i32>(host, w),
        HostArray::I64(_) => typed::<i64>(host, w),
        HostArray::U8(_) => typed::<u8>(host, w),
        HostArray::U16(_) => typed::<u16>(host, w),
        HostArray::U32(_) => typed::<u32>(host, w),
        HostArray::U64(_) => typed::<u64>(host, w),
        HostArray::F32(_) => typed::<f32>(host, w),
        HostArray::F64(_) => typed::<f64>(host, w),
    }
}

/// Reads `shape`'s elements of `dtype` back, straight into their final buffer.
pub(crate) fn read_elements(
    dtype: DType,
    shape: &[usize],
    r: &mut dyn Read,
) -> std::io::Result<HostArray> {
    fn typed<T: HostElement + bytemuck::Pod>(
        shape: &[usize],
        n: usize,
        r: &mut dyn Read,
    ) -> std::io::Result<HostArray> {
        let mut v = vec![T::zeroed(); n];
        r.read_exact(bytemuck::cast_slice_mut(&mut v))?;
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(T::wrap(a))
    }
    let n: usize = shape.iter().product();
    let host = match dtype {
        DType::Bool => {
            let mut v = vec![0u8; n];
            r.read_exact(&mut v)?;
            let a = ndarray::ArrayD::from_shape_vec(
                ndarray::IxDyn(shape),
                v.into_iter().map(|b| b != 0).collect(),
            )
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            HostArray::Bool(a)
        }
        DType::I8 => typed::<i8>(shape, n, r)?,
        DType::I16 => typed::<i16>(shape, n, r)?,
        DType::I32 => typed::<i32>(shape, n, r)?,
        DType::I64 => typed::<i64>(shape, n, r)?,
        DType::U8 => typed::<u8>(shape, n, r)?,
        DType::U16 => typed::<u16>(shape, n, r)?,
        DType::U32 => typed::<u32>(shape, n, r)?,
        DType::U64 => typed::<u64>(shape, n, r)?,
        DType::F32 => typed::<f32>(shape, n, r)?,
        DType::F64 => typed::<f64>(shape, n, r)?,
    };
    let mut extra = [0u8; 1];
    if r.read(&mut extra)? != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "more bytes than the chunk's elements",
        ));
    }
    Ok(host)
}

/// A message's first bytes: a magic, a format version.
const MAGIC: &[u8; 4] = b"TSC1";

/// A chunk as one message: `TSC1`, the dtype's name (length-prefixed), the number of
/// axes, each axis as a little-endian `u64`, then the elements.
pub(crate) fn encode(host: &HostArray) -> Result<Vec<u8>> {
    let name = host.dtype().name().as_bytes();
    let mut out = Vec::with_capacity(16 + name.len() + 8 * host.shape().len() + host.nbytes());
    out.extend_from_slice(MAGIC);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.push(host.shape().len() as u8);
    for &d in host.shape() {
        out.extend_from_slice(&(d as u64).to_le_bytes());
    }
    write_elements(host, &mut out)
        .map_err(|e| Error::Internal(format!("encoding a chunk: {e}")))?;
    Ok(out)
}

/// The chunk of an [`encode`]d message.
///
/// # Errors
/// A message that is not one: wrong magic, unknown dtype, a shape whose size overflows, or
/// fewer or more bytes than the shape's elements.
pub(crate) fn decode(bytes: &[u8]) -> Result<HostArray> {
    let bad = |what: &str| Error::Internal(format!("a chunk message that does not decode: {what}"));
    let mut r = bytes;
    let mut take = |n: usize| -> Result<&[u8]> {
        if r.len() < n {
            return Err(bad("truncated header"));
        }
        let (head, rest) = r.split_at(n);
        r = rest;
        Ok(head)
    };
    if take(4)? != MAGIC {
        return Err(bad("no TSC1 magic"));
    }
    let len = take(1)?[0] as usize;
    let name = std::str::from_utf8(take(len)?).map_err(|_| bad("dtype name is not UTF-8"))?;
    let dtype = DType::parse(name).ok_or_else(|| bad(&format!("unknown dtype '{name}'")))?;
    let ndim = take(1)?[0] as usize;
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let d = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad("axis"))?);
        shape.push(usize::try_from(d).map_err(|_| bad("axis length over usize"))?);
    }
    let elems = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| bad(&format!("shape {shape:?} overflows")))?;
    if r.len() != elems {
        return Err(bad(&format!(
            "{} bytes of elements for {dtype} {shape:?}, which takes {elems}",
            r.len()
        )));
    }
    read_elements(dtype, &shape, &mut r).map_err(|e| bad(&e.to_string()))
}

/// Numbered chunks as one message (a rank's share of a collective), each [`encode`]d
/// ([`tessera_runtime::cluster::numbered`] gives the layout).
pub(crate) fn encode_numbered(chunks: &[(usize, HostArray)]) -> Result<Vec<u8>> {
    let items = chunks
        .iter()
        .map(|(i, h)| Ok((*i, encode(h)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(tessera_runtime::cluster::numbered::pack(&items))
}

/// The chunks of an [`encode_numbered`] message.
///
/// # Errors
/// A truncated message, or a chunk that does not [`decode`].
pub(crate) fn decode_numbered(bytes: &[u8]) -> Result<Vec<(usize, HostArray)>> {
    tessera_runtime::cluster::numbered::unpack(bytes)?
        .into_iter()
        .map(|(i, b)| Ok((i, decode(b)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_through_messages() {
        let a = HostArray::F64(ndarray::ArrayD::from_shape_fn(
            ndarray::IxDyn(&[3, 4]),
            |i| (i[0] * 10 + i[1]) as f64 - 0.5,
        ));
        assert_eq!(decode(&encode(&a).unwrap()).unwrap(), a);
        let b = HostArray::Bool(ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[5]), |i| {
            i[0] % 2 == 0
        }));
        assert_eq!(decode(&encode(&b).unwrap()).unwrap(), b);
        let z = HostArray::I32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[0, 7])));
        assert_eq!(decode(&encode(&z).unwrap()).unwrap(), z);
        let t = a.clone().into_standard_layout();
        assert_eq!(decode(&encode(&t).unwrap()).unwrap(), a);
    }

    #[test]
    fn numbered_chunks_round_trip_and_cuts_are_errors() {
        let a = HostArray::F32(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[2, 3]), 1.5));
        let b = HostArray::I64(ndarray::ArrayD::from_elem(ndarray::IxDyn(&[4]), -7));
        let m = encode_numbered(&[(3, a.clone()), (9, b.clone())]).unwrap();
        assert_eq!(decode_numbered(&m).unwrap(), vec![(3, a), (9, b)]);
        assert!(decode_numbered(&encode_numbered(&[]).unwrap())
            .unwrap()
            .is_empty());
        for cut in [0, 7, 20, m.len() - 1] {
            assert!(decode_numbered(&m[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn damaged_messages_are_errors() {
        let a = HostArray::U16(ndarray::ArrayD::zeros(ndarray::IxDyn(&[2, 2])));
        let m = encode(&a).unwrap();
        for cut in [0, 3, 7, m.len() - 1] {
            assert!(decode(&m[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = m.clone();
        long.push(0);
        assert!(decode(&long)
            .unwrap_err()
            .to_string()
            .contains("bytes of elements"));
        let mut huge = m.clone();
        let at = 4 + 1 + "uint16".len() + 1;
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge).is_err());
    }
}

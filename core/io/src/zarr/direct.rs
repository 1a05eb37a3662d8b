//! Decoding a whole stored chunk straight into its block's buffer.
//!
//! zarrs decodes a chunk into a vector of bytes, then copies those into a vector of its
//! elements that it zeroes first: for a 2048 × 2048 float64 chunk that is 32 MiB zeroed and
//! 32 MiB copied on top of what the decoder writes, a sixth of the time of reading a Blosc
//! array and summing it. The codec chains most stored arrays use — the `bytes` codec,
//! little-endian, then one Blosc or zstd codec — are decoded here instead: the encoded
//! chunk is fetched through zarrs and decompressed by the same C libraries straight into
//! the vector that becomes the block. Any other chain, a missing chunk (the fill value) and
//! `bool` (not every byte is a valid `bool`) go through zarrs as before.

use std::ffi::c_void;

use tessera_core::dtype::DType;
use tessera_core::host::HostArray;
use zarrs::array::codec::{BloscCodec, BytesCodec, ZstdCodec};
use zarrs::array::CodecChain;

/// The one compressor of a chain this module decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compressor {
    /// Blosc (any inner compressor and shuffle: its header says which).
    Blosc,
    /// zstd (any level; the frame says whether it carries a checksum, which is checked).
    Zstd,
}

/// The compressor when `codecs` is `bytes` (little-endian or without an endianness, on a
/// little-endian machine) followed by exactly one Blosc or zstd codec and nothing else,
/// and `dtype` is not `bool` (not every byte is a valid `bool`: zarrs decodes and checks
/// those).
pub(crate) fn plan(codecs: &CodecChain, dtype: DType) -> Option<Compressor> {
    if cfg!(target_endian = "big")
        || dtype == DType::Bool
        || !codecs.array_to_array_codecs().is_empty()
    {
        return None;
    }
    let bytes = codecs.array_to_bytes_codec();
    bytes.as_any().downcast_ref::<BytesCodec>()?;
    // `{"endian": "little"}`, or no configuration for one-byte types.
    let endian = bytes
        .configuration_v3(&Default::default())
        .and_then(|c| c.get("endian").cloned());
    if endian.is_some_and(|e| e != "little") {
        return None;
    }
    match codecs.bytes_to_bytes_codecs() {
        [one] if one.as_any().downcast_ref::<BloscCodec>().is_some() => Some(Compressor::Blosc),
        [one] if one.as_any().downcast_ref::<ZstdCodec>().is_some() => Some(Compressor::Zstd),
        _ => None,
    }
}

/// Element types any bit pattern of which is a value, so decompressed bytes may become
/// them without a check: implemented (privately) for the primitive integers and floats
/// only, which have no invalid bit patterns and no padding.
trait Plain: Copy {}
impl Plain for i8 {}
impl Plain for i16 {}
impl Plain for i32 {}
impl Plain for i64 {}
impl Plain for u8 {}
impl Plain for u16 {}
impl Plain for u32 {}
impl Plain for u64 {}
impl Plain for f32 {}
impl Plain for f64 {}

/// `encoded` (one whole stored chunk) decompressed into an array of `dtype` and `shape`
/// (the chunk's, in C order).
///
/// # Errors
/// A chunk that is not valid for its compressor, or that does not decompress to exactly
/// the values of `shape`, is an error naming what was found; so is `bool`, which [`plan`]
/// never sends here.
pub(crate) fn decode(
    compressor: Compressor,
    encoded: &[u8],
    dtype: DType,
    shape: &[usize],
) -> Result<HostArray, String> {
    let Some(elements) = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
        return Err(format!("a chunk of shape {shape:?} does not fit in memory"));
    };
    macro_rules! plain {
        ($($d:ident => $t:ty),*) => {
            match dtype {
                $(DType::$d => decode_into::<$t>(compressor, encoded, elements).map(|v| {
                    HostArray::from(
                        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v)
                            .expect("the vector holds the shape's elements"),
                    )
                }),)*
                DType::Bool => Err("bool chunks are decoded by zarrs".to_string()),
            }
        };
    }
    plain!(I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16,
        U32 => u32, U64 => u64, F32 => f32, F64 => f64)
}

/// The decompressed values, written into a new vector's capacity (never zeroed).
#[allow(unsafe_code)]
fn decode_into<T: Plain>(
    compressor: Compressor,
    encoded: &[u8],
    elements: usize,
) -> Result<Vec<T>, String> {
    let bytes = elements
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| format!("a chunk of {elements} elements does not fit in memory"))?;
    let mut out: Vec<T> = Vec::with_capacity(elements);
    let written = match compressor {
        Compressor::Blosc => blosc_into(encoded, out.as_mut_ptr().cast(), bytes)?,
        Compressor::Zstd => zstd_into(encoded, out.as_mut_ptr().cast(), bytes)?,
    };
    if written != bytes {
        return Err(format!(
            "the chunk decompressed to {written} bytes where {bytes} were expected"
        ));
    }
    // SAFETY: the decompressor wrote all `bytes` = `elements * size_of::<T>()` bytes of the
    // capacity (checked just above), and every bit pattern is a `T` (`Plain` is only
    // implemented for primitive integers and floats).
    unsafe { out.set_len(elements) };
    Ok(out)
}

/// Decompresses a Blosc buffer into `dest`, which has room for `capacity` bytes; the
/// number of bytes written.
#[allow(unsafe_code)]
fn blosc_into(src: &[u8], dest: *mut c_void, capacity: usize) -> Result<usize, String> {
    let mut nbytes = 0usize;
    // SAFETY: `blosc_cbuffer_validate` reads the header only within `src.len()` bytes and
    // writes the decompressed size it declares to `nbytes`.
    let valid = unsafe {
        blosc_src::blosc_cbuffer_validate(src.as_ptr().cast(), src.len(), &raw mut nbytes)
    };
    if valid != 0 {
        return Err(format!(
            "not a valid Blosc buffer ({} bytes; its header does not match its length)",
            src.len()
        ));
    }
    if nbytes != capacity {
        return Err(format!(
            "the Blosc header declares {nbytes} bytes where the chunk holds {capacity}"
        ));
    }
    // SAFETY: the header was validated against `src.len()`, and it declares exactly
    // `capacity` bytes, which is what `dest` has room for (`destsize`); Blosc writes no
    // more than `destsize` bytes and runs on this thread only (one internal thread).
    let n = unsafe { blosc_src::blosc_decompress_ctx(src.as_ptr().cast(), dest, capacity, 1) };
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0 || capacity == 0)
        .ok_or_else(|| format!("Blosc could not decompress the chunk (code {n})"))
}

/// Decompresses one or more zstd frames into `dest`, which has room for `capacity`
/// bytes; the number of bytes written.
#[allow(unsafe_code)]
fn zstd_into(src: &[u8], dest: *mut c_void, capacity: usize) -> Result<usize, String> {
    // SAFETY: `ZSTD_decompress` writes at most `capacity` bytes to `dest` (which has room
    // for them) and reads only `src`; it returns the number of bytes written or an error
    // code, which `ZSTD_isError` tells apart.
    let n = unsafe {
        zstd::zstd_safe::zstd_sys::ZSTD_decompress(dest, capacity, src.as_ptr().cast(), src.len())
    };
    // SAFETY: `ZSTD_isError` only inspects its argument.
    if unsafe { zstd::zstd_safe::zstd_sys::ZSTD_isError(n) } != 0 {
        let name = zstd::zstd_safe::get_error_name(n);
        return Err(format!("zstd could not decompress the chunk: {name}"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize) -> Vec<f64> {
        (0..n).map(|i| (i as f64 * 0.37).sin() * 1e3).collect()
    }

    fn as_bytes(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[allow(unsafe_code)]
    fn blosc(raw: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; raw.len() + blosc_src::BLOSC_MAX_OVERHEAD as usize];
        let compressor = c"lz4";
        // SAFETY: test helper: `out` has room for the input plus Blosc's overhead, the
        // compressor name is a C string, one thread.
        let n = unsafe {
            blosc_src::blosc_compress_ctx(
                5,
                1,
                8,
                raw.len(),
                raw.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                out.len(),
                compressor.as_ptr(),
                0,
                1,
            )
        };
        assert!(n > 0);
        out.truncate(n as usize);
        out
    }

    #[test]
    fn blosc_and_zstd_chunks_decode_to_their_values() {
        let v = values(10_000);
        let raw = as_bytes(&v);
        for (c, enc) in [
            (Compressor::Blosc, blosc(&raw)),
            (Compressor::Zstd, zstd::bulk::compress(&raw, 3).unwrap()),
        ] {
            let got = decode(c, &enc, DType::F64, &[100, 100]).unwrap();
            assert_eq!(got.shape(), &[100, 100]);
            assert_eq!(got.to_f64_vec(), v, "{c:?}");
            let f32s = decode(c, &enc, DType::F32, &[2 * v.len()]).unwrap();
            assert_eq!(f32s.len(), 2 * v.len());
            assert!(decode(c, &enc, DType::Bool, &[raw.len()]).is_err());
        }
    }

    #[test]
    fn bad_chunks_are_errors_not_reads_past_the_buffer() {
        let raw = as_bytes(&values(4096));
        let b = blosc(&raw);
        let z = zstd::bulk::compress(&raw, 3).unwrap();
        for (c, enc) in [(Compressor::Blosc, &b), (Compressor::Zstd, &z)] {
            // The wrong number of elements: the header (Blosc) or the frame (zstd) says
            // otherwise.
            for n in [4095, 4097] {
                let e = decode(c, enc, DType::F64, &[n]).unwrap_err();
                assert!(
                    e.contains("bytes") || e.contains("too small"),
                    "{c:?} {n}: {e}"
                );
            }
            // Cut short, and garbage.
            let e = decode(c, &enc[..enc.len() / 2], DType::F64, &[4096]).unwrap_err();
            assert!(!e.is_empty());
            let junk: Vec<u8> = (0..enc.len()).map(|i| (i * 131 % 251) as u8).collect();
            assert!(decode(c, &junk, DType::F64, &[4096]).is_err(), "{c:?}");
        }
    }
}

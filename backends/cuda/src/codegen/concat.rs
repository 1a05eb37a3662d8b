//! Concatenation along any axis as one kernel.
//!
//! Blocks meeting along their leading axis are consecutive runs of the result, which the
//! device copies as they are (`Device::join`). Along an inner axis they interleave: with
//! the result seen as `pre x L x suf` (the axes before, along and after the axis), element
//! `(p, j, s)` comes from the part whose range of the axis holds `j`. This kernel writes
//! every element of the result from there in one grid-stride loop, so `moments` (which
//! stacks a block's sum and `M2` along the first reduced axis) and stacks along columns
//! stay on the device.
//!
//! The text depends only on the number of parts and the element size (the bits are moved,
//! not the values); the axis lengths and offsets are run-time values in `P`.

use std::fmt::Write;

use tessera_core::{DType, Error, Result};

use super::names::{ctype, NAME};
use super::{Arg, Entry, KernelPlan, Launch};

/// The most parts one kernel reads; more are joined in groups.
pub const MAX_PARTS: usize = 32;

/// The unsigned dtype of an element's bits (what the kernel moves).
fn bits_dtype(d: DType) -> DType {
    match d.size() {
        1 => DType::U8,
        2 => DType::U16,
        4 => DType::U32,
        _ => DType::U64,
    }
}

/// The kernel concatenating parts whose lengths along the axis are `lens` (at most
/// [`MAX_PARTS`]), every part `pre` runs of `len x suf` elements of `dtype`.
///
/// # Errors
/// [`Error::Invalid`] for no parts or more than [`MAX_PARTS`]; [`Error::Shape`] when the
/// result's size overflows.
pub fn concatenate(dtype: DType, lens: &[usize], pre: usize, suf: usize) -> Result<KernelPlan> {
    if lens.is_empty() || lens.len() > MAX_PARTS {
        return Err(Error::invalid(
            "concatenate",
            format!("{} parts for one kernel (1 to {MAX_PARTS})", lens.len()),
        ));
    }
    let total: usize = lens.iter().sum();
    let n = [pre, total, suf]
        .iter()
        .try_fold(1u64, |a, &b| a.checked_mul(b as u64))
        .ok_or_else(|| Error::shape("concatenate", "the result's size overflows".to_string()))?;
    let bits = bits_dtype(dtype);
    let t = ctype(bits);
    // P: total length along the axis, suf, n; then per part its end along the axis and
    // its own length.
    let mut params = vec![total as u64, suf as u64, n];
    let mut head = String::from("const u64* __restrict__ P");
    let mut args = vec![Arg::Params];
    let mut end = 0u64;
    for (i, &len) in lens.iter().enumerate() {
        let _ = write!(head, ", const {t}* __restrict__ in{i}");
        args.push(Arg::Input(i, bits));
        end += len as u64;
        params.push(end);
        params.push(len as u64);
    }
    let _ = write!(head, ", {t}* __restrict__ out");
    args.push(Arg::Output(bits));
    let mut pick = String::new();
    for i in 0..lens.len() {
        let (end, len) = (3 + 2 * i, 4 + 2 * i);
        let start = if i == 0 {
            "(i64)0".to_string()
        } else {
            format!("(i64)P[{}]", 3 + 2 * (i - 1))
        };
        let cond = if i + 1 == lens.len() {
            "else".to_string()
        } else if i == 0 {
            format!("if (j < (i64)P[{end}])")
        } else {
            format!("else if (j < (i64)P[{end}])")
        };
        let _ = writeln!(
            pick,
            "        {cond} v = in{i}[(p * (i64)P[{len}] + (j - {start})) * suf + s];"
        );
    }
    let body = format!(
        "extern \"C\" __global__ void {NAME}({head}) {{\n\
         \x20   const i64 L = (i64)P[0], suf = (i64)P[1], n = (i64)P[2];\n\
         \x20   for (i64 f = (i64)blockIdx.x * blockDim.x + threadIdx.x; f < n; f += (i64)gridDim.x * blockDim.x) {{\n\
         \x20       const i64 s = f % suf, r = f / suf, j = r % L, p = r / L;\n\
         \x20       {t} v;\n\
         {pick}\
         \x20       out[f] = v;\n\
         \x20   }}\n}}\n"
    );
    let (body, hash, name) = super::named(&body, "tsr_cat");
    Ok(KernelPlan {
        body,
        hash,
        entries: vec![Entry { name, args }],
        params,
        launch: Launch::Elementwise { n },
        out_dtype: dtype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_depends_on_the_parts_and_element_size_only() {
        let a = concatenate(DType::F64, &[2, 3], 4, 5).unwrap();
        let b = concatenate(DType::I64, &[7, 1], 1, 9).unwrap();
        assert_eq!(a.hash, b.hash, "same count and size: one kernel");
        assert_eq!(a.params[..3], [5, 5, 100]);
        assert_eq!(a.params[3..], [2, 2, 5, 3]);
        let c = concatenate(DType::F32, &[2, 3], 4, 5).unwrap();
        assert_ne!(a.hash, c.hash);
        assert!(concatenate(DType::F64, &[], 1, 1).is_err());
        assert!(concatenate(DType::F64, &[1; 33], 1, 1).is_err());
    }
}

//! From Philox words to values: the uniform and normal mappings, each defined once and
//! used both element by element and in the batch loops (compiled per SIMD path), so a
//! value is the same bits whichever way it was generated.

use super::unit::{unit_f32, unit_f64};
use super::ziggurat;

crate::simd_kernel! {
/// Uniform values from first words (then `+ plus`, when given), in place of the words'
/// bits. Compiled for AVX-512 and AVX2 with run-time dispatch; no FMA is formed (Rust
/// does not contract), so every version gives the same bits.
pub fn uniform_from_words(
    params: (f64, f64, bool),
    plus: Option<f64>,
    w: &[u64],
    out: &mut [f64],
) {
    let (low, high, single) = params;
    let n = w.len();
    let out = &mut out[..n];
    match plus {
        None => {
            for i in 0..n {
                out[i] = uniform_value(low, high, single, w[i]);
            }
        }
        Some(c) => {
            for i in 0..n {
                out[i] = add(uniform_value(low, high, single, w[i]), c, single);
            }
        }
    }
}
}

crate::simd_kernel! {
/// The ziggurat's first try on every word, as `mean + std * z` (then `+ plus`, when
/// given): accepted samples into `out`, and `accepted[i]` 1 where the sample is final, 0
/// where the full sampler must finish it. Branch-free, so it vectorises (the table lookups
/// become gathers); compiled for AVX-512 and AVX2 with run-time dispatch. The scale and
/// shifts happen here rather than in passes of their own over the piece.
pub fn normal_first_try(
    w: &[u64],
    params: (f64, f64, bool),
    plus: Option<f64>,
    out: &mut [f64],
    accepted: &mut [u8],
) {
    let (mean, std, single) = params;
    let t = ziggurat::tables();
    // One loop per case rather than a test per element, so each one vectorises.
    match (single, plus) {
        (true, None) => first_tries(t, w, out, accepted, |z| affine_value(mean, std, true, z)),
        (false, None) => first_tries(t, w, out, accepted, |z| affine_value(mean, std, false, z)),
        (_, Some(c)) => first_tries(t, w, out, accepted, |z| {
            add(affine_value(mean, std, single, z), c, single)
        }),
    }
}
}

/// The loop of `normal_first_try`, with the value of a standard sample given by `value`.
#[inline(always)]
fn first_tries(
    t: &ziggurat::Tables,
    w: &[u64],
    out: &mut [f64],
    accepted: &mut [u8],
    value: impl Fn(f64) -> f64,
) {
    let n = w.len();
    let (out, accepted) = (&mut out[..n], &mut accepted[..n]);
    for i in 0..n {
        let (z, ok) = ziggurat::first_try(t, w[i]);
        (out[i], accepted[i]) = (value(z), ok as u8);
    }
}

/// `mean + std * z`, in `f32` arithmetic for `f32` specs: the one definition, used
/// element by element and in the batch loop.
#[inline(always)]
pub fn affine_value(mean: f64, std: f64, single: bool, z: f64) -> f64 {
    if single {
        (mean as f32 + std as f32 * z as f32) as f64
    } else {
        mean + std * z
    }
}

/// `v + c`, in `f32` arithmetic for `f32` specs: the sum a program's `+ c` on the source
/// would compute, bit for bit.
#[inline(always)]
pub fn add(v: f64, c: f64, single: bool) -> f64 {
    if single {
        (v as f32 + c as f32) as f64
    } else {
        v + c
    }
}

/// The uniform value of a first word: the one definition, used element by element
/// (a random source's single elements) and in batches (`uniform_from_words`).
#[inline(always)]
pub fn uniform_value(low: f64, high: f64, single: bool, w: u64) -> f64 {
    if single {
        (low as f32 + (high as f32 - low as f32) * unit_f32(w as u32)) as f64
    } else {
        low + (high - low) * unit_f64(w as u32, (w >> 32) as u32)
    }
}

//! Random bits as floats in `[0, 1)`: the one conversion every mapping and the ziggurat use.

/// 53 random bits as a double in `[0, 1)`.
#[inline(always)]
pub fn unit_f64(lo: u32, hi: u32) -> f64 {
    let x = ((lo as u64) | ((hi as u64) << 32)) >> 11;
    // Through i64 (exact: x < 2^53): a signed conversion is one instruction on every
    // x86-64 level, an unsigned one is a branchy sequence below AVX-512.
    (x as i64) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// 24 random bits as a float in `[0, 1)`.
#[inline(always)]
pub fn unit_f32(w: u32) -> f32 {
    ((w >> 8) as i32) as f32 * (1.0 / (1u32 << 24) as f32)
}

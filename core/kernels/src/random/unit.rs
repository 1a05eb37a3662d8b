//! Random bits as floats in `[0, 1)`: the one conversion every mapping and the ziggurat use.

/// `2^52`, whose exponent `exact_f64` puts over a 52-bit integer (and the ziggurat's `rabs`
/// scale: it is a 52-bit integer).
pub(super) const TWO52: f64 = 4_503_599_627_370_496.0;

/// 53 random bits as a double in `[0, 1)`.
#[inline(always)]
pub fn unit_f64(lo: u32, hi: u32) -> f64 {
    let x = ((lo as u64) | ((hi as u64) << 32)) >> 11;
    exact_f64(x) * (1.0 / (1u64 << 53) as f64)
}

/// `x < 2^53` as a double, exactly: the bits of `(x as i64) as f64`, in operations every
/// SIMD level has. A vector conversion of 64-bit integers is an AVX-512 instruction; below
/// it a vectorised loop converted lane by lane through scalar registers, which held the
/// AVX2 normals to 1.6x their baseline. The low 52 bits placed under the exponent of
/// `2^52`, minus `2^52`, are exact, and so is adding bit 52 back as `2^52` (the sum is
/// below `2^53`). Where the caller's `x` is below `2^52`, the second part folds away.
#[inline(always)]
pub fn exact_f64(x: u64) -> f64 {
    const TWO52_BITS: u64 = 0x4330_0000_0000_0000;
    let low = f64::from_bits((x & ((1 << 52) - 1)) | TWO52_BITS) - TWO52;
    let high = f64::from_bits(0u64.wrapping_sub((x >> 52) & 1) & TWO52_BITS);
    low + high
}

/// 24 random bits as a float in `[0, 1)`.
#[inline(always)]
pub fn unit_f32(w: u32) -> f32 {
    ((w >> 8) as i32) as f32 * (1.0 / (1u32 << 24) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_f64_is_the_signed_conversion_below_2_pow_53() {
        let mut edges = vec![
            0u64,
            1,
            2,
            3,
            (1 << 52) - 1,
            1 << 52,
            (1 << 52) + 1,
            (1 << 53) - 1,
        ];
        // A splitmix sequence masked to 53, 52 and fewer bits.
        let mut z = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..100_000u32 {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^= x >> 31;
            edges.push(x >> (11 + i % 40));
        }
        for x in edges {
            assert_eq!(exact_f64(x).to_bits(), ((x as i64) as f64).to_bits(), "{x}");
        }
    }
}

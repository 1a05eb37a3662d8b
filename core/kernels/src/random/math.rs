//! The two transcendental functions the normal sampler needs, written out so that every
//! backend computes them identically.
//!
//! Platform `libm`s differ in the last bit (and CUDA's `log`/`cos` differ from glibc's),
//! so a normal sample computed with them is not bit-identical across backends. These are
//! fdlibm's algorithms (`__ieee754_log` and `__ieee754_exp`, error < 1 ulp), specialised to
//! the only arguments the ziggurat passes (`u` in `[2^-53, 1]` for `ln`, `x` in `[-700, 0]`
//! for `exp`), without branches. They use only `+ - * /`, `floor` and comparisons, which
//! IEEE 754 defines exactly, so a CUDA kernel that transcribes them (with FMA contraction
//! off) reproduces the CPU's bits, and so do the ziggurat tables built from them.

/// fdlibm's constants, as bit patterns so that every transcription is exact.
const LN2_HI: f64 = f64::from_bits(0x3fe62e42fee00000); // 0.6931471803691238
const LN2_LO: f64 = f64::from_bits(0x3dea39ef35793c76); // 1.9082149292705877e-10
const LG1: f64 = f64::from_bits(0x3fe5555555555593); // 0.6666666666666735
const LG2: f64 = f64::from_bits(0x3fd999999997fa04); // 0.3999999999940942
const LG3: f64 = f64::from_bits(0x3fd2492494229359); // 0.2857142874366239
const LG4: f64 = f64::from_bits(0x3fcc71c51d8e78af); // 0.22222198432149784
const LG5: f64 = f64::from_bits(0x3fc7466496cb03de); // 0.1818357216161805
const LG6: f64 = f64::from_bits(0x3fc39a09d078c69f); // 0.15313837699209373
const LG7: f64 = f64::from_bits(0x3fc2f112df3e5244); // 0.14798198605116586

const INV_LN2: f64 = f64::from_bits(0x3ff71547652b82fe); // 1.4426950408889634
const P1: f64 = f64::from_bits(0x3fc555555555553e); // 0.16666666666666602
const P2: f64 = f64::from_bits(0xbf66c16c16bebd93); // -0.0027777777777015593
const P3: f64 = f64::from_bits(0x3f11566aaf25de2c); // 6.613756321437934e-05
const P4: f64 = f64::from_bits(0xbebbbd41c5d26bf1); // -1.6533902205465252e-06
const P5: f64 = f64::from_bits(0x3e66376972bea4d0); // 4.1381367970572385e-08

/// Natural logarithm of a normal, positive `u` (the ziggurat passes `u` in `[2^-53, 1]`).
/// Not for zero, subnormals, negatives, infinities or NaN.
#[inline(always)]
pub fn ln_positive(u: f64) -> f64 {
    let bits = u.to_bits();
    let mut e = ((bits >> 52) as i64 - 1023) as f64;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    // m in [1, 2): fold into [sqrt(2)/2, sqrt(2)).
    let big = m > std::f64::consts::SQRT_2;
    m = if big { m * 0.5 } else { m };
    e += if big { 1.0 } else { 0.0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    e * LN2_HI - ((hfsq - (s * (hfsq + r) + e * LN2_LO)) - f)
}

/// `e^x` for `x` in `[-700, 0]` (the ziggurat needs `exp(-x²/2)` for `x` below about 3.7,
/// and its tables down to 3.65). fdlibm's reduction `x = k ln2 + r` with `|r| <= ln2/2`
/// and its rational approximation on `r`; the scaling by `2^k` is exact in this range.
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    // k = round(x / ln2), toward zero after the half offset (fdlibm's choice for x < 0).
    // `as i64` truncates (one instruction at every x86-64 level; `f64::trunc` is a libm
    // call below SSE4.1).
    let ki = (x * INV_LN2 - 0.5) as i64;
    let k = ki as f64;
    let hi = x - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    let t = r * r;
    let c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    // 2^k for k in [-1010, 0]: a normal double built from its exponent bits.
    y * f64::from_bits(((1023 + ki) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_agrees_with_libm_within_an_ulp() {
        let mut worst = 0;
        let mut u = 1.0f64;
        for i in 0..200_000u64 {
            // Every binade down to 2^-53, and dense sampling near 1.
            let x = if i % 2 == 0 {
                u
            } else {
                1.0 - (i as f64) * 1e-7
            };
            if x > 0.0 {
                worst = worst.max(ulps(ln_positive(x), x.ln()));
            }
            u *= 0.99982;
            if u < 1.1e-16 {
                u = 1.0 - (i as f64) * 1e-9;
            }
        }
        assert!(worst <= 1, "worst {worst} ulps");
        assert_eq!(ln_positive(1.0), 0.0);
        assert_eq!(ln_positive(2f64.powi(-53)), -53.0 * std::f64::consts::LN_2);
    }

    #[test]
    fn exp_agrees_with_libm_within_an_ulp() {
        let mut worst = 0;
        for i in 0..400_000u64 {
            // Dense on the ziggurat's range [-7, 0], sparser down to -700.
            let x = if i % 4 == 0 {
                -(i as f64) * 1.75e-3
            } else {
                -(i as f64) * 1.75e-5
            };
            worst = worst.max(ulps(exp_nonpositive(x), x.exp()));
        }
        assert!(worst <= 1, "worst {worst} ulps");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
        // Reduction boundaries (k changes at odd multiples of ln2/2).
        for k in 1..40 {
            let x = -(k as f64) * std::f64::consts::LN_2 * 0.5;
            for x in [
                x,
                f64::from_bits(x.to_bits() + 1),
                f64::from_bits(x.to_bits() - 1),
            ] {
                assert!(ulps(exp_nonpositive(x), x.exp()) <= 1, "at {x}");
            }
        }
    }
}

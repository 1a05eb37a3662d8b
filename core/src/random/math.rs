//! The two transcendental functions Box-Muller needs, written out so that every backend
//! computes them identically.
//!
//! Platform `libm`s differ in the last bit (and CUDA's `log`/`cos` differ from glibc's),
//! so a normal sample computed with them is not bit-identical across backends. These are
//! fdlibm's algorithms (`__ieee754_log` and `__kernel_cos`/`__kernel_sin`, error < 1 ulp),
//! specialised to the only arguments Box-Muller passes (`u` in `[2^-53, 1]` and `2πu` for
//! `u` in `[0, 1)`), without branches so that a batch of them vectorises. They use only
//! `+ - * /` and comparisons, which IEEE 754 defines exactly, so a CUDA kernel that
//! transcribes them (with FMA contraction off) reproduces the CPU's bits.

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

const C1: f64 = f64::from_bits(0x3fa555555555554c); // 0.0416666666666666
const C2: f64 = f64::from_bits(0xbf56c16c16c15177); // -0.001388888888887411
const C3: f64 = f64::from_bits(0x3efa01a019cb1590); // 2.480158728947673e-05
const C4: f64 = f64::from_bits(0xbe927e4f809c52ad); // -2.7557314351390663e-07
const C5: f64 = f64::from_bits(0x3e21ee9ebdb4b1c4); // 2.087572321298175e-09
const C6: f64 = f64::from_bits(0xbda8fae9be8838d4); // -1.1359647557788195e-11

const S1: f64 = f64::from_bits(0xbfc5555555555549); // -0.16666666666666632
const S2: f64 = f64::from_bits(0x3f8111111110f8a6); // 0.00833333333332249
const S3: f64 = f64::from_bits(0xbf2a01a019c161d5); // -0.0001984126982985795
const S4: f64 = f64::from_bits(0x3ec71de357b1fe7d); // 2.7557313707070068e-06
const S5: f64 = f64::from_bits(0xbe5ae5e68a2b9ceb); // -2.5050760253406863e-08
const S6: f64 = f64::from_bits(0x3de5d93a5acfd57c); // 1.58969099521155e-10

/// Natural logarithm of a normal, positive `u` (Box-Muller passes `u` in `[2^-53, 1]`).
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

/// `cos(2πu)` for `u` in `[0, 1)`: reduced exactly to a quarter turn, then fdlibm's
/// kernels on `|x| <= π/4`.
#[inline(always)]
pub fn cos_2pi(u: f64) -> f64 {
    // q = nearest quarter turn; r = u - q/4 is exact (u has 53 bits, q/4 is a short dyadic).
    let q = (u * 4.0 + 0.5).floor();
    let r = u - q * 0.25;
    let x = r * std::f64::consts::TAU;
    let z = x * x;
    let w = z * z;
    // cos(x)
    let rc = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let one_minus = 1.0 - hz;
    let c = one_minus + (((1.0 - one_minus) - hz) + z * rc);
    // sin(x)
    let rs = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
    let s = x + z * x * (S1 + z * rs);
    // cos(qπ/2 + x): q mod 4 = 0 → cos, 1 → -sin, 2 → -cos, 3 → sin. Selected with
    // float compares (q is a small integer in 0..=4), which vectorise as blends.
    let odd = q == 1.0 || q == 3.0;
    let neg = q == 1.0 || q == 2.0;
    let v = if odd { s } else { c };
    if neg {
        -v
    } else {
        v
    }
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
    fn cos_2pi_agrees_with_libm() {
        let n = 400_000u64;
        let (mut worst_ulps, mut worst_abs) = (0u64, 0f64);
        for i in 0..n {
            let u = i as f64 / n as f64 + 0.37 / n as f64;
            // Same exact reduction, then libm on the reduced argument: the kernels agree
            // within an ulp...
            let q = (u * 4.0 + 0.5).floor();
            let x = (u - q * 0.25) * std::f64::consts::TAU;
            let want = match (q as i64) & 3 {
                0 => x.cos(),
                1 => -x.sin(),
                2 => -x.cos(),
                _ => x.sin(),
            };
            let got = cos_2pi(u);
            if want.abs() > 1e-300 {
                worst_ulps = worst_ulps.max(ulps(got, want));
            }
            // ...and `cos(2π·u)` itself, whose argument libm gets already rounded (up to
            // 2π·eps/2 ≈ 7e-16 off), within that rounding.
            worst_abs = worst_abs.max((got - (std::f64::consts::TAU * u).cos()).abs());
        }
        assert!(worst_ulps <= 1, "worst {worst_ulps} ulps");
        assert!(worst_abs < 1e-15, "worst {worst_abs}");
        assert_eq!(cos_2pi(0.0), 1.0);
        assert_eq!(cos_2pi(0.5), -1.0);
        assert_eq!(cos_2pi(0.25), 0.0);
        assert_eq!(cos_2pi(0.75), 0.0);
    }
}

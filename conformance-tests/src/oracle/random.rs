//! Counter-based random values from the published Philox 4x32-10 and the protocol's
//! documented layout.
//!
//! The round function is written from Salmon et al. (SC'11) and checked against the
//! Random123 known-answer vectors; the layout (which block and which half of it an
//! element's first word is, the key from the seed) and the uniform and integer transforms
//! are written from the protocol's documentation. The normal distribution's ziggurat is
//! defined by its tables, so normal samples are compared with the reference only.

use tessera_core::random::{Distribution, RandomSpec};
use tessera_core::DType;

use super::values::V;

/// Philox 4x32 with 10 rounds: the multipliers and Weyl constants of the paper.
pub fn philox(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const MUL: [u64; 2] = [0xD251_1F53, 0xCD9E_8D57];
    const WEYL: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];
    let mut x = ctr;
    let mut k = key;
    for _ in 0..10 {
        let p0 = MUL[0] * u64::from(x[0]);
        let p1 = MUL[1] * u64::from(x[2]);
        x = [
            (p1 >> 32) as u32 ^ x[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ x[3] ^ k[1],
            p0 as u32,
        ];
        k = [k[0].wrapping_add(WEYL[0]), k[1].wrapping_add(WEYL[1])];
    }
    x
}

/// Element `index`'s first 64-bit word: elements `4j, 4j+2` share block `2j` and
/// `4j+1, 4j+3` share block `2j+1`; the element takes the block's low word when
/// `(index / 2)` is even, its high word otherwise.
pub fn word(seed: u64, stream: u64, index: u64) -> u64 {
    let block = 2 * (index / 4) + index % 2;
    let r = philox(
        [
            block as u32,
            (block >> 32) as u32,
            stream as u32,
            (stream >> 32) as u32,
        ],
        [seed as u32, (seed >> 32) as u32],
    );
    let (lo, hi) = if (index / 2).is_multiple_of(2) {
        (r[0], r[1])
    } else {
        (r[2], r[3])
    };
    u64::from(lo) | (u64::from(hi) << 32)
}

/// Element `index` of `spec`, or `None` for the normal distribution (see the module docs).
pub fn sample(spec: &RandomSpec, index: u64) -> Option<V> {
    let w = word(spec.seed, spec.stream, index);
    Some(match spec.dist {
        Distribution::Uniform { low, high } if spec.dtype == DType::F32 => {
            // 24 bits (8..32 of the low half) as a float32 in [0, 1), in float32 arithmetic.
            let u = ((w as u32) >> 8) as f32 / 16_777_216.0;
            let (lo, hi) = (low as f32, high as f32);
            V::F(f64::from(lo + (hi - lo) * u))
        }
        Distribution::Uniform { low, high } => {
            let u = (w >> 11) as f64 / 9_007_199_254_740_992.0;
            V::F(low + (high - low) * u)
        }
        Distribution::RandInt { low, high } => {
            let range = (i128::from(high) - i128::from(low)) as u128;
            V::I(i128::from(low) + ((u128::from(w) * range) >> 64) as i128)
        }
        Distribution::Normal { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers_of_random123() {
        assert_eq!(
            philox([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn the_layout_pairs_elements_two_apart() {
        let w = |i| word(7, 3, i);
        let halves = |b: u64| {
            let r = philox([b as u32, 0, 3, 0], [7, 0]);
            (
                u64::from(r[0]) | (u64::from(r[1]) << 32),
                u64::from(r[2]) | (u64::from(r[3]) << 32),
            )
        };
        assert_eq!((w(0), w(2)), halves(0));
        assert_eq!((w(1), w(3)), halves(1));
        assert_eq!((w(4), w(6)), halves(2));
    }
}

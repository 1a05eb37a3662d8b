//! Philox 4x32-10 (Salmon et al., SC'11), the layout of elements on its blocks, and the
//! batched kernels that fill words for many elements at once.
//!
//! **Layout.** A Philox block gives two 64-bit words. Elements come in aligned groups of
//! four, `4g .. 4g+3`, on the blocks `2g` and `2g+1`: element `i` takes word
//! [`half_of`]`(i) = (i >> 1) & 1` of block [`block_of`]`(i) = 2(i >> 2) + (i & 1)`, so an
//! element shares its block with the element two places on (`0,2 | 1,3 | 4,6 | 5,7 ...`).
//! Why this pairing rather than plain neighbours: a contiguous run *and* a run with step 2
//! both use both words of every block they touch. The headline keeps `[::2, ::2]` of a
//! random array, and with neighbour pairs half of every block it computed was thrown away.
//! Any other step costs one block per kept element, as before.
//!
//! **Kernels.** One Philox block is a chain of ten dependent 32x32->64 multiplies; one
//! block at a time, or eight in one vector register, leaves the multiplier waiting on
//! latency. The kernels here run several blocks side by side (`LANES_*`, per path) in structure-of-arrays form,
//! each 32-bit word held in a 64-bit lane whose upper half may carry junk (the vector
//! multiply reads only the low halves), so a round is one multiply, one shift and one
//! three-way xor per word pair and lane. They are compiled for AVX-512, AVX2 and the
//! baseline with run-time dispatch, and give the same bits as the scalar
//! [`philox4x32_10`] (tests check every path against it).

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Blocks computed side by side by the batched kernels, per path: enough independent
/// multiplies to cover their latency, few enough that the four words of state stay in
/// registers. On AVX-512, 32 blocks are 16 of the 32 zmm registers.
const LANES_AVX512: usize = 32;
/// Blocks side by side on the AVX2 path: 16 blocks are all 16 ymm registers of state;
/// at 32 the spills made the path barely faster than the baseline (BENCHMARKS.md).
const LANES_AVX2: usize = 16;
/// Blocks side by side on the baseline path (as fast at 16 as at 32, within noise).
const LANES_BASELINE: usize = 32;

/// Philox 4x32 with 10 rounds.
#[inline(always)]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = ctr;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let p0 = (M0 as u64) * (c0 as u64);
        let p1 = (M1 as u64) * (c2 as u64);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    [c0, c1, c2, c3]
}

/// The Philox block that holds element `index`'s first word: `2 (index >> 2) + (index & 1)`.
#[inline(always)]
pub fn block_of(index: u64) -> u64 {
    ((index >> 1) & !1) | (index & 1)
}

/// Which 64-bit word (0 or 1) of its block element `index` takes: `(index >> 1) & 1`.
#[inline(always)]
pub fn half_of(index: u64) -> u64 {
    (index >> 1) & 1
}

/// One element's first 64-bit word: word [`half_of`]`(index)` of the Philox block with
/// counter `[block_of(index) (lo, hi), stream (lo, hi)]` and key `key`.
#[inline(always)]
pub fn first_word(key: [u32; 2], stream: u64, index: u64) -> u64 {
    let r = block(key, stream, block_of(index));
    if half_of(index) == 0 {
        r[0] as u64 | ((r[1] as u64) << 32)
    } else {
        r[2] as u64 | ((r[3] as u64) << 32)
    }
}

/// Philox block number `b` of `stream`.
#[inline(always)]
fn block(key: [u32; 2], stream: u64, b: u64) -> [u32; 4] {
    philox4x32_10(
        [
            b as u32,
            (b >> 32) as u32,
            stream as u32,
            (stream >> 32) as u32,
        ],
        key,
    )
}

/// `LANES` Philox blocks `b[l]` of `stream` at once; returns each block's word 0 and
/// word 1. The state lives in 64-bit lanes and only their low halves are meaningful
/// until the end: `(x & MASK) * M` is the vector unsigned 32x32->64 multiply, and the
/// junk a product leaves in a lane's upper half is xored in but never read.
#[inline(always)]
fn blocks<const LANES: usize>(
    key: [u32; 2],
    stream: u64,
    b: &[u64; LANES],
) -> ([u64; LANES], [u64; LANES]) {
    const MASK: u64 = 0xffff_ffff;
    let mut c0 = *b;
    let mut c1 = [0u64; LANES];
    for l in 0..LANES {
        c1[l] = b[l] >> 32;
    }
    let mut c2 = [stream & MASK; LANES];
    let mut c3 = [stream >> 32; LANES];
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        for l in 0..LANES {
            let p0 = (c0[l] & MASK) * M0 as u64;
            let p1 = (c2[l] & MASK) * M1 as u64;
            c0[l] = (p1 >> 32) ^ c1[l] ^ k0 as u64;
            c1[l] = p1;
            c2[l] = (p0 >> 32) ^ c3[l] ^ k1 as u64;
            c3[l] = p0;
        }
    }
    let mut w0 = [0u64; LANES];
    let mut w1 = [0u64; LANES];
    for l in 0..LANES {
        w0[l] = (c0[l] & MASK) | (c1[l] << 32);
        w1[l] = (c2[l] & MASK) | (c3[l] << 32);
    }
    (w0, w1)
}

/// First words of elements `index(0), index(1), ...` into `w`, `LANES` elements per
/// kernel call, one block per element.
#[inline(always)]
fn each_element<const LANES: usize>(
    key: [u32; 2],
    stream: u64,
    index: impl Fn(usize) -> u64,
    w: &mut [u64],
) {
    for (c, out) in w.chunks_mut(LANES).enumerate() {
        let mut b = [0u64; LANES];
        for (l, bl) in b.iter_mut().enumerate() {
            *bl = block_of(index(c * LANES + l));
        }
        let (w0, w1) = blocks::<LANES>(key, stream, &b);
        for (l, o) in out.iter_mut().enumerate() {
            let second = half_of(index(c * LANES + l)).wrapping_neg();
            *o = (w0[l] & !second) | (w1[l] & second);
        }
    }
}

crate::simd_kernel! {
const LANES: usize = [LANES_AVX512, LANES_AVX2, LANES_BASELINE];
/// First words of arbitrary elements `idx` into `w` (`w.len() == idx.len()`).
pub fn words_at(key: [u32; 2], stream: u64, idx: &[i64], w: &mut [u64]) {
    let n = idx.len().min(w.len());
    let idx = &idx[..n];
    // Lanes past the end read index 0: computed, never stored.
    each_element::<LANES>(
        key,
        stream,
        |p| idx.get(p).map_or(0, |&k| k as u64),
        &mut w[..n],
    );
}}

crate::simd_kernel! {
const LANES: usize = [LANES_AVX512, LANES_AVX2, LANES_BASELINE];
/// First words of the run `start, start + step, ...` (`w.len()` elements) into `w`. Runs
/// with step 1 or 2 compute each block once for the two elements that share it.
pub fn words_along(key: [u32; 2], stream: u64, start: i64, step: i64, w: &mut [u64]) {
    match step {
        1 => contiguous::<LANES>(key, stream, start as u64, w),
        2 => step_two::<LANES>(key, stream, start as u64, w),
        _ => each_element::<LANES>(
            key,
            stream,
            |j| start.wrapping_add((j as i64).wrapping_mul(step)) as u64,
            w,
        ),
    }
}}

/// Whether the run `start, start + step, ...` can be generated together with the run two
/// elements on (`start + 2, start + 2 + step, ...`) by [`words_along_pair`]: every element
/// of the first takes word 0 of a block whose word 1 is the matching element of the
/// second. True when `start` is at word 0 and `step` is a positive multiple of 4 — rows
/// `2i, 2i + 1` of `x.T[::2, ::2]` (both of them columns of `x`) are such a pair.
pub fn pairs_with_next_but_one(start: i64, step: i64) -> bool {
    start >= 0 && step > 0 && step % 4 == 0 && half_of(start as u64) == 0
}

crate::simd_kernel! {
const LANES: usize = [LANES_AVX512, LANES_AVX2, LANES_BASELINE];
/// First words of two runs at once: `wa` gets the run `start, start + step, ...` and `wb`
/// the run two elements on, both `wa.len()` long, each block computed once for the two
/// elements that share it. Requires [`pairs_with_next_but_one`]`(start, step)`; the blocks
/// of such a run step by `step / 2`.
pub fn words_along_pair(
    key: [u32; 2],
    stream: u64,
    start: i64,
    step: i64,
    wa: &mut [u64],
    wb: &mut [u64],
) {
    debug_assert!(pairs_with_next_but_one(start, step));
    let n = wa.len().min(wb.len());
    let (first, stride) = (block_of(start as u64), step as u64 / 2);
    for (c, (a, b)) in wa[..n]
        .chunks_mut(LANES)
        .zip(wb[..n].chunks_mut(LANES))
        .enumerate()
    {
        let (w0, w1) =
            blocks_from::<LANES>(key, stream, first + stride * (c * LANES) as u64, stride);
        a.copy_from_slice(&w0[..a.len()]);
        b.copy_from_slice(&w1[..b.len()]);
    }
}}

/// [`words_along`] with step 1: whole groups of four elements take blocks `2g, 2g+1` in
/// order, so a kernel call covers `2 LANES` elements; the unaligned ends go one by one.
#[inline(always)]
fn contiguous<const LANES: usize>(key: [u32; 2], stream: u64, start: u64, w: &mut [u64]) {
    let n = w.len();
    let lead = (((4 - (start & 3)) & 3) as usize).min(n);
    let groups = (n - lead) / 4;
    let (head, rest) = w.split_at_mut(lead);
    let (body, tail) = rest.split_at_mut(4 * groups);
    for (j, o) in head.iter_mut().enumerate() {
        *o = first_word(key, stream, start + j as u64);
    }
    let b0 = block_of(start + lead as u64);
    let mut chunks = body.chunks_exact_mut(2 * LANES);
    let mut next = b0;
    for out in &mut chunks {
        groups_of_four::<LANES>(key, stream, next, out);
        next += LANES as u64;
    }
    let last = chunks.into_remainder();
    if !last.is_empty() {
        groups_of_four::<LANES>(key, stream, next, last);
    }
    let tail_start = start + (lead + 4 * groups) as u64;
    for (j, o) in tail.iter_mut().enumerate() {
        *o = first_word(key, stream, tail_start + j as u64);
    }
}

/// [`words_along`] with step 2: consecutive kept elements `k, k+2` with `k` at word 0
/// share block `block_of(k)`, and those blocks step by 2; a kernel call covers `2 LANES`
/// elements. A first element at word 1 and an unpaired last one go alone.
#[inline(always)]
fn step_two<const LANES: usize>(key: [u32; 2], stream: u64, start: u64, w: &mut [u64]) {
    let n = w.len();
    let lead = (half_of(start) as usize).min(n);
    let pairs = (n - lead) / 2;
    let (head, rest) = w.split_at_mut(lead);
    let (body, tail) = rest.split_at_mut(2 * pairs);
    if let Some(o) = head.first_mut() {
        *o = first_word(key, stream, start);
    }
    let b0 = block_of(start + 2 * lead as u64);
    let mut chunks = body.chunks_exact_mut(2 * LANES);
    let mut next = b0;
    for out in &mut chunks {
        pairs_two_apart::<LANES>(key, stream, next, out);
        next += 2 * LANES as u64;
    }
    let last = chunks.into_remainder();
    if !last.is_empty() {
        pairs_two_apart::<LANES>(key, stream, next, last);
    }
    if let Some(o) = tail.first_mut() {
        *o = first_word(key, stream, start + 2 * (n as u64 - 1));
    }
}

/// [`blocks`] `first, first + stride, ...`: the block numbers of a run.
#[inline(always)]
fn blocks_from<const LANES: usize>(
    key: [u32; 2],
    stream: u64,
    first: u64,
    stride: u64,
) -> ([u64; LANES], [u64; LANES]) {
    let mut b = [0u64; LANES];
    for (l, bl) in b.iter_mut().enumerate() {
        *bl = first + stride * l as u64;
    }
    blocks::<LANES>(key, stream, &b)
}

/// Elements of whole groups of four from blocks `next, next + 1, ...` into `out` (a
/// multiple of 4 long, at most `2 LANES`): group `m`'s elements `4m, 4m+1` are word 0 of
/// blocks `2m, 2m+1`, and `4m+2, 4m+3` their word 1. A function, not a closure, so that
/// it inlines into each compiled version of its caller.
#[inline(always)]
fn groups_of_four<const LANES: usize>(key: [u32; 2], stream: u64, next: u64, out: &mut [u64]) {
    let (w0, w1) = blocks_from::<LANES>(key, stream, next, 1);
    for (m, four) in out.chunks_exact_mut(4).enumerate() {
        four[0] = w0[2 * m];
        four[1] = w0[2 * m + 1];
        four[2] = w1[2 * m];
        four[3] = w1[2 * m + 1];
    }
}

/// Pairs of kept elements of a step-2 run from blocks `next, next + 2, ...` into `out`
/// (even, at most `2 LANES` long): pair `l` is both words of its block.
#[inline(always)]
fn pairs_two_apart<const LANES: usize>(key: [u32; 2], stream: u64, next: u64, out: &mut [u64]) {
    let (w0, w1) = blocks_from::<LANES>(key, stream, next, 2);
    for (l, two) in out.chunks_exact_mut(2).enumerate() {
        two[0] = w0[l];
        two[1] = w1[l];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors from Random123's `kat_vectors` (philox4x32 10).
    #[test]
    fn philox_matches_random123_kat() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn elements_two_apart_share_a_block() {
        let (key, stream) = ([5, 6], 0x1_0000_0007u64);
        // Elements 40..43 are group 10, on blocks 20 and 21.
        let b20 = philox4x32_10([20, 0, 7, 1], key);
        let b21 = philox4x32_10([21, 0, 7, 1], key);
        let word = |r: [u32; 4], h: usize| r[2 * h] as u64 | ((r[2 * h + 1] as u64) << 32);
        assert_eq!(first_word(key, stream, 40), word(b20, 0));
        assert_eq!(first_word(key, stream, 41), word(b21, 0));
        assert_eq!(first_word(key, stream, 42), word(b20, 1));
        assert_eq!(first_word(key, stream, 43), word(b21, 1));
        // Every block is used exactly twice, by one word-0 and one word-1 element.
        let mut uses = std::collections::HashMap::new();
        for i in 0..4096u64 {
            *uses.entry((block_of(i), half_of(i))).or_insert(0) += 1;
        }
        assert_eq!(uses.len(), 4096);
        assert!((0..2048).all(|b| uses.contains_key(&(b, 0)) && uses.contains_key(&(b, 1))));
        // Huge indices keep their high bits in the counter: 2^40 + 6 is word 1 of block
        // 2^39 + 2.
        let big = (1u64 << 40) + 6;
        let r = philox4x32_10([2, 1 << 7, 7, 1], key);
        assert_eq!(first_word(key, stream, big), word(r, 1));
    }

    /// On every SIMD path this CPU runs: each path has its own number of lanes, so each
    /// has its own remainders.
    #[test]
    fn batched_kernels_match_the_scalar_definition() {
        crate::simd::on_every_path("philox::batched_kernels", || {
            let (key, stream) = ([0xdead_beef, 0x1234_5678], 0xabcd_0000_0042u64);
            // Every start modulo 4, lengths around the kernel's width and its multiples.
            for step in [1i64, 2, 3, -1, -2, 4, 1 << 20] {
                for start in 1000i64..1008 {
                    for n in (0..=9).chain([63, 64, 65, 127, 128, 129, 200]) {
                        let mut got = vec![0u64; n];
                        words_along(key, stream, start, step, &mut got);
                        for (j, &g) in got.iter().enumerate() {
                            let k = (start + j as i64 * step) as u64;
                            assert_eq!(
                                g,
                                first_word(key, stream, k),
                                "step {step} start {start} n {n} j {j}"
                            );
                        }
                    }
                }
            }
            // Two runs two apart, generated together: every start at word 0, steps 4k.
            for step in [4i64, 8, 40_000, 1 << 21] {
                for start in [0i64, 1, 4, 5, 1 << 33] {
                    assert!(pairs_with_next_but_one(start, step));
                    for n in [0usize, 1, 31, 32, 33, 100] {
                        let (mut a, mut b) = (vec![0u64; n], vec![0u64; n]);
                        words_along_pair(key, stream, start, step, &mut a, &mut b);
                        for j in 0..n {
                            let k = (start + j as i64 * step) as u64;
                            assert_eq!(a[j], first_word(key, stream, k), "{start} {step} {j}");
                            assert_eq!(b[j], first_word(key, stream, k + 2), "{start} {step} {j}");
                        }
                    }
                }
            }
            for (start, step) in [(2i64, 4i64), (3, 4), (0, 2), (0, 6), (0, -4), (-4, 4)] {
                assert!(!pairs_with_next_but_one(start, step), "{start} {step}");
            }
            let idx: Vec<i64> = (0..77)
                .map(|i| (i * 7919) % 1000 + ((i % 3) << 40))
                .collect();
            let mut got = vec![0u64; idx.len()];
            words_at(key, stream, &idx, &mut got);
            for (&g, &k) in got.iter().zip(&idx) {
                assert_eq!(g, first_word(key, stream, k as u64));
            }
        });
    }
}

//! An open-addressed table that numbers fixed-width keys (integers, float bits, packed
//! strings) in order of first appearance: the codes a groupby's key column becomes.
//!
//! Numbering a column of many distinct keys is a look-up per row in a table past the
//! second-level cache (100k distinct short strings: 4 MB in `std`'s map), and each look-up
//! waits on memory. `std`'s map hides where a key's slot is until it is looked up, so the
//! wait cannot start early. Here a key's slot is `hash & mask` in one flat array of
//! key-code pairs (linear probing, at most two thirds full), so [`CodeTable::number`]
//! hashes a block of keys, asks the CPU to fetch their slots, and only then compares: the
//! fetches overlap instead of following one another.
//!
//! A table grown by doubling from empty rehashes each of its keys about twice; a table
//! told how many rows it will number ([`CodeTable::for_rows`]) makes room once for the
//! distinct keys its first rows predict ([`distinct_estimate`]).
//!
//! The hash is a folded multiply (as `ahash`'s fallback) seeded per table from the
//! operating system's randomness, so keys cannot be chosen to collide.

/// A key the table holds as it is: compared with `==`, hashed by [`CodeKey::mix`].
pub(crate) trait CodeKey: Copy + Eq {
    /// The key a free slot holds (any value: a free slot is known by its code).
    const ZERO: Self;
    /// The key's 64-bit hash under `seed` (two random words).
    fn mix(self, seed: [u64; 2]) -> u64;
}

/// The 128-bit product of `a` and `b` folded into 64 bits: every bit of both reaches
/// the middle of the product, and the fold brings the middle down.
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// An odd multiplier with its bits spread (the golden ratio's, as `ahash` and `FxHash`).
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

impl CodeKey for u64 {
    const ZERO: u64 = 0;
    fn mix(self, seed: [u64; 2]) -> u64 {
        fold(self ^ seed[0], seed[1] | 1)
    }
}

impl CodeKey for i64 {
    const ZERO: i64 = 0;
    fn mix(self, seed: [u64; 2]) -> u64 {
        (self as u64).mix(seed)
    }
}

impl CodeKey for u32 {
    const ZERO: u32 = 0;
    fn mix(self, seed: [u64; 2]) -> u64 {
        u64::from(self).mix(seed)
    }
}

impl CodeKey for u128 {
    const ZERO: u128 = 0;
    fn mix(self, seed: [u64; 2]) -> u64 {
        let low = fold(self as u64 ^ seed[0], SPREAD);
        fold(low ^ (self >> 64) as u64, seed[1] | 1)
    }
}

impl CodeKey for i128 {
    const ZERO: i128 = 0;
    fn mix(self, seed: [u64; 2]) -> u64 {
        (self as u128).mix(seed)
    }
}

/// The code of a free slot; never given (codes count keys, which fit a `u32` below it:
/// a partition has fewer than 2^32 rows).
const FREE: u32 = u32::MAX;

/// How many keys [`CodeTable::number`] hashes in one go: the keys a caller gathers for it.
pub(crate) const BLOCK: usize = 256;

/// How many keys ahead of the one looked up [`CodeTable::number`] has its slot fetched:
/// enough fetches in flight to cover a memory access (a block of 16 fetched just before
/// its first look-up left that look-up waiting on two fifths of the table's time).
const AHEAD: usize = 16;

/// The size up to which a table is taken to stay in the second-level cache while it is
/// probed (half of a 2 MiB L2), and is probed without prefetching.
const CACHED_BYTES: usize = 1 << 20;

/// One slot: a key and its code ([`FREE`] when the slot is free).
#[derive(Clone, Copy)]
struct Slot<K> {
    key: K,
    code: u32,
}

/// An open-addressed, linearly probed table from keys to their codes (`0..len` in order
/// of first appearance) that is never more than two thirds full.
pub(crate) struct CodeTable<K: CodeKey> {
    slots: Vec<Slot<K>>,
    /// `slots.len() - 1`; the length is a power of two.
    mask: usize,
    /// The keys held, which is the next code.
    len: usize,
    seed: [u64; 2],
    /// The rows the caller will number in all ([`CodeTable::for_rows`]).
    rows: usize,
    /// The rows numbered so far.
    numbered: usize,
    /// After how many numbered rows to make room for the distinct keys they predict;
    /// `None` once done, or for a table sized by its caller.
    estimate_at: Option<usize>,
}

/// The number of slots for `keys` keys: a power of two at least 1.5 times as many.
fn slots_for(keys: usize) -> usize {
    keys.saturating_add(keys / 2)
        .max(16)
        .checked_next_power_of_two()
        .unwrap_or(1 << (usize::BITS - 1))
}

impl<K: CodeKey> CodeTable<K> {
    /// An empty table with room for `keys` keys before it grows.
    pub(crate) fn with_capacity(keys: usize) -> CodeTable<K> {
        let state = ahash::RandomState::new();
        let seed = [state.hash_one(0x5eed_u64), state.hash_one(0xface_u64)];
        let n = slots_for(keys);
        CodeTable {
            slots: vec![free(); n],
            mask: n - 1,
            len: 0,
            seed,
            rows: 0,
            numbered: 0,
            estimate_at: None,
        }
    }

    /// An empty table that will number `rows` rows: once a quarter of them (at most
    /// [`ESTIMATE_ROWS`]) are numbered, it makes room for the distinct keys they predict
    /// ([`distinct_estimate`]) instead of doubling its way there (the rehashes were an
    /// eighth of a groupby on 100k distinct strings).
    pub(crate) fn for_rows(rows: usize) -> CodeTable<K> {
        CodeTable {
            rows,
            estimate_at: Some((rows / 4).clamp(1, ESTIMATE_ROWS)),
            ..CodeTable::with_capacity(0)
        }
    }

    /// The number of keys held (the next key's code).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `keys` keys in all without growing again.
    fn reserve(&mut self, keys: usize) {
        let n = slots_for(keys);
        if n > self.slots.len() {
            self.rehash(n);
        }
    }

    /// The index of `key`'s slot, or of the free slot where it would go, starting the
    /// search at `hash`'s.
    #[inline(always)]
    fn find(&self, key: K, hash: u64) -> usize {
        let mut i = hash as usize & self.mask;
        loop {
            let slot = &self.slots[i];
            if slot.code == FREE || slot.key == key {
                return i;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// `key`'s code, a new key getting the next one; `new` is told of each new key.
    #[inline(always)]
    fn code_hashed(&mut self, key: K, hash: u64, new: &mut impl FnMut()) -> u32 {
        let i = self.find(key, hash);
        let slot = &mut self.slots[i];
        if slot.code == FREE {
            *slot = Slot {
                key,
                code: self.len as u32,
            };
            self.len += 1;
            new();
        }
        slot.code
    }

    /// Appends the code of each of `keys` to `codes`, a key not held getting the next
    /// code, and calls `new(j)` for each `j` whose key was new. Past the second-level
    /// cache, the slot of the key [`AHEAD`] places on is fetched before each look-up.
    pub(crate) fn number(&mut self, keys: &[K], codes: &mut Vec<u32>, mut new: impl FnMut(usize)) {
        let mut hashes = [0u64; BLOCK];
        for (b, block) in keys.chunks(BLOCK).enumerate() {
            while (self.len + block.len()) * 3 > self.slots.len() * 2 {
                self.rehash(self.slots.len() * 2);
            }
            let hashes = &mut hashes[..block.len()];
            for (h, &key) in hashes.iter_mut().zip(block) {
                *h = key.mix(self.seed);
            }
            let fetch = self.slots.len() * std::mem::size_of::<Slot<K>>() > CACHED_BYTES;
            if fetch {
                for &h in hashes.iter().take(AHEAD) {
                    prefetch(&self.slots[h as usize & self.mask]);
                }
            }
            for (j, (&h, &key)) in hashes.iter().zip(block).enumerate() {
                if let (true, Some(&ahead)) = (fetch, hashes.get(j + AHEAD)) {
                    prefetch(&self.slots[ahead as usize & self.mask]);
                }
                let code = self.code_hashed(key, h, &mut || new(b * BLOCK + j));
                codes.push(code);
            }
            self.numbered += block.len();
            if self.estimate_at.is_some_and(|at| self.numbered >= at) {
                self.estimate_at = None;
                self.reserve(distinct_estimate(self.len, self.numbered, self.rows));
            }
        }
    }

    /// Moves every key into `n` slots (a power of two).
    fn rehash(&mut self, n: usize) {
        let old = std::mem::replace(&mut self.slots, vec![free(); n]);
        self.mask = n - 1;
        for s in old.into_iter().filter(|s| s.code != FREE) {
            let i = self.find(s.key, s.key.mix(self.seed));
            self.slots[i] = s;
        }
    }
}

/// A free slot.
fn free<K: CodeKey>() -> Slot<K> {
    Slot {
        key: K::ZERO,
        code: FREE,
    }
}

/// Rows whose distinct keys predict a column's (see [`distinct_estimate`]); the table
/// holding them stays in the second-level cache while it grows.
const ESTIMATE_ROWS: usize = 1 << 14;

/// The distinct keys `rows` rows are expected to hold when their first `sample` rows
/// held `seen`, the keys drawn uniformly from a fixed set: that set's size `n` solves
/// `n (1 - e^(-sample/n)) = seen`, and `rows` draws from it find `n (1 - e^(-rows/n))`.
/// The repeats in a sample of `s` rows number about `s² / 2n`, so 16Ki rows tell a set
/// of 100k keys (about 1,300 repeats) from one of 625k (about 200) well. A sample
/// without repeats says no more than "at least as many as rows": the answer is then
/// `rows`. Skewed keys make this an underestimate, which costs only growing later.
fn distinct_estimate(seen: usize, sample: usize, rows: usize) -> usize {
    // Never below what was seen, whatever the caller counts as rows.
    let rows = rows.max(seen);
    if seen >= sample {
        return rows;
    }
    let f = seen as f64 / sample as f64;
    // (1 - e^-x) / x falls from 1 at x = 0 towards 0: bisect for where it is f, x being
    // sample / n (at most `sample`: the set holds at least one key).
    let (mut lo, mut hi) = (1e-9f64, sample as f64);
    for _ in 0..60 {
        let x = 0.5 * (lo + hi);
        if -(-x).exp_m1() / x > f {
            lo = x;
        } else {
            hi = x;
        }
    }
    let n = sample as f64 / lo;
    let expected = -n * (-(rows as f64) / n).exp_m1();
    (expected.round() as usize).clamp(seen, rows)
}

/// Asks the CPU to bring `value`'s cache line closer: a hint, with no effect on what any
/// load returns (a no-op off x86-64).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has; a prefetch never
    // faults and changes no memory, and the address is that of a live reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Codes in order of first appearance and each key's first index, as a `std` map
    /// gives them.
    fn reference<K: std::hash::Hash + Eq + Copy>(keys: &[K]) -> (Vec<u32>, Vec<usize>) {
        let mut seen = HashMap::new();
        let mut firsts = Vec::new();
        let codes = keys
            .iter()
            .enumerate()
            .map(|(j, k)| {
                let next = seen.len() as u32;
                *seen.entry(*k).or_insert_with(|| {
                    firsts.push(j);
                    next
                })
            })
            .collect();
        (codes, firsts)
    }

    fn numbered<K: CodeKey>(t: &mut CodeTable<K>, keys: &[K]) -> (Vec<u32>, Vec<usize>) {
        let mut codes = Vec::new();
        let mut firsts = Vec::new();
        t.number(keys, &mut codes, |j| firsts.push(j));
        (codes, firsts)
    }

    #[test]
    fn codes_are_a_std_maps_through_growth_and_past_the_cache() {
        // Keys that collide on purpose (multiples of a large power of two, a run of
        // neighbours), each coming twice; a table sized for 4 grows many times, and at
        // 200k keys it is past `CACHED_BYTES`, so blocks are prefetched.
        for n in [3000u64, 200_000] {
            let mut keys: Vec<u64> = (0..n).map(|i| i << 40).collect();
            keys.extend(1..n);
            keys.extend([u64::MAX, u64::MAX - 1, 0x8000_0000_0000_0000]);
            let all: Vec<u64> = keys.iter().chain(keys.iter().rev()).copied().collect();
            let mut t = CodeTable::<u64>::with_capacity(4);
            // In two calls, the second starting mid-block.
            let (mut codes, firsts) = numbered(&mut t, &all[..1000]);
            let mut later = Vec::new();
            t.number(&all[1000..], &mut codes, |j| later.push(j + 1000));
            let (want, want_firsts) = reference(&all);
            assert_eq!(codes, want, "{n}");
            assert_eq!([firsts, later].concat(), want_firsts);
            assert_eq!(t.len(), keys.len());
            assert!(
                t.slots.len() * 2 >= t.len() * 3,
                "more than two thirds full"
            );
            assert_eq!(
                n == 200_000,
                t.slots.len() * size_of::<Slot<u64>>() > CACHED_BYTES
            );
        }
    }

    #[test]
    fn packed_strings_that_differ_in_one_byte_or_the_length_are_apart() {
        let mut keys = Vec::new();
        for len in 0..16u128 {
            for byte in 0..40u128 {
                keys.push((len << 120) | (byte << (8 * (len % 15))));
            }
        }
        let mut t = CodeTable::<u128>::with_capacity(0);
        let (codes, _) = numbered(&mut t, &keys);
        assert_eq!(codes, (0..keys.len() as u32).collect::<Vec<_>>());
        // A reserve keeps every code.
        t.reserve(100_000);
        let (again, firsts) = numbered(&mut t, &keys);
        assert_eq!((again, firsts.len()), (codes, 0));
    }

    /// A table told its rows makes room, after its trial, for the keys they will hold:
    /// 625k rows from 100k keys never grow again, and give a `std` map's codes.
    #[test]
    fn a_table_told_its_rows_sizes_itself_once_from_its_first_rows() {
        let keys: Vec<u64> = (0..625_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 100_000)
            .collect();
        let mut t = CodeTable::<u64>::for_rows(keys.len());
        let mut codes = Vec::new();
        t.number(&keys[..ESTIMATE_ROWS], &mut codes, |_| {});
        let sized = t.slots.len();
        assert!(sized >= slots_for(90_000), "{sized} slots after the trial");
        t.number(&keys[ESTIMATE_ROWS..], &mut codes, |_| {});
        assert_eq!(t.slots.len(), sized, "grew after the trial");
        assert_eq!(codes, reference(&keys).0);
    }

    #[test]
    fn hashes_of_neighbouring_keys_spread_over_the_slots() {
        // 4096 consecutive keys into 8192 slots: a good hash leaves few long runs.
        let seed = [0x1234_5678, 0x9abc_def0];
        for keys in [
            (0..4096u64).map(|k| k.mix(seed)).collect::<Vec<_>>(),
            (0..4096i64).map(|k| (k * 2).mix(seed)).collect(),
            (0..4096u128).map(|k| (k << 64).mix(seed)).collect(),
            (0..4096u128).map(|k| k.mix(seed)).collect(),
        ] {
            let mut used = vec![false; 8192];
            for h in keys {
                used[h as usize & 8191] = true;
            }
            // Random placement fills 8192 (1 - e^-0.5) = 3223 slots; a multiplicative
            // hash may spread a run of keys better still.
            let filled = used.iter().filter(|&&u| u).count();
            assert!(filled > 3000, "only {filled} slots used");
        }
    }

    #[test]
    fn distinct_estimates_recover_the_set_drawn_from() {
        // 625k rows from 100k keys: a 64Ki-row sample holds about 48k of them.
        let n = 100_000f64;
        let seen = (n * -(-65_536f64 / n).exp_m1()) as usize;
        let est = distinct_estimate(seen, 65_536, 625_000);
        let want = n * -(-625_000f64 / n).exp_m1();
        assert!(
            (est as f64 - want).abs() < 0.01 * want,
            "{est} against {want}"
        );
        // From 16Ki rows: 100k keys hold about 15.1k of them, 625k about 16.2k.
        for n in [100_000f64, 625_000.0] {
            let seen = (n * -(-16_384f64 / n).exp_m1()).round() as usize;
            let est = distinct_estimate(seen, 16_384, 625_000) as f64;
            let want = n * -(-625_000f64 / n).exp_m1();
            assert!((est - want).abs() < 0.05 * want, "{est} against {want}");
        }
        // All distinct: as many as rows. Few: about what was seen.
        assert_eq!(distinct_estimate(16_384, 16_384, 625_000), 625_000);
        assert_eq!(distinct_estimate(20, 65_536, 625_000), 20);
        assert_eq!(distinct_estimate(0, 0, 10), 10);
        // Fewer rows than were seen (a caller's miscount): what was seen, no panic.
        assert_eq!(distinct_estimate(10, 20, 5), 10);
        assert_eq!(distinct_estimate(20, 20, 5), 20);
    }
}

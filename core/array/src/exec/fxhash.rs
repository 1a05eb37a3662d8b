//! A small, fast, non-cryptographic hasher for the lowering's memo tables.
//!
//! Lowering looks up every block of every node once; with std's SipHash that hashing was a
//! visible part of the per-task overhead. Keys are our own integers (node ids, block
//! coordinates), so HashDoS resistance buys nothing here. This is the multiply-rotate
//! scheme of rustc's FxHasher.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hasher state.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_stay_distinct() {
        let mut m: FxHashMap<(u64, Vec<usize>), usize> = FxHashMap::default();
        for id in 0..50u64 {
            for b in 0..50usize {
                m.insert((id, vec![b, b * 7]), id as usize * 100 + b);
            }
        }
        assert_eq!(m.len(), 2500);
        assert_eq!(m[&(7, vec![3, 21])], 703);
    }
}

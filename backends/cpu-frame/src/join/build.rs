//! The build (right) side's hash table, [`BuildTable`]: the first row of each key and a
//! chain to the next row with the same key, by the fastest layout the keys allow.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use tessera_core::frame::{JoinSpec, JoinType};
use tessera_core::{Error, Result};

use super::pairs::{keys, MISSING};
use crate::keys::groups::{encode_rows, int_key, key_nulls, valid_range};
use crate::keys::packed::Packing;
use crate::keys::strings::{PassHash, StrValues};

/// A key span a [`BuildTable::Int`] always keeps a presence bit per value for (1 MiB of
/// bits, which stay in cache). Past it, it keeps them while they take at most 8 bytes per
/// row of the table (a span of 64 values per row), a fraction of the hash map's size: the
/// bits then come from the last-level cache, still one access where the hash look-up of a
/// missing key takes two. TPC-H Q3 at scale 10 probes 1.5 million orders, whose keys span
/// 60 million values (7.5 MB of bits), with 32 million line items, nine in ten of which
/// miss: 1.57 s hashing every probe, 1.14 s with the bits.
pub(super) const PRESENT_SPAN: u64 = 1 << 23;

/// Presence bits per row of a [`BuildTable::Int`] past [`PRESENT_SPAN`].
pub(super) const PRESENT_PER_ROW: u64 = 64;

/// Set in a table entry when the row has a successor in its chain: unique keys (the
/// common case) never touch `next`, which saves a cache miss per match.
pub(super) const HAS_NEXT: u32 = 1 << 31;

/// The row bits of a table entry.
pub(super) const ROW: u32 = HAS_NEXT - 1;

/// The hash table of a join's build (right) side: the first row of each key and a chain
/// to the next row with the same key (or, for encoded keys, the same hash). Entries are
/// rows with the [`HAS_NEXT`] flag; build sides are limited to 2^31 rows.
pub(crate) enum BuildTable {
    /// One integer-like key whose values span a range not much larger than the rows (the
    /// surrogate keys of most schemas, TPC-H's included): the head of each chain is found
    /// by indexing an array with `key - lo`, no hashing.
    Dense {
        lo: i64,
        head: Vec<u32>,
        next: Vec<u32>,
    },
    /// One integer-like key over a dense range, for a semi or anti join: only whether a
    /// key is present matters, so a bit per value of the range answers it (a range of six
    /// million order keys is 750 KB, which stays in cache, where the chain heads would
    /// take 24 MB and a cache miss per row to build).
    DenseSet { lo: i64, bits: Vec<u64> },
    /// One integer-like key. When the keys span at most [`PRESENT_SPAN`] values (or
    /// [`PRESENT_PER_ROW`] per row), `present` has a bit per value of the span, set for
    /// the keys in the table: a probe key whose
    /// bit is clear misses without a hash look-up. A small filtered dimension probed by a
    /// fact table misses on almost every row (TPC-H Q17: 204 parts of 200,000, probed by
    /// six million line items; the bits are 25 KB and stay in cache).
    Int {
        head: HashMap<i64, u32, ahash::RandomState>,
        next: Vec<u32>,
        present: Option<(i64, Vec<u64>)>,
    },
    /// Several integer keys packed into one `i64` ([`Packing`]), and the table of the
    /// packed key (one of the integer tables above).
    Packed {
        packing: Packing,
        table: Box<BuildTable>,
    },
    /// One string key whose strings all have at most 15 bytes (codes, names,
    /// identifiers): chains by the strings [`packed`](crate::keys::strings::packed) into
    /// 128-bit integers, compared as integers (a longer probe string misses at once).
    /// Comparing the bytes called `memcmp` for every match.
    ShortStrings {
        head: HashMap<u128, u32, ahash::RandomState>,
        next: Vec<u32>,
    },
    /// One string key: chains by the hash of the strings' bytes (kept in the key column
    /// as it came, any string layout), checked for equality against the column.
    Strings {
        keys: ArrayRef,
        head: HashMap<u64, u32, PassHash>,
        next: Vec<u32>,
        state: ahash::RandomState,
    },
    /// Any keys, encoded with `arrow-row`; chains are by hash and checked for equality.
    Rows {
        rows: arrow_row::Rows,
        head: HashMap<u64, u32, ahash::RandomState>,
        next: Vec<u32>,
        state: ahash::RandomState,
    },
}

impl std::fmt::Debug for BuildTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BuildTable::Dense { .. } => "BuildTable::Dense",
            BuildTable::DenseSet { .. } => "BuildTable::DenseSet",
            BuildTable::Int { .. } => "BuildTable::Int",
            BuildTable::Packed { .. } => "BuildTable::Packed",
            BuildTable::ShortStrings { .. } => "BuildTable::ShortStrings",
            BuildTable::Strings { .. } => "BuildTable::Strings",
            BuildTable::Rows { .. } => "BuildTable::Rows",
        })
    }
}

impl BuildTable {
    /// Bytes the table holds beyond its batch: chain heads and links, presence bits, hash
    /// map buckets (16 bytes of entry and a control byte each, at capacity) and encoded
    /// keys. The engine charges them to its spill budget with the batch.
    pub(crate) fn bytes(&self) -> usize {
        fn map<K, V, S>(m: &HashMap<K, V, S>) -> usize {
            m.capacity() * (std::mem::size_of::<(K, V)>() + 1)
        }
        let words = |v: &Vec<u32>| v.capacity() * 4;
        match self {
            BuildTable::Dense { head, next, .. } => words(head) + words(next),
            BuildTable::DenseSet { bits, .. } => bits.capacity() * 8,
            BuildTable::Int {
                head,
                next,
                present,
            } => map(head) + words(next) + present.as_ref().map_or(0, |(_, b)| b.capacity() * 8),
            BuildTable::Packed { table, .. } => table.bytes(),
            BuildTable::ShortStrings { head, next } => map(head) + words(next),
            BuildTable::Strings { head, next, .. } => map(head) + words(next),
            BuildTable::Rows {
                rows, head, next, ..
            } => rows.size() + map(head) + words(next),
        }
    }

    /// Builds the table over `rk` (rows with a null key are left out: they never match).
    /// With `keys_only` (a semi or anti join) a dense integer key becomes a
    /// [`BuildTable::DenseSet`].
    pub(crate) fn build(rk: &[ArrayRef], rn: usize, keys_only: bool) -> Result<BuildTable> {
        if rn > ROW as usize {
            return Err(Error::invalid(
                "merge",
                format!("the build side of a hash join has {rn} rows; at most {ROW} fit one partition, repartition it"),
            ));
        }
        let rnull = key_nulls(rk);
        let rvalid = |i: usize| rnull.as_ref().is_none_or(|n| n.is_valid(i));
        if let Some(r) = int_key(rk)? {
            let rv = r.as_primitive::<Int64Type>().values();
            let range = valid_range(rv, rnull.as_ref());
            // A direct table of at most eight entries per row (and at least 64 Ki
            // entries): 32 bytes of chain heads per row at most, about what the hash
            // map takes (16-byte buckets at a load of 7/8 or less, rounded up to a power
            // of two), and a look-up is one index, not a hash and a probe. TPC-H's order
            // keys use a quarter of their range (15 million of 60 million at scale 10).
            // A key set may span 64 times that (a bit per value: at most 64 bytes per
            // row).
            let limit = (8 * rn).max(1 << 16) as u64;
            // A bit per value of the range `lo..=lo + span`, set for the valid keys.
            let bits_of = |lo: i64, span: u64| {
                let mut bits = vec![0u64; (span as usize) / 64 + 1];
                for (j, &key) in rv.iter().enumerate() {
                    if rvalid(j) {
                        let d = (key - lo) as usize;
                        bits[d / 64] |= 1 << (d % 64);
                    }
                }
                bits
            };
            if let Some((lo, span)) = range.filter(|&(_, s)| keys_only && s < 64 * limit) {
                return Ok(BuildTable::DenseSet {
                    lo,
                    bits: bits_of(lo, span),
                });
            }
            let mut next = vec![MISSING; rn];
            if let Some((lo, span)) = range.filter(|&(_, s)| s < limit) {
                let mut head = vec![MISSING; span as usize + 1];
                for j in (0..rn).rev() {
                    if rvalid(j) {
                        let slot = &mut head[(rv[j] - lo) as usize];
                        if *slot != MISSING {
                            next[j] = *slot;
                            *slot = j as u32 | HAS_NEXT;
                        } else {
                            *slot = j as u32;
                        }
                    }
                }
                return Ok(BuildTable::Dense { lo, head, next });
            }
            let mut head = HashMap::with_capacity_and_hasher(rn, ahash::RandomState::new());
            // Inserting in reverse makes every chain run in right-row order.
            for j in (0..rn).rev() {
                if rvalid(j) {
                    chain(&mut head, rv[j], j, &mut next);
                }
            }
            let present = range
                .filter(|&(_, s)| s < PRESENT_SPAN.max(PRESENT_PER_ROW * rn as u64))
                .map(|(lo, span)| (lo, bits_of(lo, span)));
            return Ok(BuildTable::Int {
                head,
                next,
                present,
            });
        }
        if let Some(packing) = Packing::of(rk)? {
            let table = BuildTable::build(&[packing.pack(rk)?], rn, keys_only)?;
            return Ok(BuildTable::Packed {
                packing,
                table: Box::new(table),
            });
        }
        let mut next = vec![MISSING; rn];
        if let Some((keys, values)) = match rk {
            [k] => StrValues::of(k).map(|v| (k, v)),
            _ => None,
        } {
            let short: Option<Vec<u128>> = (0..rn)
                .map(|j| if rvalid(j) { values.packed(j) } else { Some(0) })
                .collect();
            if let Some(short) = short {
                let mut head = HashMap::with_capacity_and_hasher(rn, ahash::RandomState::new());
                for j in (0..rn).rev() {
                    if rvalid(j) {
                        chain(&mut head, short[j], j, &mut next);
                    }
                }
                return Ok(BuildTable::ShortStrings { head, next });
            }
            let state = ahash::RandomState::new();
            let mut head = HashMap::with_capacity_and_hasher(rn, PassHash::default());
            for j in (0..rn).rev() {
                if rvalid(j) {
                    chain(&mut head, values.hash(&state, j), j, &mut next);
                }
            }
            return Ok(BuildTable::Strings {
                keys: keys.clone(),
                head,
                next,
                state,
            });
        }
        let rows = encode_rows(rk)?;
        let state = ahash::RandomState::new();
        let mut head = HashMap::with_capacity_and_hasher(rn, ahash::RandomState::new());
        for j in (0..rn).rev() {
            if rvalid(j) {
                chain(&mut head, state.hash_one(rows.row(j).data()), j, &mut next);
            }
        }
        Ok(BuildTable::Rows {
            rows,
            head,
            next,
            state,
        })
    }
}

/// Puts row `j` at the head of `key`'s chain.
pub(super) fn chain<K: std::hash::Hash + Eq, S: std::hash::BuildHasher>(
    head: &mut HashMap<K, u32, S>,
    key: K,
    j: usize,
    next: &mut [u32],
) {
    match head.entry(key) {
        std::collections::hash_map::Entry::Occupied(mut e) => {
            next[j] = *e.get();
            e.insert(j as u32 | HAS_NEXT);
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(j as u32);
        }
    }
}

/// The build table of `right` for `spec`.
pub(crate) fn build(right: &RecordBatch, spec: &JoinSpec) -> Result<BuildTable> {
    let keys_only = matches!(spec.how, JoinType::Semi | JoinType::Anti);
    BuildTable::build(&keys(right, &spec.right_on)?, right.num_rows(), keys_only)
}

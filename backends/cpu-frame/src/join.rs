//! Joining two batches: a hash join (build on the right, probe with the left) and a
//! sorted merge join, both producing pairs of row indices; the output is assembled by
//! `take` on both sides, with shared keys coalesced for right and outer joins. Semi and
//! anti joins only ask of each left row whether the right side's table holds its key.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use tessera_core::frame::{JoinAlgorithm, JoinSpec, JoinType};
use tessera_core::{Error, Result};

use crate::keys::groups::{encode_rows, int_key, key_nulls, valid_range};
use crate::keys::packed::Packing;
use crate::keys::strings::{probe_strings, PassHash, StrValues};

fn keys(batch: &RecordBatch, names: &[String]) -> Result<Vec<ArrayRef>> {
    names
        .iter()
        .map(|n| {
            batch
                .column_by_name(n)
                .cloned()
                .ok_or_else(|| Error::invalid("merge", format!("no key column '{n}'")))
        })
        .collect()
}

/// Marks the missing side of an outer row in [`Pairs`].
const MISSING: u32 = u32::MAX;

/// Matching `(left, right)` row pairs; [`MISSING`] marks the absent side of an outer row.
struct Pairs {
    left: Vec<u32>,
    right: Vec<u32>,
}

impl Pairs {
    fn with_capacity(n: usize) -> Pairs {
        Pairs {
            left: Vec::with_capacity(n),
            right: Vec::with_capacity(n),
        }
    }
    fn push(&mut self, l: Option<u32>, r: Option<u32>) {
        self.left.push(l.unwrap_or(MISSING));
        self.right.push(r.unwrap_or(MISSING));
    }
}

/// Row indices as a `take` argument, null where [`MISSING`] (zero-copy when none is).
fn indices(v: Vec<u32>) -> UInt32Array {
    if v.contains(&MISSING) {
        v.into_iter().map(|i| (i != MISSING).then_some(i)).collect()
    } else {
        UInt32Array::from(v)
    }
}

/// A key span a [`BuildTable::Int`] always keeps a presence bit per value for (1 MiB of
/// bits, which stay in cache). Past it, it keeps them while they take at most 8 bytes per
/// row of the table (a span of 64 values per row), a fraction of the hash map's size: the
/// bits then come from the last-level cache, still one access where the hash look-up of a
/// missing key takes two. TPC-H Q3 at scale 10 probes 1.5 million orders, whose keys span
/// 60 million values (7.5 MB of bits), with 32 million line items, nine in ten of which
/// miss: 1.57 s hashing every probe, 1.14 s with the bits.
const PRESENT_SPAN: u64 = 1 << 23;

/// Presence bits per row of a [`BuildTable::Int`] past [`PRESENT_SPAN`].
const PRESENT_PER_ROW: u64 = 64;

/// Set in a table entry when the row has a successor in its chain: unique keys (the
/// common case) never touch `next`, which saves a cache miss per match.
const HAS_NEXT: u32 = 1 << 31;
/// The row bits of a table entry.
const ROW: u32 = HAS_NEXT - 1;

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
fn chain<K: std::hash::Hash + Eq, S: std::hash::BuildHasher>(
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

/// The chain head of `key` in a dense table starting at `lo`, if the key is there.
fn dense_head(lo: i64, head: &[u32], key: i64) -> Option<u32> {
    key.checked_sub(lo)
        .and_then(|d| usize::try_from(d).ok())
        .and_then(|d| head.get(d))
        .copied()
        .filter(|&v| v != MISSING)
}

/// Whether `key` is in a [`BuildTable::DenseSet`] starting at `lo`.
fn dense_bit(lo: i64, bits: &[u64], key: i64) -> bool {
    key.checked_sub(lo)
        .and_then(|d| usize::try_from(d).ok())
        .and_then(|d| bits.get(d / 64).map(|w| w >> (d % 64) & 1 == 1))
        .unwrap_or(false)
}

/// The right rows whose encoded keys equal `row`, in chain order: the rows of `row`'s
/// hash chain, checked for equality (hashes collide).
fn encoded_matches<'a>(
    rows: &'a arrow_row::Rows,
    head: &HashMap<u64, u32, ahash::RandomState>,
    next: &'a [u32],
    state: &ahash::RandomState,
    row: arrow_row::Row<'a>,
) -> impl Iterator<Item = u32> + 'a {
    let mut r = head.get(&state.hash_one(row.data())).copied();
    std::iter::from_fn(move || {
        while let Some(v) = r {
            let j = v & ROW;
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
            if rows.row(j as usize) == row {
                return Some(j);
            }
        }
        None
    })
}

/// The right rows whose string key equals `key`, in chain order: the rows of its hash
/// chain, checked for equality (hashes collide).
fn string_matches<'a>(
    right: &'a StrValues<'a>,
    head: &HashMap<u64, u32, PassHash>,
    next: &'a [u32],
    state: &ahash::RandomState,
    left: &'a StrValues<'a>,
    i: usize,
) -> impl Iterator<Item = u32> + 'a {
    let mut r = head.get(&left.hash(state, i)).copied();
    std::iter::from_fn(move || {
        while let Some(v) = r {
            let j = v & ROW;
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
            if left.eq(i, right, j as usize) {
                return Some(j);
            }
        }
        None
    })
}

/// Every match of each valid left row (`matches(i)`, in chain order) as a pair, or the
/// row alone for a left/outer join; marks the matched right rows when `matched` is kept
/// (right and outer joins).
fn probe_each<I: Iterator<Item = u32>>(
    ln: usize,
    lvalid: &dyn Fn(usize) -> bool,
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
    matches: impl Fn(usize) -> I,
) {
    let keep_right = !matched.is_empty();
    for i in 0..ln {
        let mut hit = false;
        if lvalid(i) {
            for j in matches(i) {
                pairs.left.push(i as u32);
                pairs.right.push(j);
                if keep_right {
                    matched[j as usize] = true;
                }
                hit = true;
            }
        }
        if !hit && keep_left {
            pairs.push(Some(i as u32), None);
        }
    }
}

/// The probe side's single string key, for a [`BuildTable::Strings`].
fn probe_key(lk: &[ArrayRef]) -> Result<ArrayRef> {
    probe_strings(lk).ok_or_else(|| {
        Error::invalid(
            "merge",
            "the right key is a string column and the left one is not: cast one side so both keys are strings",
        )
    })
}

/// Probes an integer-keyed table (`lookup` gives a key's chain head): every match of
/// each valid left row in chain order, or the row alone for a left/outer join; marks the
/// matched right rows when `matched` is kept (right and outer joins).
fn probe_ints(
    lk: &[ArrayRef],
    lookup: impl Fn(i64) -> Option<u32>,
    next: &[u32],
    lvalid: &dyn Fn(usize) -> bool,
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
) -> Result<()> {
    let l = int_key(lk)?.ok_or_else(|| {
        Error::Internal("join: integer build table for non-integer probe keys".into())
    })?;
    let values = l.as_primitive::<Int64Type>().values();
    let heads = (0..values.len()).map(|i| if lvalid(i) { lookup(values[i]) } else { None });
    probe_heads(heads, next, keep_left, matched, pairs);
    Ok(())
}

/// Walks the chain of each left row's head (`None`: no match, or a null key), in left
/// order: every match as a pair, or the row alone for a left/outer join; marks the
/// matched right rows when `matched` is kept (right and outer joins).
fn probe_heads(
    heads: impl Iterator<Item = Option<u32>>,
    next: &[u32],
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
) {
    let keep_right = !matched.is_empty();
    for (i, mut r) in heads.enumerate() {
        let hit = r.is_some();
        while let Some(v) = r {
            let j = v & ROW;
            pairs.left.push(i as u32);
            pairs.right.push(j);
            if keep_right {
                matched[j as usize] = true;
            }
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
        }
        if !hit && keep_left {
            pairs.push(Some(i as u32), None);
        }
    }
}

/// A string key column read as bytes (the probe side's, or the table's).
fn string_values(keys: &ArrayRef) -> Result<StrValues<'_>> {
    StrValues::of(keys).ok_or_else(|| Error::Internal("join: string keys that read as none".into()))
}

/// Row `i`'s chain head in a [`BuildTable::ShortStrings`]: `None` for a string too long to
/// be in the table, or one that is not.
fn short_head(
    head: &HashMap<u128, u32, ahash::RandomState>,
    left: &StrValues<'_>,
    i: usize,
) -> Option<u32> {
    head.get(&left.packed(i)?).copied()
}

/// Hash join pairs, in left order (then unmatched right rows).
fn hash_pairs(
    lk: &[ArrayRef],
    table: &BuildTable,
    ln: usize,
    rn: usize,
    how: JoinType,
) -> Result<Pairs> {
    let lnull = key_nulls(lk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let keep_left = matches!(how, JoinType::Left | JoinType::Outer);
    let keep_right = matches!(how, JoinType::Right | JoinType::Outer);
    let mut matched = if keep_right {
        vec![false; rn]
    } else {
        Vec::new()
    };
    if let BuildTable::Packed { packing, table } = table {
        return hash_pairs(&[packing.pack(lk)?], table, ln, rn, how);
    }
    let mut pairs = Pairs::with_capacity(ln);
    match table {
        BuildTable::DenseSet { .. } => {
            return Err(Error::Internal(
                "join: a semi/anti join's key set cannot give row pairs".into(),
            ))
        }
        BuildTable::Dense { lo, head, next } => {
            let lookup = |key: i64| dense_head(*lo, head, key);
            probe_ints(
                lk,
                lookup,
                next,
                &lvalid,
                keep_left,
                &mut matched,
                &mut pairs,
            )?;
        }
        BuildTable::Packed { .. } => {
            return Err(Error::Internal(
                "join: packed keys reached the probe of unpacked ones".into(),
            ))
        }
        BuildTable::Int {
            head,
            next,
            present,
        } => {
            let lookup = |key: i64| {
                if present
                    .as_ref()
                    .is_some_and(|(lo, bits)| !dense_bit(*lo, bits, key))
                {
                    return None;
                }
                head.get(&key).copied()
            };
            probe_ints(
                lk,
                lookup,
                next,
                &lvalid,
                keep_left,
                &mut matched,
                &mut pairs,
            )?;
        }
        BuildTable::ShortStrings { head, next } => {
            let probe = probe_key(lk)?;
            let left = string_values(&probe)?;
            let heads = (0..ln).map(|i| lvalid(i).then(|| short_head(head, &left, i)).flatten());
            probe_heads(heads, next, keep_left, &mut matched, &mut pairs);
        }
        BuildTable::Strings {
            keys,
            head,
            next,
            state,
        } => {
            let probe = probe_key(lk)?;
            let (left, right) = (string_values(&probe)?, string_values(keys)?);
            let each = |i: usize| string_matches(&right, head, next, state, &left, i);
            probe_each(ln, &lvalid, keep_left, &mut matched, &mut pairs, each);
        }
        BuildTable::Rows {
            rows,
            head,
            next,
            state,
        } => {
            let lr = encode_rows(lk)?;
            let each = |i: usize| encoded_matches(rows, head, next, state, lr.row(i));
            probe_each(ln, &lvalid, keep_left, &mut matched, &mut pairs, each);
        }
    }
    if keep_right {
        for (j, m) in matched.iter().enumerate() {
            if !m {
                pairs.push(None, Some(j as u32));
            }
        }
    }
    Ok(pairs)
}

/// Whether each left row's key occurs in `table` (a null key never does).
fn has_match(lk: &[ArrayRef], table: &BuildTable, ln: usize) -> Result<Vec<bool>> {
    if let BuildTable::Packed { packing, table } = table {
        return has_match(&[packing.pack(lk)?], table, ln);
    }
    let lnull = key_nulls(lk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let ints = || -> Result<ArrayRef> {
        int_key(lk)?.ok_or_else(|| {
            Error::Internal("join: integer build table for non-integer probe keys".into())
        })
    };
    Ok(match table {
        BuildTable::Dense { lo, head, .. } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, &key)| lvalid(i) && dense_head(*lo, head, key).is_some())
                .collect()
        }
        BuildTable::DenseSet { lo, bits } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, &key)| lvalid(i) && dense_bit(*lo, bits, key))
                .collect()
        }
        BuildTable::Int { head, present, .. } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    lvalid(i)
                        && present
                            .as_ref()
                            .is_none_or(|(lo, bits)| dense_bit(*lo, bits, *key))
                        && head.contains_key(key)
                })
                .collect()
        }
        BuildTable::Packed { .. } => {
            return Err(Error::Internal(
                "join: packed keys reached the probe of unpacked ones".into(),
            ))
        }
        BuildTable::ShortStrings { head, .. } => {
            let probe = probe_key(lk)?;
            let left = string_values(&probe)?;
            (0..ln)
                .map(|i| lvalid(i) && short_head(head, &left, i).is_some())
                .collect()
        }
        BuildTable::Strings {
            keys,
            head,
            next,
            state,
        } => {
            let probe = probe_key(lk)?;
            let (left, right) = (string_values(&probe)?, string_values(keys)?);
            (0..ln)
                .map(|i| {
                    lvalid(i)
                        && string_matches(&right, head, next, state, &left, i)
                            .next()
                            .is_some()
                })
                .collect()
        }
        BuildTable::Rows {
            rows,
            head,
            next,
            state,
        } => {
            let lr = encode_rows(lk)?;
            (0..ln)
                .map(|i| {
                    lvalid(i)
                        && encoded_matches(rows, head, next, state, lr.row(i))
                            .next()
                            .is_some()
                })
                .collect()
        }
    })
}

/// Merge join pairs of two key-sorted inputs (ascending, nulls last).
fn merge_pairs(
    lk: &[ArrayRef],
    rk: &[ArrayRef],
    ln: usize,
    rn: usize,
    how: JoinType,
) -> Result<Pairs> {
    let lr = encode_rows(lk)?;
    let rr = encode_rows(rk)?;
    let lnull = key_nulls(lk);
    let rnull = key_nulls(rk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let rvalid = |i: usize| rnull.as_ref().is_none_or(|n| n.is_valid(i));
    let keep_left = matches!(how, JoinType::Left | JoinType::Outer);
    let keep_right = matches!(how, JoinType::Right | JoinType::Outer);
    let mut pairs = Pairs::with_capacity(ln);
    let (mut i, mut j) = (0usize, 0usize);
    while i < ln || j < rn {
        let li = i < ln && lvalid(i);
        let rj = j < rn && rvalid(j);
        if !li && i < ln {
            if keep_left {
                pairs.push(Some(i as u32), None);
            }
            i += 1;
            continue;
        }
        if !rj && j < rn {
            if keep_right {
                pairs.push(None, Some(j as u32));
            }
            j += 1;
            continue;
        }
        if i >= ln {
            if keep_right {
                pairs.push(None, Some(j as u32));
            }
            j += 1;
            continue;
        }
        if j >= rn {
            if keep_left {
                pairs.push(Some(i as u32), None);
            }
            i += 1;
            continue;
        }
        match lr.row(i).cmp(&rr.row(j)) {
            std::cmp::Ordering::Less => {
                if keep_left {
                    pairs.push(Some(i as u32), None);
                }
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                if keep_right {
                    pairs.push(None, Some(j as u32));
                }
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                // Runs of equal keys on both sides: their cross product.
                let key = lr.row(i);
                let i_end = (i..ln).find(|&x| lr.row(x) != key).unwrap_or(ln);
                let j_end = (j..rn).find(|&y| rr.row(y) != rr.row(j)).unwrap_or(rn);
                for a in i..i_end {
                    for b in j..j_end {
                        pairs.push(Some(a as u32), Some(b as u32));
                    }
                }
                i = i_end;
                j = j_end;
            }
        }
    }
    Ok(pairs)
}

/// The build table of `right` for `spec`.
pub(crate) fn build(right: &RecordBatch, spec: &JoinSpec) -> Result<BuildTable> {
    let keys_only = matches!(spec.how, JoinType::Semi | JoinType::Anti);
    BuildTable::build(&keys(right, &spec.right_on)?, right.num_rows(), keys_only)
}

/// Joins two batches; `schema` is [`JoinSpec::output_schema`] of the inputs. `table` is a
/// prepared build table of `right` (a broadcast join), or `None` to build one here.
pub(crate) fn join(
    left: &RecordBatch,
    right: &RecordBatch,
    table: Option<&BuildTable>,
    spec: &JoinSpec,
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let lk = keys(left, &spec.left_on)?;
    if matches!(spec.how, JoinType::Semi | JoinType::Anti) {
        // Whatever the algorithm asked for, a probe of the right side's table: one look-up
        // per left row answers "has a match" without producing the pairs.
        let own;
        let table = match table {
            Some(t) => t,
            None => {
                own = build(right, spec)?;
                &own
            }
        };
        let hits = has_match(&lk, table, left.num_rows())?;
        let keep = spec.how == JoinType::Semi;
        let rows: UInt32Array = (0..left.num_rows() as u32)
            .filter(|&i| hits[i as usize] == keep)
            .collect();
        let columns = left
            .columns()
            .iter()
            .map(|c| {
                arrow_select::take::take(c, &rows, None)
                    .map(|t| super::views::compact(&t))
                    .map_err(|e| Error::arrow("merge", e))
            })
            .collect::<Result<Vec<_>>>()?;
        return RecordBatch::try_new_with_options(
            schema,
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
        )
        .map_err(|e| Error::arrow("merge", e));
    }
    let pairs = match spec.algorithm {
        JoinAlgorithm::Hash => {
            let own;
            let table = match table {
                Some(t) => t,
                None => {
                    own = build(right, spec)?;
                    &own
                }
            };
            hash_pairs(&lk, table, left.num_rows(), right.num_rows(), spec.how)?
        }
        JoinAlgorithm::SortedMerge => {
            let rk = keys(right, &spec.right_on)?;
            merge_pairs(&lk, &rk, left.num_rows(), right.num_rows(), spec.how)?
        }
    };
    let li = indices(pairs.left);
    let ri = indices(pairs.right);
    let shared = spec.shared_keys();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let lschema = left.schema();
    for (c, f) in left.columns().iter().zip(lschema.fields()) {
        let taken = arrow_select::take::take(c, &li, None).map_err(|e| Error::arrow("merge", e))?;
        let coalesce =
            shared.contains(&f.name()) && matches!(spec.how, JoinType::Right | JoinType::Outer);
        if coalesce {
            let rc = right
                .column_by_name(f.name())
                .ok_or_else(|| Error::Internal("shared key missing".into()))?;
            let rt =
                arrow_select::take::take(rc, &ri, None).map_err(|e| Error::arrow("merge", e))?;
            let mask =
                arrow_arith::boolean::is_not_null(&li).map_err(|e| Error::arrow("merge", e))?;
            columns.push(
                arrow_select::zip::zip(&mask, &taken, &rt).map_err(|e| Error::arrow("merge", e))?,
            );
        } else {
            columns.push(taken);
        }
    }
    let rschema = right.schema();
    for (c, f) in right.columns().iter().zip(rschema.fields()) {
        if shared.contains(&f.name()) {
            continue;
        }
        columns.push(arrow_select::take::take(c, &ri, None).map_err(|e| Error::arrow("merge", e))?);
    }
    let columns = columns
        .iter()
        .map(super::views::compact)
        .collect::<Vec<_>>();
    let rows = li.len();
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| Error::arrow("merge", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use std::sync::Arc;

    /// The (left, right) pairs of `left ⋈ right` on one integer key, and which table
    /// the build chose.
    fn pairs(
        left: Vec<Option<i64>>,
        right: Vec<Option<i64>>,
        how: JoinType,
    ) -> (Vec<(u32, u32)>, &'static str) {
        let (ln, rn) = (left.len(), right.len());
        let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(left))];
        let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(right))];
        let table = BuildTable::build(&rk, rn, false).unwrap();
        let kind = match table {
            BuildTable::Dense { .. } => "dense",
            BuildTable::DenseSet { .. } => "set",
            BuildTable::Int { .. } => "hash",
            BuildTable::Packed { .. } => "packed",
            BuildTable::ShortStrings { .. } => "short strings",
            BuildTable::Strings { .. } => "strings",
            BuildTable::Rows { .. } => "rows",
        };
        let p = hash_pairs(&lk, &table, ln, rn, how).unwrap();
        (p.left.into_iter().zip(p.right).collect(), kind)
    }

    #[test]
    fn semi_and_anti_keep_left_rows_once_whatever_the_algorithm() {
        let left = RecordBatch::try_from_iter([(
            "k",
            Arc::new(Int64Array::from(vec![
                Some(5),
                Some(9),
                None,
                Some(-2),
                Some(5),
                Some(i64::MIN),
            ])) as ArrayRef,
        )])
        .unwrap();
        // Right keys repeat (5 three times): a semi join still keeps each left row once.
        let right = RecordBatch::try_from_iter([(
            "r",
            Arc::new(Int64Array::from(vec![
                Some(5),
                Some(5),
                None,
                Some(-2),
                Some(5),
            ])) as ArrayRef,
        )])
        .unwrap();
        for algorithm in [JoinAlgorithm::Hash, JoinAlgorithm::SortedMerge] {
            for (how, want) in [
                (JoinType::Semi, vec![Some(5), Some(-2), Some(5)]),
                (JoinType::Anti, vec![Some(9), None, Some(i64::MIN)]),
            ] {
                let spec = JoinSpec {
                    left_on: vec!["k".into()],
                    right_on: vec!["r".into()],
                    how,
                    suffixes: ("_x".into(), "_y".into()),
                    algorithm,
                };
                let schema = spec.output_schema(&left.schema(), &right.schema()).unwrap();
                let out = join(&left, &right, None, &spec, schema).unwrap();
                assert_eq!(out.num_columns(), 1, "left columns only");
                let got: Vec<Option<i64>> =
                    out.column(0).as_primitive::<Int64Type>().iter().collect();
                assert_eq!(got, want, "{how:?} {algorithm:?}");
            }
        }
    }

    #[test]
    fn a_semi_joins_key_set_answers_as_the_hash_table_does() {
        let left: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(5),
            Some(9),
            None,
            Some(-2),
            Some(64),
            Some(i64::MIN),
            Some(i64::MAX),
            Some(63),
        ]));
        let dense = vec![Some(5), Some(63), None, Some(-2), Some(5), Some(64)];
        let mut sparse = dense.clone();
        sparse.push(Some(1 << 40));
        let want = vec![true, false, false, true, true, false, false, true];
        for (right, kind) in [(dense, "set"), (sparse, "hash")] {
            let rn = right.len();
            let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(right))];
            let table = BuildTable::build(&rk, rn, true).unwrap();
            let got = match table {
                BuildTable::DenseSet { .. } => "set",
                BuildTable::Int { .. } => "hash",
                _ => "other",
            };
            assert_eq!(got, kind);
            let hits = has_match(std::slice::from_ref(&left), &table, left.len()).unwrap();
            assert_eq!(hits, want, "{kind}");
            // Only semi and anti joins take the key set; pairs refuse it.
            if kind == "set" {
                assert!(
                    hash_pairs(std::slice::from_ref(&left), &table, 8, rn, JoinType::Inner)
                        .is_err()
                );
            }
        }
    }

    #[test]
    fn dense_and_hashed_tables_give_the_same_pairs() {
        const M: u32 = MISSING;
        let left = vec![Some(5), Some(9), None, Some(-2), Some(3), Some(i64::MIN)];
        let dense = vec![Some(5), Some(3), Some(5), None, Some(-2)];
        // The same keys with one far away: a hash table.
        let mut sparse = dense.clone();
        sparse.push(Some(1 << 40));
        let (d, kind) = pairs(left.clone(), dense.clone(), JoinType::Outer);
        assert_eq!(kind, "dense");
        // Matches in left order, duplicates in right order, then unmatched right rows.
        assert_eq!(
            d,
            [
                (0, 0),
                (0, 2),
                (1, M),
                (2, M),
                (3, 4),
                (4, 1),
                (5, M),
                (M, 3)
            ]
        );
        let (h, kind) = pairs(left.clone(), sparse, JoinType::Outer);
        assert_eq!(kind, "hash");
        assert_eq!(h[..7], d[..7]);
        assert_eq!(h[7..], [(M, 3), (M, 5)]);
        // A key 200,000 away: too wide for a dense table, narrow enough for presence bits,
        // which must let every key in the table through and only those.
        let mut mid = dense.clone();
        mid.push(Some(200_000));
        let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(mid.clone()))];
        let table = BuildTable::build(&rk, mid.len(), false).unwrap();
        assert!(
            matches!(
                &table,
                BuildTable::Int {
                    present: Some(_),
                    ..
                }
            ),
            "{table:?}"
        );
        let (m, kind) = pairs(left.clone(), mid, JoinType::Outer);
        assert_eq!(kind, "hash");
        assert_eq!(m[..7], d[..7]);
        assert_eq!(m[7..], [(M, 3), (M, 5)]);
        let probe = vec![
            Some(200_000),
            Some(199_999),
            Some(5),
            Some(-3),
            Some(i64::MAX),
            None,
        ];
        let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(probe))];
        assert_eq!(
            has_match(&lk, &table, 6).unwrap(),
            [true, false, true, false, false, false]
        );
    }

    #[test]
    fn presence_bits_past_the_cached_span_are_kept_per_row_and_exact() {
        // 200,000 keys over a span of ten million (past `PRESENT_SPAN`, within 64 per row).
        let keys: Vec<i64> = (0..200_000).map(|i| i * 50 + 7).collect();
        let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(keys.clone()))];
        let table = BuildTable::build(&rk, keys.len(), false).unwrap();
        let BuildTable::Int {
            present: Some((lo, bits)),
            ..
        } = &table
        else {
            panic!("{table:?}");
        };
        assert_eq!(*lo, 7);
        assert_eq!(bits.len(), (9_999_957 - 7) / 64 + 1);
        let probe: Vec<i64> = (-100..10_000_100).step_by(13).collect();
        let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(probe.clone()))];
        let want: Vec<bool> = probe
            .iter()
            .map(|&k| (7..=9_999_957).contains(&k) && (k - 7) % 50 == 0)
            .collect();
        assert_eq!(has_match(&lk, &table, probe.len()).unwrap(), want);
        // A hundred keys over the same span: the bits would take 12 KB per row.
        let few: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            (0..100).map(|i| i * 100_000),
        ))];
        let table = BuildTable::build(&few, 100, false).unwrap();
        assert!(
            matches!(&table, BuildTable::Int { present: None, .. }),
            "{table:?}"
        );
    }

    #[test]
    fn packed_keys_give_the_pairs_and_matches_of_encoded_ones() {
        const M: u32 = MISSING;
        // Two keys; a string copy of the second forces the encoded (`arrow-row`) table.
        let key2 = |v: &[Option<i64>]| -> Vec<ArrayRef> {
            vec![
                Arc::new(Int64Array::from(
                    v.iter().map(|x| x.map(|x| x / 10)).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    v.iter().map(|x| x.map(|x| x % 10)).collect::<Vec<_>>(),
                )),
            ]
        };
        let as_text = |k: &[ArrayRef]| -> Vec<ArrayRef> {
            vec![
                k[0].clone(),
                arrow_cast::cast(&k[1], &arrow_schema::DataType::Utf8).unwrap(),
            ]
        };
        let left = [
            Some(53),
            Some(97),
            None,
            Some(-21),
            Some(53),
            Some(400),
            Some(-999),
            Some(31),
        ];
        let right = [Some(53), Some(31), Some(53), None, Some(-21), Some(12)];
        let (lk, rk) = (key2(&left), key2(&right));
        let packed = BuildTable::build(&rk, right.len(), false).unwrap();
        assert!(matches!(packed, BuildTable::Packed { .. }), "{packed:?}");
        let rows = BuildTable::build(&as_text(&rk), right.len(), false).unwrap();
        assert!(matches!(rows, BuildTable::Rows { .. }), "{rows:?}");
        for how in [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Right,
            JoinType::Outer,
        ] {
            let p = hash_pairs(&lk, &packed, left.len(), right.len(), how).unwrap();
            let r = hash_pairs(&as_text(&lk), &rows, left.len(), right.len(), how).unwrap();
            assert_eq!((&p.left, &p.right), (&r.left, &r.right), "{how:?}");
        }
        // By hand for the outer join: 53 twice on each side, -21 and 31 once.
        let p = hash_pairs(&lk, &packed, left.len(), right.len(), JoinType::Outer).unwrap();
        let got: Vec<(u32, u32)> = p.left.into_iter().zip(p.right).collect();
        assert_eq!(
            got,
            [
                (0, 0),
                (0, 2),
                (1, M),
                (2, M),
                (3, 4),
                (4, 0),
                (4, 2),
                (5, M),
                (6, M),
                (7, 1),
                (M, 3),
                (M, 5)
            ]
        );
        let set = BuildTable::build(&rk, right.len(), true).unwrap();
        assert_eq!(
            has_match(&lk, &set, left.len()).unwrap(),
            has_match(&as_text(&lk), &rows, left.len()).unwrap()
        );
        assert_eq!(
            has_match(&lk, &set, left.len()).unwrap(),
            [true, false, false, true, true, false, false, true]
        );
    }

    /// One string key takes the string table in any layout on either side (a dictionary
    /// probe included), and gives the pairs and matches of the same keys as integers.
    #[test]
    fn string_keys_give_the_pairs_and_matches_of_integer_ones() {
        use arrow_schema::DataType;
        let left = [
            Some(53),
            Some(97),
            None,
            Some(-21),
            Some(53),
            Some(400),
            Some(31),
        ];
        let right = [Some(53), Some(31), Some(53), None, Some(-21), Some(12)];
        let ints = |v: &[Option<i64>]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
        let (lk, rk) = (vec![ints(&left)], vec![ints(&right)]);
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        // Keys of at most 15 bytes take the packed table, longer ones the hashed bytes.
        for (prefix, short) in [("key no. ", true), ("the key number ", false)] {
            let text = |v: &[Option<i64>], t: &DataType| -> ArrayRef {
                let strings = v
                    .iter()
                    .map(|x| x.map(|x| format!("{prefix}{x}")))
                    .collect::<arrow_array::StringArray>();
                arrow_cast::cast(&strings, t).unwrap()
            };
            for (lt, rt) in [
                (DataType::Utf8, DataType::Utf8),
                (DataType::Utf8View, DataType::Utf8),
                (DataType::LargeUtf8, DataType::Utf8View),
                (dict.clone(), DataType::Utf8View),
            ] {
                let (ls, rs) = (vec![text(&left, &lt)], vec![text(&right, &rt)]);
                for keys_only in [false, true] {
                    let strings = BuildTable::build(&rs, right.len(), keys_only).unwrap();
                    if short {
                        assert!(
                            matches!(strings, BuildTable::ShortStrings { .. }),
                            "{strings:?}"
                        );
                    } else {
                        assert!(matches!(strings, BuildTable::Strings { .. }), "{strings:?}");
                    }
                    let table = BuildTable::build(&rk, right.len(), keys_only).unwrap();
                    assert_eq!(
                        has_match(&ls, &strings, left.len()).unwrap(),
                        has_match(&lk, &table, left.len()).unwrap(),
                        "{lt} against {rt}"
                    );
                    if keys_only {
                        continue;
                    }
                    for how in [
                        JoinType::Inner,
                        JoinType::Left,
                        JoinType::Right,
                        JoinType::Outer,
                    ] {
                        let p = hash_pairs(&ls, &strings, left.len(), right.len(), how).unwrap();
                        let q = hash_pairs(&lk, &table, left.len(), right.len(), how).unwrap();
                        assert_eq!(
                            (&p.left, &p.right),
                            (&q.left, &q.right),
                            "{how:?}: {lt}, {rt}"
                        );
                    }
                }
            }
            let inner =
                BuildTable::build(&[text(&right, &DataType::Utf8)], right.len(), false).unwrap();
            let got = hash_pairs(
                &[text(&left, &DataType::Utf8)],
                &inner,
                7,
                6,
                JoinType::Inner,
            )
            .unwrap();
            let got: Vec<(u32, u32)> = got.left.into_iter().zip(got.right).collect();
            assert_eq!(got, [(0, 0), (0, 2), (3, 4), (4, 0), (4, 2), (6, 1)]);
            assert!(
                hash_pairs(&lk, &inner, 7, 6, JoinType::Inner).is_err(),
                "an integer probe of strings"
            );
        }
        // A probe string longer than any in a packed table misses; its first 15 bytes
        // equal a key of the table.
        let table: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["fifteen bytes!!"]));
        let table = BuildTable::build(&[table], 1, false).unwrap();
        assert!(matches!(table, BuildTable::ShortStrings { .. }));
        let probe: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
            "fifteen bytes!!!",
            "fifteen bytes!!",
            "fifteen bytes!",
        ]));
        assert_eq!(
            has_match(&[probe], &table, 3).unwrap(),
            [false, true, false]
        );
    }
}

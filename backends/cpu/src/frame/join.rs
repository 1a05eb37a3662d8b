//! Joining two batches: a hash join (build on the right, probe with the left) and a
//! sorted merge join, both producing pairs of row indices; the output is assembled by
//! `take` on both sides, with shared keys coalesced for right and outer joins.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use tessera_core::frame::{JoinAlgorithm, JoinSpec, JoinType};
use tessera_core::{Error, Result};

use super::keys::{encode_rows, int_key, key_nulls};

fn kerr(e: arrow_schema::ArrowError) -> Error {
    Error::invalid("merge", e.to_string())
}

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

/// Matching `(left, right)` row pairs; `None` marks the missing side of an outer row.
struct Pairs {
    left: Vec<Option<u32>>,
    right: Vec<Option<u32>>,
}

impl Pairs {
    fn push(&mut self, l: Option<u32>, r: Option<u32>) {
        self.left.push(l);
        self.right.push(r);
    }
}

/// Hash join pairs, in left order (then unmatched right rows).
fn hash_pairs(lk: &[ArrayRef], rk: &[ArrayRef], ln: usize, rn: usize, how: JoinType) -> Result<Pairs> {
    let lnull = key_nulls(lk);
    let rnull = key_nulls(rk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let rvalid = |i: usize| rnull.as_ref().is_none_or(|n| n.is_valid(i));
    // Chained table on the right: head per key, next per row.
    let mut next = vec![u32::MAX; rn];
    let mut pairs = Pairs {
        left: Vec::with_capacity(ln),
        right: Vec::with_capacity(ln),
    };
    let mut matched = vec![false; rn];
    let keep_left = matches!(how, JoinType::Left | JoinType::Outer);
    // Probes every left row with `find` (the first right row of its key).
    let mut probe = |next: &[u32], find: &dyn Fn(usize) -> Option<u32>| {
        for i in 0..ln {
            let mut hit = false;
            if lvalid(i) {
                let mut r = find(i);
                while let Some(j) = r {
                    pairs.push(Some(i as u32), Some(j));
                    matched[j as usize] = true;
                    hit = true;
                    let n = next[j as usize];
                    r = (n != u32::MAX).then_some(n);
                }
            }
            if !hit && keep_left {
                pairs.push(Some(i as u32), None);
            }
        }
    };
    match (int_key(lk)?, int_key(rk)?) {
        (Some(l), Some(r)) => {
            let (lv, rv) = (l.as_primitive::<Int64Type>().values(), r.as_primitive::<Int64Type>().values());
            let mut head: HashMap<i64, u32, ahash::RandomState> =
                HashMap::with_capacity_and_hasher(rn, ahash::RandomState::new());
            // Insert in reverse so chains run in right-row order.
            for j in (0..rn).rev() {
                if rvalid(j) {
                    if let Some(old) = head.insert(rv[j], j as u32) {
                        next[j] = old;
                    }
                }
            }
            probe(&next, &|i| head.get(&lv[i]).copied());
        }
        _ => {
            let lr = encode_rows(lk)?;
            let rr = encode_rows(rk)?;
            let mut head: HashMap<&[u8], u32, ahash::RandomState> =
                HashMap::with_capacity_and_hasher(rn, ahash::RandomState::new());
            for j in (0..rn).rev() {
                if rvalid(j) {
                    if let Some(old) = head.insert(rr.row(j).data(), j as u32) {
                        next[j] = old;
                    }
                }
            }
            probe(&next, &|i| head.get(lr.row(i).data()).copied());
        }
    }
    if matches!(how, JoinType::Right | JoinType::Outer) {
        for (j, m) in matched.iter().enumerate() {
            if !m {
                pairs.push(None, Some(j as u32));
            }
        }
    }
    Ok(pairs)
}

/// Merge join pairs of two key-sorted inputs (ascending, nulls last).
fn merge_pairs(lk: &[ArrayRef], rk: &[ArrayRef], ln: usize, rn: usize, how: JoinType) -> Result<Pairs> {
    let lr = encode_rows(lk)?;
    let rr = encode_rows(rk)?;
    let lnull = key_nulls(lk);
    let rnull = key_nulls(rk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let rvalid = |i: usize| rnull.as_ref().is_none_or(|n| n.is_valid(i));
    let keep_left = matches!(how, JoinType::Left | JoinType::Outer);
    let keep_right = matches!(how, JoinType::Right | JoinType::Outer);
    let mut pairs = Pairs {
        left: Vec::with_capacity(ln),
        right: Vec::with_capacity(ln),
    };
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

/// Joins two batches; `schema` is [`JoinSpec::output_schema`] of the inputs.
pub(crate) fn join(left: &RecordBatch, right: &RecordBatch, spec: &JoinSpec, schema: SchemaRef) -> Result<RecordBatch> {
    let lk = keys(left, &spec.left_on)?;
    let rk = keys(right, &spec.right_on)?;
    let pairs = match spec.algorithm {
        JoinAlgorithm::Hash => hash_pairs(&lk, &rk, left.num_rows(), right.num_rows(), spec.how)?,
        JoinAlgorithm::SortedMerge => {
            merge_pairs(&lk, &rk, left.num_rows(), right.num_rows(), spec.how)?
        }
    };
    let li = UInt32Array::from(pairs.left);
    let ri = UInt32Array::from(pairs.right);
    let shared: Vec<&String> = spec
        .left_on
        .iter()
        .zip(&spec.right_on)
        .filter(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let lschema = left.schema();
    for (c, f) in left.columns().iter().zip(lschema.fields()) {
        let taken = arrow_select::take::take(c, &li, None).map_err(kerr)?;
        let coalesce = shared.contains(&f.name()) && matches!(spec.how, JoinType::Right | JoinType::Outer);
        if coalesce {
            let rc = right.column_by_name(f.name()).ok_or_else(|| Error::Internal("shared key missing".into()))?;
            let rt = arrow_select::take::take(rc, &ri, None).map_err(kerr)?;
            let mask = arrow_arith::boolean::is_not_null(&li).map_err(kerr)?;
            columns.push(arrow_select::zip::zip(&mask, &taken, &rt).map_err(kerr)?);
        } else {
            columns.push(taken);
        }
    }
    let rschema = right.schema();
    for (c, f) in right.columns().iter().zip(rschema.fields()) {
        if shared.contains(&f.name()) {
            continue;
        }
        columns.push(arrow_select::take::take(c, &ri, None).map_err(kerr)?);
    }
    let rows = li.len();
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(kerr)
}

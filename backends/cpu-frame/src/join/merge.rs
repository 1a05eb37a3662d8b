//! The sorted merge join: both sides sorted on the keys, pairs found by walking them
//! together.

use arrow_array::ArrayRef;
use tessera_core::frame::JoinType;
use tessera_core::Result;

use super::pairs::Pairs;
use crate::keys::groups::{encode_rows, key_nulls};

/// Merge join pairs of two key-sorted inputs (ascending, nulls last).
pub(super) fn merge_pairs(
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

//! Row order: a stable sort by keys with nulls last in either direction, and the bucket a
//! row of a range partition belongs to.

use std::cmp::Ordering;

use tessera_core::frame::SortKey;

use super::expr::order;
use super::value::{Cell, Table};

/// How two cells of one key compare in the sort: nulls after every value whatever the
/// direction, values ascending or descending.
fn by_key(a: &Cell, b: &Cell, descending: bool) -> Result<Ordering, String> {
    Ok(match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            let o = order(x, y)?;
            if descending {
                o.reverse()
            } else {
                o
            }
        }
    })
}

/// How rows `i` and `j` compare under `by`.
fn rows(t: &Table, by: &[SortKey], i: usize, j: usize) -> Result<Ordering, String> {
    for k in by {
        let c = t.column(&k.column)?;
        let o = by_key(&c.cells[i], &c.cells[j], k.descending)?;
        if o != Ordering::Equal {
            return Ok(o);
        }
    }
    Ok(Ordering::Equal)
}

/// The row numbers of `t` in the stable order of `by`.
///
/// # Errors
/// An unknown key column, or values the oracle cannot order.
pub fn sorted_rows(t: &Table, by: &[SortKey]) -> Result<Vec<usize>, String> {
    // An insertion sort: stable by construction, and plain enough to need no proof.
    let mut out: Vec<usize> = Vec::with_capacity(t.rows);
    for r in 0..t.rows {
        let mut at = out.len();
        while at > 0 && rows(t, by, out[at - 1], r)? == Ordering::Greater {
            at -= 1;
        }
        out.insert(at, r);
    }
    Ok(out)
}

/// `t` sorted by `by` (stable).
///
/// # Errors
/// As [`sorted_rows`].
pub fn sort(t: &Table, by: &[SortKey]) -> Result<Table, String> {
    Ok(t.take(&sorted_rows(t, by)?))
}

/// The rows of `t` split by `bounds` (a table of the key columns): output `i` holds the
/// rows after `bounds[i-1]` and not after `bounds[i]` in the order of `by`, nulls last;
/// `bounds.rows + 1` outputs, each in input order.
///
/// # Errors
/// As [`sorted_rows`].
pub fn range_partition(t: &Table, by: &[SortKey], bounds: &Table) -> Result<Vec<Table>, String> {
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); bounds.rows + 1];
    for r in 0..t.rows {
        let mut bucket = 0;
        for b in 0..bounds.rows {
            let mut o = Ordering::Equal;
            for k in by {
                let x = &t.column(&k.column)?.cells[r];
                let y = &bounds.column(&k.column)?.cells[b];
                o = by_key(x, y, k.descending)?;
                if o != Ordering::Equal {
                    break;
                }
            }
            if o == Ordering::Greater {
                bucket = b + 1;
            }
        }
        buckets[bucket].push(r);
    }
    Ok(buckets.iter().map(|rows| t.take(rows)).collect())
}

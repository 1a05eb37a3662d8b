//! What both joins produce: pairs of matching row indices (a missing side marked), and
//! the key columns they read.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use tessera_core::{Error, Result};

pub(super) fn keys(batch: &RecordBatch, names: &[String]) -> Result<Vec<ArrayRef>> {
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
pub(super) const MISSING: u32 = u32::MAX;

/// Matching `(left, right)` row pairs; [`MISSING`] marks the absent side of an outer row.
pub(super) struct Pairs {
    pub(super) left: Vec<u32>,
    pub(super) right: Vec<u32>,
}

impl Pairs {
    pub(super) fn with_capacity(n: usize) -> Pairs {
        Pairs {
            left: Vec::with_capacity(n),
            right: Vec::with_capacity(n),
        }
    }
    pub(super) fn push(&mut self, l: Option<u32>, r: Option<u32>) {
        self.left.push(l.unwrap_or(MISSING));
        self.right.push(r.unwrap_or(MISSING));
    }
}

/// Row indices as a `take` argument, null where [`MISSING`] (zero-copy when none is).
pub(super) fn indices(v: Vec<u32>) -> UInt32Array {
    if v.contains(&MISSING) {
        v.into_iter().map(|i| (i != MISSING).then_some(i)).collect()
    } else {
        UInt32Array::from(v)
    }
}

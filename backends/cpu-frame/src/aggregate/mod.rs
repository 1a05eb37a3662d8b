//! Partial, combine and finalize aggregation over Arrow batches, in the state layout core
//! defines ([`AggFunc::state_fields`]).
//!
//! Rows are mapped to dense group ids first (`crate::keys::grouping`); every aggregation is then a
//! tight loop over `(group id, value)` into per-group accumulators. Order-based functions
//! (min, max, first, last) pick a row index per group and `take` it, so they work for any
//! orderable type without a kernel per type. Variance states merge with Chan et al.'s
//! pairwise formula, which stays accurate where a sum of squares would cancel.

mod columns;
mod combine;
mod digests;
mod finalize;
mod lists;
mod moments;
mod partial;
mod pick;
mod sums;
#[cfg(test)]
mod tests;

pub(crate) use combine::combine;
pub(crate) use finalize::finalize;
pub(crate) use partial::{partial, partial_of_selected};

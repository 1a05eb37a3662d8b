//! Cases for the user-level `Array` API on chunked arrays.
//!
//! These run the whole stack: chunk-grid arithmetic, alignment of differently chunked
//! operands, broadcasting and promotion, lowering into fused programs, tree reductions,
//! rechunking and the scheduler. The backend under test gets irregular chunkings; the
//! reference computes the same expression with one chunk per array, so the CPU backend
//! checked against itself still proves that results do not depend on the chunking.

mod creation;
mod elementwise;
mod indexing;
mod inputs;
mod lanes;
mod linalg;
mod reductions;
mod structure;

use crate::case::Family;
use creation::creation;
use elementwise::elementwise;
use indexing::{gathers, indexing};
use lanes::{quantiles, scans, searches, sorting};
use linalg::blocks_and_linalg;
use reductions::reductions;
use structure::structure;

/// Every API family.
pub fn families() -> Vec<Family> {
    let mut v = creation();
    v.extend(elementwise());
    v.extend(indexing());
    v.extend(reductions());
    v.extend(scans());
    v.push(sorting());
    v.extend(gathers());
    v.extend(quantiles());
    v.extend(searches());
    v.extend(structure());
    v.extend(blocks_and_linalg());
    v
}

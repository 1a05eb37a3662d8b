//! Key columns read as keys: what a groupby numbers into group ids, a join builds its
//! table from and probes it with, and a shuffle hashes into buckets.
//!
//! The ways a set of key columns becomes one key per row, each in a file:
//!
//! - `groups`: one integer-like key read as an `i64` (a dense table over a small range,
//!   else a hash map on the value), rows encoded by `arrow-row` as comparable bytes, the
//!   partition hash of any key set, and [`groups::Groups`], rows assigned to group ids;
//! - `codes`: several keys, or string keys, numbered column by column and the codes
//!   combined, through the prefetching open-addressed `code_table`;
//! - `strings`: one string key read where it lies, whichever Arrow layout holds it
//!   (joins hash and compare the bytes in place; short strings packed into a `u128`);
//! - `packed`: several integer join keys packed into one `i64` over the build side's
//!   ranges;
//! - `grouping`: the choice a groupby makes among them (`group_rows`).
//!
//! A groupby enters through `grouping` and a join through the pieces its build table
//! needs (`crate::join`); both then meet the same readers here, so a key reads alike
//! wherever it is used.

pub(crate) mod code_table;
pub(crate) mod codes;
pub(crate) mod grouping;
pub(crate) mod groups;
pub(crate) mod packed;
pub(crate) mod strings;

//! A groupby the device runs natively, as planned: its kernel text's name and hash, the
//! columns it reads, its accumulators and the state columns it writes.

use arrow_schema::{DataType, Field, SchemaRef};

/// Why a groupby does not run natively.
pub type Refusal = String;

/// One accumulator word per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Acc {
    /// Non-null values of read slot `j`.
    Count(usize),
    /// Wrapping sum of read slot `j` (signed: sign-extended).
    Sum(usize),
    /// Minimum of read slot `j`, as an order-preserving word.
    Min(usize),
    /// Maximum of read slot `j`, as an order-preserving word.
    Max(usize),
    /// Word `1`, `2` or `3` (low to high) of the exact 192-bit sum of read slot `j`
    /// (decimals and integers, as 128-bit values): three words with the carries between
    /// them counted, so that the sum is exact whatever order the atomics run in.
    Wide(usize, u8),
    /// The float sum of read slot `j` in row order (Float64, as the CPU backend adds):
    /// not an atomic accumulator — `_fsum` folds each group's rows, sorted by group, one
    /// after the other, so the bits are the CPU's.
    FSum(usize),
}

/// One state column: its field and the accumulators it reads.
#[derive(Debug, Clone)]
pub(super) struct State {
    pub(super) field: Field,
    /// The accumulator holding the value (the low word of a wide sum).
    pub(super) value: usize,
    /// A wide sum's two upper words: its state is the 128-bit value (a Decimal128, or a
    /// Float64 for an integer mean), an error past 38 digits.
    pub(super) wide: Option<(usize, usize)>,
    /// For min/max, the count that says whether the group had a value.
    pub(super) present: Option<usize>,
    /// The read slot of its input (for min/max: the type to decode to).
    pub(super) slot: usize,
}

/// A groupby the device runs natively.
#[derive(Debug, Clone)]
pub struct NativeGroupby {
    pub(super) schema: SchemaRef,
    pub(super) body: String,
    pub(super) hash: u64,
    pub(super) name: String,
    /// Input columns read, by slot: the keys first, then the aggregations' inputs.
    pub(super) reads: Vec<(usize, DataType)>,
    pub(super) keys: usize,
    pub(super) accs: Vec<Acc>,
    pub(super) states: Vec<State>,
    /// The errors `_states` can raise (a decimal sum past 38 digits), by code - 1.
    pub(super) checks: Vec<String>,
}

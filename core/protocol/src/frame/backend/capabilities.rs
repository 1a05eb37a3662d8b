//! What a dataframe backend declares it can do ([`FrameCapabilities`]), and the stored
//! forms of columns it takes from a file as they are ([`StoredForms`]).

use super::aggregate::AggFunc;
use super::join::JoinAlgorithm;

/// What a dataframe backend supports beyond the required primitives.
#[derive(Debug, Clone, Default)]
pub struct FrameCapabilities {
    /// Join algorithms it does *not* implement (core picks another where it can).
    pub missing_join_algorithms: Vec<JoinAlgorithm>,
    /// Aggregations it does *not* implement (for the quantiles, at any level).
    pub missing_aggregations: Vec<AggFunc>,
    /// Whether it implements the window functions ([`DataFrameBackend::window`](crate::frame::backend::DataFrameBackend::window) and
    /// [`DataFrameBackend::window_carry`](crate::frame::backend::DataFrameBackend::window_carry)); core refuses a window on a backend without
    /// them when the plan is built.
    pub windows: bool,
    /// Whether [`DataFrameBackend::join`](crate::frame::backend::DataFrameBackend::join) implements [`JoinType::Semi`](crate::frame::backend::JoinType::Semi) and
    /// [`JoinType::Anti`](crate::frame::backend::JoinType::Anti); without them core composes `semi_join`/`anti_join` from the
    /// other side's distinct keys and an inner or left join.
    pub filter_joins: bool,
    /// The stored forms [`DataFrameBackend::aggregate_partial_of`](crate::frame::backend::DataFrameBackend::aggregate_partial_of) takes in place of the
    /// plan's types (none by default).
    pub stored_forms: StoredForms,
}

/// Column forms a scan may hand a backend's [`DataFrameBackend::aggregate_partial_of`](crate::frame::backend::DataFrameBackend::aggregate_partial_of) as
/// stored, in place of the types the plan gives those columns: what a backend that reads
/// them saves is the conversion per row. Each is off by default, and every column then
/// arrives in the plan's type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StoredForms {
    /// Group key columns typed `Dictionary(Int32, Utf8 | LargeUtf8)` in place of the
    /// string columns a plan gives them (its key columns in the result may stay
    /// dictionaries: the engine casts them back to the plan's type). A scan that stores
    /// those strings dictionary-encoded (Parquet) then hands over the dictionary's keys,
    /// and the backend groups by the keys without reading a string per row.
    pub dictionary_keys: bool,
    /// `Decimal64(p, s)` columns (a decimal of at most 18 digits in 64 bits, as Parquet
    /// stores it in `INT64`) in place of the plan's `Decimal128(p, s)`, for columns that
    /// the program reads only as operands of `+`, `-` and `*` or passes through
    /// unchanged, and that no aggregation but `sum`, `mean` and `count` reads. Such a
    /// backend gives the same types as for the `Decimal128` column: the arithmetic's
    /// results and the sums' states are `Decimal128` ([`sum_type`](crate::frame::expr::sum_type)). A scan then hands
    /// over the stored 64-bit values without widening each to 128 bits, and the sums read
    /// half the bytes.
    pub narrow_decimals: bool,
    /// Group key columns typed `Utf8View` in place of the `Utf8`/`LargeUtf8` columns a
    /// plan gives them (cast back to the plan's type after the partial aggregation, as
    /// dictionaries are). A scan that stores those strings as plain pages (a writer's
    /// fallback when a chunk's distinct strings outgrow its dictionary page) then hands
    /// over a view per row into the decoded pages — strings of at most 12 bytes inline —
    /// instead of copying every string into one buffer.
    pub view_keys: bool,
}

impl FrameCapabilities {
    /// Whether the backend lacks `func`: the quantiles are compared by name, whatever
    /// their level.
    pub fn lacks(&self, func: AggFunc) -> bool {
        self.missing_aggregations
            .iter()
            .any(|m| m.name() == func.name())
    }
}

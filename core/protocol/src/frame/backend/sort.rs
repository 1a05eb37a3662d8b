//! A sort key: a column, its direction and where its nulls go.

/// A sort key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SortKey {
    /// Column.
    pub column: String,
    /// Descending instead of ascending.
    pub descending: bool,
}

//! Names for the temporary columns the user API adds to a plan and drops again (null
//! flags of keys, row numbers, aggregated expressions, merge markers): one way to make
//! them, so that no two helpers can pick the same name and none can take a user's.
//!
//! A name starts with U+0001, which no column read from a file or named by a user in
//! practice starts with, and gets a `_` more until no column of the frames has it.

use crate::api::dataframe::DataFrame;

/// A name for a temporary column from `stem` that no column of `frames` has.
pub(crate) fn fresh_in(frames: &[&DataFrame], stem: &str) -> String {
    let names: Vec<String> = frames.iter().flat_map(|f| f.columns()).collect();
    fresh_among(&names, stem)
}

/// A name for a temporary column from `stem` that none of `taken` is.
pub(crate) fn fresh_among(taken: &[String], stem: &str) -> String {
    let mut name = format!("\u{1}{stem}");
    while taken.contains(&name) {
        name.push('_');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::fresh_among;

    #[test]
    fn a_fresh_name_is_none_of_the_taken_ones() {
        let first = fresh_among(&[], "row");
        assert_eq!(first, "\u{1}row");
        let taken = vec![first.clone(), format!("{first}_"), "row".to_string()];
        let next = fresh_among(&taken, "row");
        assert!(!taken.contains(&next), "{next:?}");
        assert_ne!(fresh_among(&taken, "flag"), next);
    }
}

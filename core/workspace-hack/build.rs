//! No build step: the build-dependencies only unify the features of the proc-macros'
//! dependencies (see Cargo.toml).

fn main() {}

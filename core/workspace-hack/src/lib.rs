//! No code: this crate only unifies the features of the dependencies every build of
//! tessera shares, so that CI's configurations (the workspace tests, the optional
//! features, the Python extension) compile each of them once. See its `Cargo.toml` for why
//! and how the list is kept.

//! # tessera-plugin-ffi: conversions across the plugin C ABI
//!
//! Shared by both sides of the boundary: the host's loader (`tessera-plugin-host`) encodes
//! calls and decodes results with these, and the plugin SDK (`tessera-plugin`) decodes
//! calls and encodes results with the same code, so the two sides cannot drift. A crate of
//! its own so that the protocol (`tessera-core`), which every backend depends on, holds no
//! C ABI code and no `unsafe`:
//!
//! - [`arrow`] moves n-d chunks as Arrow C Data Interface arrays (validated on import);
//! - [`batch`] moves record batches and schemas the same way;
//! - [`convert`] maps dtypes, scalars, random specs, slices, op names and errors to their
//!   `#[repr(C)]` forms;
//! - [`wire`] is the dataframe protocol's JSON form (programs, aggregations, join specs,
//!   capabilities) across the boundary.

#![allow(unsafe_code)] // the C ABI boundary: every block carries its SAFETY argument

pub mod arrow;
pub mod batch;
pub mod convert;
pub mod wire;

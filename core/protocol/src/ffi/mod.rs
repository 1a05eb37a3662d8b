//! Conversions across the plugin C ABI, shared by both sides of the boundary.
//!
//! The host's loader (`tessera-plugin-host`) encodes calls and decodes results with these;
//! the plugin SDK (`tessera-plugin`) decodes calls and encodes results with the same code,
//! so the two sides cannot drift. [`arrow`] moves n-d chunks as Arrow C Data Interface
//! arrays (validated on import); [`convert`] maps dtypes, scalars, random specs, slices,
//! op names and errors to their `#[repr(C)]` forms.

#![allow(unsafe_code)] // the C ABI boundary: every block carries its SAFETY argument

pub mod arrow;
pub mod batch;
pub mod convert;

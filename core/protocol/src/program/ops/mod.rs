//! The op vocabulary of programs, their dtype rules and their scalar semantics.
//!
//! The scalar functions here are the *definition* of each op (NumPy's semantics where
//! NumPy defines them, documented choices where it raises or warns); backends' vectorised
//! kernels must agree with them, and the conformance suite checks that they do.

mod binary;
mod reduce;
#[cfg(test)]
mod tests;
mod unary;

pub use binary::{ipow_i64, py_floor_div_f32, py_floor_div_f64, py_fmod_f64, wrap_i64, BinaryOp};
pub use reduce::ReduceOp;
pub use unary::UnaryOp;

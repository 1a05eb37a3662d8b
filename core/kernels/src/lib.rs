//! tessera's shared numeric kernels: what every backend calls so that its answers agree
//! with every other backend's to the bit.
//!
//! - [`simd`]: which SIMD path a multiversioned kernel takes ([`simd_kernel!`]), and a way
//!   to force each one in tests;
//! - [`random`]: the counter-based Philox generator, its ziggurat and its mappings from
//!   words to uniform and normal values;
//! - [`digest`]: the t-digest behind approximate quantiles, whose states from any
//!   partitions merge;
//! - [`target`]: whether this CPU can run what the binary was compiled for.
//!
//! Nothing here knows arrays, dtypes or backends: the protocol crate (`tessera-core`)
//! defines what a random source or an aggregation state is and calls these to compute it.

pub mod digest;
pub mod random;
pub mod simd;
pub mod target;

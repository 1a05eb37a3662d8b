//! The counter-based generator behind every random source: Philox 4x32-10 (Salmon et al.,
//! SC'11) addressed by `(seed, stream, element index)`, the 1024-layer ziggurat for normal
//! values, the portable `ln`/`exp` its tables and tails use, and the mappings from words to
//! values. The layout of words per element is documented on [`first_word`]; what a random
//! source is (distribution, dtype, seed) is the protocol's `tessera_core::random`.

mod math;
mod philox;
mod unit;
mod values;
pub mod ziggurat;

pub use math::{exp_nonpositive, ln_positive};
pub use philox::{
    block_of, first_word, half_of, pairs_with_next_but_one, philox4x32_10, words_along,
    words_along_pair, words_at,
};
pub use unit::{unit_f32, unit_f64};
pub use values::{add, affine_value, normal_first_try, uniform_from_words, uniform_value};

//! The user API of a lazy dataframe: [`DataFrame`](crate::DataFrame) and what it builds
//! (groupby, merge, reshape, null keys, describe, sample) and shows (display).
//!
//! Every method here only builds plan nodes (`crate::plan`); `compute()` hands the plan to
//! the optimizer (`crate::optimize`) and the executor (`crate::exec::run`, its one door).

pub(crate) mod computed;
pub(crate) mod dataframe;
mod describe;
pub mod display;
mod explain;
mod explode;
pub(crate) mod groupby;
pub(crate) mod io;
pub(crate) mod merge;
pub(crate) mod null_keys;
pub(crate) mod reduce;
pub(crate) mod reshape;
mod sample;
pub(crate) mod temp_names;

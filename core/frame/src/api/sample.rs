//! `sample`: a random fraction of the rows, the same rows for the same seed whatever the
//! partitioning.
//!
//! Each row is kept when a hash of `(seed, its position in the frame)` falls below the
//! fraction (Bernoulli sampling, as Dask's `sample(frac=)`: the count is close to, not
//! exactly, `fraction × rows`). Positions come from a running count (a window), and
//! the hash is SplitMix64's finaliser, whose outputs are uniform enough for sampling.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, RecordBatch};

use crate::api::dataframe::DataFrame;
use crate::api::temp_names::fresh_in;
use crate::error::{Error, Result};
use crate::expr::lit;
use crate::window::WindowFunc;

/// SplitMix64's output function of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Whether the row at `position` is in the sample of `fraction` for `seed`.
fn kept(seed: u64, position: i64, fraction: f64) -> bool {
    let u = (mix(seed ^ mix(position as u64)) >> 11) as f64 / (1u64 << 53) as f64;
    u < fraction
}

impl DataFrame {
    /// About `fraction` of the rows, drawn independently with `seed` (Bernoulli
    /// sampling), in row order; the same rows for the same seed on any partitioning.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::DataFrame;
    /// # fn main() -> tessera_core::Result<()> {
    /// let v = Arc::new(Int64Array::from_iter_values(0..10_000));
    /// let a = DataFrame::from_columns(vec![("v", v.clone())], 3)?.sample(0.1, 7)?;
    /// let b = DataFrame::from_columns(vec![("v", v)], 8)?.sample(0.1, 7)?;
    /// let n = a.len()?;
    /// assert!((850..1150).contains(&n), "{n}");
    /// assert_eq!(a.compute()?.concat()?, b.compute()?.concat()?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A fraction outside `[0, 1]`, or a backend without window functions.
    pub fn sample(&self, fraction: f64, seed: u64) -> Result<DataFrame> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(Error::invalid(
                "sample",
                format!("the fraction {fraction} is outside [0, 1]"),
            ));
        }
        let schema = self.schema();
        let one = fresh_in(&[self], "one");
        let with = self.with_column(&one, lit(1i64))?;
        let position = fresh_in(&[&with], "position");
        let numbered = with.window(&one, WindowFunc::CumSum, &position)?;
        let out_schema = schema.clone();
        numbered.map_partitions_with_schema(
            move |batch: RecordBatch| {
                let at = batch
                    .column_by_name(&position)
                    .ok_or_else(|| Error::invalid("sample", "the row positions are missing"))?;
                let mask: BooleanArray = at
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|p| Some(p.is_some_and(|p| kept(seed, p, fraction))))
                    .collect();
                let picked = arrow_select::filter::filter_record_batch(&batch, &mask)
                    .map_err(|e| Error::arrow("sample", e))?;
                let columns = out_schema
                    .fields()
                    .iter()
                    .map(|f| picked.column_by_name(f.name()).cloned())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Error::invalid("sample", "a column went missing"))?;
                RecordBatch::try_new(out_schema.clone(), columns)
                    .map_err(|e| Error::arrow("sample", e))
            },
            Arc::clone(&schema),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fraction_kept_is_close_and_seeds_differ() {
        let n = 200_000;
        let count = |seed| (0..n).filter(|&p| kept(seed, p, 0.25)).count() as f64;
        // Three standard deviations of a binomial(200000, 0.25): about 581.
        for seed in [0, 1, 99] {
            assert!((count(seed) - 50_000.0).abs() < 600.0, "seed {seed}");
        }
        let same = (0..1000)
            .filter(|&p| kept(1, p, 0.5) == kept(2, p, 0.5))
            .count();
        assert!((400..600).contains(&same), "{same}");
        assert!((0..1000).all(|p| !kept(5, p, 0.0) && kept(5, p, 1.0)));
    }
}

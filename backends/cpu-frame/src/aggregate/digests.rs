//! Approximate quantiles: a t-digest per group, kept as a list of centroids, merged
//! across partial states.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, ListArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};
use tessera_core::frame::digest::Digest;
use tessera_core::{Error, Result};

use super::columns::cast;
use crate::keys::groups::{Groups, NO_GROUP};

/// Per-group t-digests of `a` (as Float64; nulls and NaN skipped) in core's layout.
pub(super) fn digests(a: &ArrayRef, g: &Groups) -> Result<ArrayRef> {
    let f = cast(a, &DataType::Float64)?;
    let v = f.as_primitive::<Float64Type>();
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id != NO_GROUP && v.is_valid(i) {
            per[id as usize].push(v.value(i));
        }
    }
    digest_list(per.into_iter().map(|mut xs| Digest::from_values(&mut xs)))
}

/// A List column of digests (an empty list where there is none).
pub(super) fn digest_list(digests: impl Iterator<Item = Option<Digest>>) -> Result<ArrayRef> {
    let mut flat = Vec::new();
    let mut lengths = Vec::new();
    for d in digests {
        let before = flat.len();
        if let Some(d) = d {
            d.encode(&mut flat);
        }
        lengths.push(flat.len() - before);
    }
    let field = Arc::new(Field::new_list_field(DataType::Float64, true));
    Ok(Arc::new(
        ListArray::try_new(
            field,
            OffsetBuffer::<i32>::from_lengths(lengths),
            Arc::new(Float64Array::from(flat)),
            None,
        )
        .map_err(|e| Error::arrow("approx_quantile", e))?,
    ))
}

/// The digests of a List column (one per row) merged per group of `g`.
pub(super) fn merge_digests(list: &ArrayRef, g: &Groups) -> Result<ArrayRef> {
    let list = list.as_list::<i32>();
    let mut per: Vec<Vec<Digest>> = vec![Vec::new(); g.len()];
    for (row, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || list.is_null(row) {
            continue;
        }
        let v = list.value(row);
        if let Some(d) = Digest::decode(v.as_primitive::<Float64Type>().values())? {
            per[id as usize].push(d);
        }
    }
    digest_list(per.into_iter().map(Digest::merge))
}

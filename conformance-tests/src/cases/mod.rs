//! The generated cases: one [`Family`] per op of the backend protocol ([`protocol`]) and
//! of the user-level array API ([`api`]), each run over every dtype it takes.

pub mod api;
mod domain;
pub mod protocol;

use crate::case::Family;

pub use domain::{all, describe, floats, index_map, integers, numeric};

/// Variants per `(op, dtype)`: one per value flavour (special values, small, wide).
pub const VARIANTS: usize = 3;

/// Every family, protocol first, in a stable order.
pub fn families() -> Vec<Family> {
    let mut v = protocol::families();
    v.extend(api::families());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::Gen;

    #[test]
    fn generated_maps_stay_in_bounds() {
        let mut g = Gen::new(5);
        for _ in 0..500 {
            let s = g.shape(0, 4);
            let m = index_map(&mut g, &s);
            m.check(&s).unwrap();
            assert!(!m.src_shape.is_empty());
        }
    }
}

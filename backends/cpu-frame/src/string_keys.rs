//! One string key read as its bytes, whichever of Arrow's string layouts holds it.
//!
//! A join on one string column hashes and compares the strings where they lie, instead of
//! encoding every row of both sides with `arrow-row` (a copy of each key) and comparing the
//! copies: ten million distinct keys on each side spent a tenth of the join encoding them.
//! The two sides may use different layouts (`Utf8` against `Utf8View`): equal strings are
//! equal bytes and hash alike in any of them.

use std::hash::{BuildHasherDefault, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, LargeStringArray, StringArray, StringViewArray};
use arrow_schema::DataType;

/// The bytes of a string column's rows.
pub(crate) enum StrValues<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> StrValues<'a> {
    /// `a` as string bytes, or `None` when it is not `Utf8`, `LargeUtf8` or `Utf8View`.
    pub(crate) fn of(a: &'a ArrayRef) -> Option<StrValues<'a>> {
        Some(match a.data_type() {
            DataType::Utf8 => StrValues::Utf8(a.as_string::<i32>()),
            DataType::LargeUtf8 => StrValues::Large(a.as_string::<i64>()),
            DataType::Utf8View => StrValues::View(a.as_string_view()),
            _ => return None,
        })
    }

    /// Row `i`'s bytes (whatever a null row holds: callers check validity).
    pub(crate) fn get(&self, i: usize) -> &'a [u8] {
        match self {
            StrValues::Utf8(a) => a.value(i).as_bytes(),
            StrValues::Large(a) => a.value(i).as_bytes(),
            StrValues::View(a) => a.value(i).as_bytes(),
        }
    }

    /// Row `i`'s hash under `state`: of its bytes, so alike for equal strings in every
    /// layout. (Hashing a short string's 16-byte view instead spread ahash's values so
    /// badly over the table's control bits that a build of ten million keys took 3.4x
    /// as long.)
    pub(crate) fn hash(&self, state: &ahash::RandomState, i: usize) -> u64 {
        state.hash_one(self.get(i))
    }

    /// Whether row `i` here equals row `j` of `other`: two views of short strings compare
    /// as 128-bit integers, of long ones by length and prefix before their bytes.
    pub(crate) fn eq(&self, i: usize, other: &StrValues<'_>, j: usize) -> bool {
        if let (StrValues::View(a), StrValues::View(b)) = (self, other) {
            let (x, y) = (a.views()[i], b.views()[j]);
            if x as u32 <= INLINE || x as u64 != y as u64 {
                // Short strings are all in the view; long ones differ in length or prefix.
                return x == y;
            }
        }
        self.get(i) == other.get(j)
    }
}

/// The longest string a view holds inline.
const INLINE: u32 = 12;

/// A probe side's key as a string column [`StrValues`] reads: as it is, or cast to `Utf8`
/// (a dictionary of strings), or `None` when it is no string at all.
pub(crate) fn probe_strings(keys: &[ArrayRef]) -> Option<ArrayRef> {
    let [k] = keys else { return None };
    if StrValues::of(k).is_some() {
        return Some(k.clone());
    }
    match k.data_type() {
        DataType::Dictionary(_, v) if tessera_core::frame::expr::is_string(v) => {
            arrow_cast::cast(k, &DataType::Utf8).ok()
        }
        _ => None,
    }
}

/// A hasher for keys that are hashes already (the build tables' chains by string hash):
/// it passes the `u64` through instead of hashing it a second time.
#[derive(Default)]
pub(crate) struct PassHasher(u64);

impl Hasher for PassHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys reach this hasher; anything else is folded in, never lost.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Builds [`PassHasher`]s.
pub(crate) type PassHash = BuildHasherDefault<PassHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_layout_gives_the_same_bytes() {
        let rows = vec![
            Some("apple"),
            None,
            Some("a string longer than twelve bytes"),
        ];
        let utf8: ArrayRef = Arc::new(StringArray::from(rows.clone()));
        let large: ArrayRef = Arc::new(LargeStringArray::from(rows.clone()));
        let view: ArrayRef = Arc::new(StringViewArray::from(rows));
        let dict: ArrayRef = Arc::new(
            vec!["apple", "x", "a string longer than twelve bytes"]
                .into_iter()
                .collect::<arrow_array::DictionaryArray<arrow_array::types::Int32Type>>(),
        );
        let probed = probe_strings(&[dict]).unwrap();
        for a in [&utf8, &large, &view, &probed] {
            let s = StrValues::of(a).unwrap();
            assert_eq!(s.get(0), b"apple");
            assert_eq!(s.get(2), b"a string longer than twelve bytes");
        }
        let state = ahash::RandomState::new();
        let layouts = [&utf8, &large, &view, &probed].map(|a| StrValues::of(a).unwrap());
        for x in &layouts {
            for y in &layouts {
                for (i, j) in [(0, 0), (2, 2), (0, 2), (2, 0)] {
                    assert_eq!(x.eq(i, y, j), i == j, "rows {i} and {j}");
                    assert_eq!(x.hash(&state, i) == y.hash(&state, j), i == j);
                }
            }
        }
        let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1]));
        assert!(probe_strings(&[ints]).is_none());
    }

    /// Views of long strings that share a length and a prefix are told apart by their bytes.
    #[test]
    fn long_views_with_one_prefix_compare_by_their_bytes() {
        let a: ArrayRef = Arc::new(StringViewArray::from(vec!["prefix and the first tail"]));
        let b: ArrayRef = Arc::new(StringViewArray::from(vec![
            "prefix and the other tail",
            "prefix and the first tail",
        ]));
        let (a, b) = (StrValues::of(&a).unwrap(), StrValues::of(&b).unwrap());
        assert!(!a.eq(0, &b, 0));
        assert!(a.eq(0, &b, 1));
    }

    #[test]
    fn a_pass_hasher_returns_the_hash_it_is_given() {
        use std::hash::BuildHasher;
        assert_eq!(PassHash::default().hash_one(0xdead_beef_u64), 0xdead_beef);
    }
}

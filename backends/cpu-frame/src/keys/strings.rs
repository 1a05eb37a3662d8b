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

/// The longest string [`packed`] holds.
pub(crate) const PACKED: usize = 15;

/// A string of at most [`PACKED`] bytes starting at `start` of `data` as one integer: its
/// bytes (little-endian, zero above them) and its length in the top byte, so equal
/// integers are equal strings. Read as one unaligned 16-byte load and a mask where the
/// buffer has 16 bytes from `start`, else copied. Groupbys number short string keys and
/// joins hash them in this form: two integer comparisons where comparing byte slices
/// called `memcmp` for every probe.
#[inline]
pub(crate) fn packed(data: &[u8], start: usize, len: usize) -> u128 {
    let tail = data.get(start..).unwrap_or(&[]);
    let word = match tail.first_chunk::<16>() {
        Some(w) => u128::from_le_bytes(*w),
        None => {
            let mut w = [0u8; 16];
            let n = len.min(tail.len());
            w[..n].copy_from_slice(&tail[..n]);
            u128::from_le_bytes(w)
        }
    };
    (word & ((1u128 << (8 * len)) - 1)) | ((len as u128) << 120)
}

impl StrValues<'_> {
    /// Row `i`'s string as [`packed`], or `None` when it is longer than [`PACKED`] bytes.
    pub(crate) fn packed(&self, i: usize) -> Option<u128> {
        fn of_offsets<O: arrow_array::OffsetSizeTrait>(
            a: &arrow_array::GenericStringArray<O>,
            i: usize,
        ) -> Option<u128> {
            let offsets = a.value_offsets();
            let start = offsets[i].as_usize();
            let len = offsets[i + 1].as_usize() - start;
            (len <= PACKED).then(|| packed(a.value_data(), start, len))
        }
        match self {
            StrValues::Utf8(a) => of_offsets(a, i),
            StrValues::Large(a) => of_offsets(a, i),
            StrValues::View(a) => {
                let v = a.views()[i];
                let len = v as u32;
                if len <= INLINE {
                    // An inline view: the length, then the bytes zero-padded.
                    Some((v >> 32) | (u128::from(len) << 120))
                } else {
                    let bytes = a.value(i).as_bytes();
                    (bytes.len() <= PACKED).then(|| packed(bytes, 0, bytes.len()))
                }
            }
        }
    }
}

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
    fn packed_strings_are_their_bytes_and_length() {
        // Near the buffer's end (no 16 bytes left) and far from it, and the lengths at
        // the edges: equal packings exactly for equal strings.
        let data = b"abcdefghijklmnopqrstuvwxyz0123456789abc";
        let mut seen: std::collections::HashMap<u128, &[u8]> = Default::default();
        for start in 0..data.len() {
            for len in 0..=PACKED.min(data.len() - start) {
                let s = &data[start..start + len];
                let p = packed(data, start, len);
                assert_eq!(p >> 120, len as u128);
                assert_eq!(&p.to_le_bytes()[..len], s);
                assert!(p.to_le_bytes()[len..15].iter().all(|&b| b == 0));
                if let Some(other) = seen.insert(p, s) {
                    assert_eq!(other, s);
                }
            }
        }
        // "a" and "a\0" differ by length although their bytes pack alike.
        assert_ne!(packed(b"a\0", 0, 1), packed(b"a\0", 0, 2));
    }

    #[test]
    fn every_layout_packs_a_string_alike() {
        let rows = vec![
            "",
            "a",
            "twelve bytes",
            "thirteen byte",
            "fifteen bytes!!",
            "sixteen bytes!!!",
        ];
        let utf8: ArrayRef = Arc::new(StringArray::from(rows.clone()));
        let large: ArrayRef = Arc::new(LargeStringArray::from(rows.clone()));
        let view: ArrayRef = Arc::new(StringViewArray::from(rows.clone()));
        for a in [&utf8, &large, &view] {
            let s = StrValues::of(a).unwrap();
            for (i, r) in rows.iter().enumerate() {
                let want = (r.len() <= PACKED).then(|| packed(r.as_bytes(), 0, r.len()));
                assert_eq!(s.packed(i), want, "{:?} row {i}", a.data_type());
            }
        }
    }

    #[test]
    fn a_pass_hasher_returns_the_hash_it_is_given() {
        use std::hash::BuildHasher;
        assert_eq!(PassHash::default().hash_one(0xdead_beef_u64), 0xdead_beef);
    }
}

//! Numbered byte strings as one message: a rank's share of a collective (its blocks, its
//! partitions) with the number of each.
//!
//! The layout is the count, then per item its number, its length and its bytes, each
//! number a little-endian `u64`. Unpacking checks every length against what is left.

use tessera_core::error::{Error, Result};

/// Packs `items` (number, bytes) into one message.
pub fn pack(items: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let len = 8 + items.iter().map(|(_, b)| 16 + b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for (i, bytes) in items {
        out.extend_from_slice(&(*i as u64).to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// The items of a [`pack`]ed message, borrowing from it.
///
/// # Errors
/// A message cut short, or with a number or length over `usize`.
pub fn unpack(message: &[u8]) -> Result<Vec<(usize, &[u8])>> {
    fn word(r: &mut &[u8]) -> Result<usize> {
        let (head, rest) = r
            .split_first_chunk::<8>()
            .ok_or_else(|| Error::Internal("a numbered message cut short in a header".into()))?;
        *r = rest;
        usize::try_from(u64::from_le_bytes(*head))
            .map_err(|_| Error::Internal("a numbered message with a word over usize".into()))
    }
    let mut r = message;
    let n = word(&mut r)?;
    let mut out = Vec::with_capacity(n.min(r.len() / 16));
    for _ in 0..n {
        let (i, len) = (word(&mut r)?, word(&mut r)?);
        if r.len() < len {
            return Err(Error::Internal(format!(
                "a numbered message cut short: item {i} needs {len} bytes, {} left",
                r.len()
            )));
        }
        let (bytes, rest) = r.split_at(len);
        out.push((i, bytes));
        r = rest;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_and_damage_is_an_error() {
        let items = vec![(3, b"abc".to_vec()), (0, Vec::new()), (9, vec![7; 40])];
        let m = pack(&items);
        let back: Vec<(usize, Vec<u8>)> = unpack(&m)
            .unwrap()
            .into_iter()
            .map(|(i, b)| (i, b.to_vec()))
            .collect();
        assert_eq!(back, items);
        assert!(unpack(&pack(&[])).unwrap().is_empty());
        for cut in [0, 7, 20, m.len() - 1] {
            assert!(unpack(&m[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = m.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(unpack(&huge).is_err());
    }
}

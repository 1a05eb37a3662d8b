//! The seeded mutator: every input is a seed from the target's corpus with a few random
//! edits, drawn from the conformance suite's SplitMix64 stream ([`Gen`]), so a run is
//! reproducible from its seed number and an input that panicked is found again by its
//! index.
//!
//! The edits are the ones coverage-guided fuzzers start from (libFuzzer's mutation list):
//! bit flips, interesting bytes, random inserts and deletes, duplicated and spliced
//! ranges, truncation, and tokens from a per-target dictionary (format keywords,
//! delimiters, and numbers at the edges of every integer width), which reach deep into
//! a structured format much sooner than random bytes do.

use tessera_conformance::gen::Gen;

/// Bytes that sit at the edges of parsers: NUL, the sign bits, quotes, separators,
/// brackets, line ends, escapes, digits and exponent marks.
const INTERESTING_BYTES: &[u8] = b"\x00\x01\x7f\x80\xff\"',;:\n\r\t \\{}[]()-+.0129eE";

/// Numbers at the edges of every width, in the forms parsers read them.
const INTERESTING_NUMBERS: &[&[u8]] = &[
    b"0",
    b"-0",
    b"-1",
    b"127",
    b"128",
    b"255",
    b"256",
    b"65535",
    b"65536",
    b"2147483647",
    b"2147483648",
    b"-2147483649",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551615",
    b"18446744073709551616",
    b"340282366920938463463374607431768211456",
    b"1e308",
    b"1e309",
    b"-1e-324",
    b"NaN",
    b"inf",
    b"0.1",
    b"00000000000000000000000000000000000001",
];

/// Makes inputs from a corpus: each is one seed with one to eight edits (one input in
/// sixteen is a seed unchanged, so the corpus itself is always checked).
#[derive(Debug)]
pub struct Mutator<'a> {
    /// The conformance suite's SplitMix64 stream: the same on every machine.
    rng: Gen,
    corpus: &'a [Vec<u8>],
    dictionary: &'a [&'a [u8]],
    max_len: usize,
}

impl<'a> Mutator<'a> {
    /// A mutator over `corpus` (not empty) with the target's `dictionary`, making inputs
    /// of at most `max_len` bytes.
    pub fn new(
        seed: u64,
        corpus: &'a [Vec<u8>],
        dictionary: &'a [&'a [u8]],
        max_len: usize,
    ) -> Mutator<'a> {
        Mutator {
            rng: Gen::new(seed),
            corpus,
            dictionary,
            max_len,
        }
    }

    /// The next input.
    pub fn next_input(&mut self) -> Vec<u8> {
        let mut data = self.corpus[self.rng.below(self.corpus.len())].clone();
        if self.rng.below(16) == 0 {
            return data;
        }
        let edits = 1 + self.rng.below(8);
        for _ in 0..edits {
            self.edit(&mut data);
        }
        data.truncate(self.max_len);
        data
    }

    fn token(&mut self) -> &'a [u8] {
        if !self.dictionary.is_empty() && self.rng.below(2) == 0 {
            self.dictionary[self.rng.below(self.dictionary.len())]
        } else {
            INTERESTING_NUMBERS[self.rng.below(INTERESTING_NUMBERS.len())]
        }
    }

    fn edit(&mut self, data: &mut Vec<u8>) {
        let len = data.len();
        let at = self.rng.below(len + 1);
        match self.rng.below(10) {
            0 if len > 0 => {
                let i = self.rng.below(len);
                data[i] ^= 1 << self.rng.below(8);
            }
            1 if len > 0 => {
                let i = self.rng.below(len);
                data[i] = INTERESTING_BYTES[self.rng.below(INTERESTING_BYTES.len())];
            }
            2 => {
                let n = 1 + self.rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                data.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let end = (at + 1 + self.rng.below(16)).min(len);
                data.drain(at.min(len - 1)..end);
            }
            4 if len > 0 => {
                let start = self.rng.below(len);
                let end = (start + 1 + self.rng.below(64)).min(len);
                let copy = data[start..end].to_vec();
                data.splice(at..at, copy);
            }
            5 => {
                let t = self.token();
                data.splice(at..at, t.iter().copied());
            }
            6 => {
                let t = self.token();
                let end = (at + t.len()).min(len);
                data.splice(at..end, t.iter().copied());
            }
            7 => {
                let other = &self.corpus[self.rng.below(self.corpus.len())];
                let from = self.rng.below(other.len() + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            8 => data.truncate(at),
            _ => {
                // A run of digits replaced by a number at the edge of some width.
                if let Some(start) = (at..len).find(|&i| data[i].is_ascii_digit()) {
                    let end = (start..len)
                        .find(|&i| !data[i].is_ascii_digit())
                        .unwrap_or(len);
                    let t = INTERESTING_NUMBERS[self.rng.below(INTERESTING_NUMBERS.len())];
                    data.splice(start..end, t.iter().copied());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs_and_another_seed_others() {
        let corpus = vec![b"a,b\n1,2\n".to_vec(), b"{\"x\": [1, 2]}".to_vec()];
        let run = |seed| {
            let mut m = Mutator::new(seed, &corpus, &[b"\"\""], 64);
            (0..200).map(|_| m.next_input()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn inputs_stay_under_the_limit_and_differ_from_the_seeds() {
        let corpus = vec![vec![b'x'; 40]];
        let mut m = Mutator::new(1, &corpus, &[], 48);
        let inputs: Vec<_> = (0..2000).map(|_| m.next_input()).collect();
        assert!(inputs.iter().all(|i| i.len() <= 48));
        let changed = inputs.iter().filter(|i| **i != corpus[0]).count();
        assert!(changed > 1800, "{changed} of 2000 inputs were edited");
        let distinct: std::collections::BTreeSet<_> = inputs.iter().collect();
        assert!(distinct.len() > 1000, "{} distinct inputs", distinct.len());
    }
}

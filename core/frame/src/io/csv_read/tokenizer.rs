//! Splitting CSV bytes into records and fields: quoted fields with doubled quotes,
//! record ends that skip newlines inside quotes, CRLF, and a word-at-a-time zero-byte scan.

/// Splits one record (no line end) into raw fields, honouring quotes.
pub(crate) fn split_record<'a>(
    line: &'a [u8],
    delim: u8,
    quote: u8,
) -> Vec<std::borrow::Cow<'a, [u8]>> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let (field, next) = next_field(line, pos, delim, quote);
        out.push(field);
        match next {
            Some(n) => pos = n,
            None => break,
        }
    }
    out
}

/// The field starting at `pos` and the start of the next one (`None` at the end of the
/// record). `line` holds exactly one record.
pub(crate) fn next_field(
    line: &[u8],
    pos: usize,
    delim: u8,
    quote: u8,
) -> (std::borrow::Cow<'_, [u8]>, Option<usize>) {
    if line.get(pos) == Some(&quote) {
        let mut buf = Vec::new();
        let mut i = pos + 1;
        while i < line.len() {
            if line[i] == quote {
                if line.get(i + 1) == Some(&quote) {
                    buf.push(quote);
                    i += 2;
                    continue;
                }
                i += 1;
                break;
            }
            buf.push(line[i]);
            i += 1;
        }
        // Anything between the closing quote and the delimiter is kept, as csv readers do.
        while i < line.len() && line[i] != delim {
            buf.push(line[i]);
            i += 1;
        }
        let next = (i < line.len()).then_some(i + 1);
        (std::borrow::Cow::Owned(buf), next)
    } else {
        let end = memchr::memchr(delim, &line[pos..]).map_or(line.len(), |e| pos + e);
        let next = (end < line.len()).then_some(end + 1);
        (std::borrow::Cow::Borrowed(&line[pos..end]), next)
    }
}

/// Where the record that starts at `pos` ends (index of its `\n`, or the buffer end),
/// skipping newlines inside quotes.
pub(crate) fn record_end(buf: &[u8], pos: usize, quote: u8) -> usize {
    let mut i = pos;
    loop {
        let nl = memchr::memchr(b'\n', &buf[i..]).map_or(buf.len(), |e| i + e);
        // Only a line with a quote can hide a newline; count quotes up to the newline.
        let q = memchr::memchr_iter(quote, &buf[pos..nl]).count();
        if q.is_multiple_of(2) || nl == buf.len() {
            return nl;
        }
        i = nl + 1;
    }
}

pub(crate) fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// 0x80 in every byte of `w` that is zero and 0 elsewhere — exactly, with no false
/// positives from borrows (the low seven bits are added separately from the high one).
pub(crate) fn zero_bytes(w: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((w & LOW7).wrapping_add(LOW7)) | w | LOW7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields() {
        let f = split_record(br#"a,"b,c","d""e",,"x""#, b',', b'"');
        let f: Vec<&[u8]> = f.iter().map(|c| &**c).collect();
        assert_eq!(f, [&b"a"[..], b"b,c", b"d\"e", b"", b"x"]);
        let buf = b"1,\"two\nlines\",3\n4,5,6\n";
        assert_eq!(record_end(buf, 0, b'"'), 15);
        assert_eq!(record_end(buf, 16, b'"'), 21);
    }

    #[test]
    fn zero_bytes_is_exact() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Plant zero bytes and 0x80/0x01 neighbours, where borrow tricks go wrong.
            let w = x & 0xff00_ff80_0100_ffffu64.rotate_left((x % 64) as u32);
            let want = (0..8).fold(0u64, |m, b| {
                if (w >> (8 * b)) & 0xff == 0 {
                    m | 0x80 << (8 * b)
                } else {
                    m
                }
            });
            assert_eq!(zero_bytes(w), want, "{w:#018x}");
        }
    }
}

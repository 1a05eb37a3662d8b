//! The `.npy` header: magic, version, and the Python dict literal that names the dtype,
//! the memory order and the shape.
//!
//! The format (NumPy's `numpy/lib/format.py`, NEP 1): `\x93NUMPY`, a major and minor
//! version byte, the header length (u16 little-endian in version 1, u32 in versions 2 and
//! 3), then the header: `{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }`
//! padded with spaces and a newline so that the data starts at a multiple of 64 bytes.
//! Version 3 only allows UTF-8 in the header (for structured field names). The parser
//! here reads exactly that dict literal and nothing else (no `eval`), and every size it
//! derives is checked, since the file may come from anywhere.

use tessera_core::chunks::checked_numel;
use tessera_core::dtype::DType;

/// The magic string every `.npy` file starts with.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Byte order of the stored elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    Little,
    Big,
}

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub dtype: DType,
    pub order: Order,
    pub fortran: bool,
    pub shape: Vec<usize>,
    /// Offset of the first data byte.
    pub data_offset: u64,
}

impl Header {
    /// Bytes of data the header promises (checked).
    pub(crate) fn data_bytes(&self) -> Option<u64> {
        let n = checked_numel(&self.shape)? as u64;
        n.checked_mul(self.dtype.size() as u64)
    }
}

/// Parses the header at the start of `bytes` (which may hold more than the header).
/// Returns `Err(None)` when more bytes are needed (`Err(Some(n))`: at least `n`) and
/// `Err` with a message when the bytes are not a `.npy` header.
pub(crate) fn parse(bytes: &[u8]) -> Result<Header, Parse> {
    if bytes.len() < 10 {
        return Err(Parse::Need(10));
    }
    if &bytes[..6] != MAGIC {
        return Err(Parse::Bad(
            "it does not start with the .npy magic string \\x93NUMPY".into(),
        ));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(Parse::Need(12));
            }
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (len as usize, 12)
        }
        _ => {
            return Err(Parse::Bad(format!(
                "format version {major}.{minor} is not one of 1.0, 2.0, 3.0"
            )))
        }
    };
    let end = start
        .checked_add(len)
        .ok_or_else(|| Parse::Bad("header length overflows".into()))?;
    if bytes.len() < end {
        return Err(Parse::Need(end));
    }
    let text = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| Parse::Bad("the header is not UTF-8 text".into()))?;
    if major < 3 && !text.is_ascii() {
        return Err(Parse::Bad(format!(
            "a version {major}.0 header must be ASCII"
        )));
    }
    let dict = Literal::parse_dict(text).map_err(Parse::Bad)?;
    let field = |name: &str| {
        dict.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Parse::Bad(format!("the header has no '{name}' key")))
    };
    let descr =
        match field("descr")? {
            Literal::Str(s) => s.clone(),
            Literal::List => return Err(Parse::Bad(
                "structured dtypes (a list 'descr') are not supported; store one array per field"
                    .into(),
            )),
            other => {
                return Err(Parse::Bad(format!(
                    "'descr' must be a string, found {other:?}"
                )))
            }
        };
    let (dtype, order) = parse_descr(&descr).map_err(Parse::Bad)?;
    let fortran = match field("fortran_order")? {
        Literal::Bool(b) => *b,
        other => {
            return Err(Parse::Bad(format!(
                "'fortran_order' must be True or False, found {other:?}"
            )))
        }
    };
    let shape = match field("shape")? {
        Literal::Tuple(dims) => dims.clone(),
        other => {
            return Err(Parse::Bad(format!(
                "'shape' must be a tuple of integers, found {other:?}"
            )))
        }
    };
    let header = Header {
        dtype,
        order,
        fortran,
        shape,
        data_offset: end as u64,
    };
    if header.data_bytes().is_none() {
        return Err(Parse::Bad(format!(
            "shape {:?} of {} has more bytes than fit in 64 bits",
            header.shape, header.dtype
        )));
    }
    Ok(header)
}

/// Why a header did not parse.
#[derive(Debug)]
pub(crate) enum Parse {
    /// At least this many bytes are needed.
    Need(usize),
    /// Not a valid header.
    Bad(String),
}

/// `'<f8'` -> (f64, little endian). The NumPy type codes tessera holds.
fn parse_descr(descr: &str) -> Result<(DType, Order), String> {
    let supported = "supported: b1, i1, i2, i4, i8, u1, u2, u4, u8, f4, f8 in either byte order";
    let mut chars = descr.chars();
    let (order, code) = match chars.next() {
        Some('<') => (Order::Little, chars.as_str()),
        Some('>') => (Order::Big, chars.as_str()),
        Some('|') | Some('=') => (Order::Little, chars.as_str()),
        _ => (Order::Little, descr),
    };
    // '=' is native order; tessera's supported targets are little endian.
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return Err(format!("dtype '{descr}' is not supported ({supported})")),
    };
    Ok((dtype, order))
}

/// The NumPy type code of `dtype` in little-endian order (`'<f8'`).
pub(crate) fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// The complete header (magic to newline) for a C-order little-endian array: version 1.0
/// when the dict fits a u16 length, else 2.0; padded so the data starts at a multiple of
/// 64 bytes.
pub(crate) fn encode(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {dims}, }}",
        descr(dtype)
    );
    let build = |prefix: usize, version: u8| {
        // dict + spaces + '\n' so that prefix + len is a multiple of 64.
        let unpadded = prefix + dict.len() + 1;
        let pad = (64 - unpadded % 64) % 64;
        let len = dict.len() + pad + 1;
        let mut out = Vec::with_capacity(prefix + len);
        out.extend_from_slice(MAGIC);
        out.push(version);
        out.push(0);
        if version == 1 {
            out.extend_from_slice(&(len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.extend(std::iter::repeat_n(b' ', pad));
        out.push(b'\n');
        out
    };
    if dict.len() + 64 < u16::MAX as usize {
        build(10, 1)
    } else {
        build(12, 2)
    }
}

/// The Python literals a `.npy` header dict holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
    /// A list (a structured dtype's descr); its contents are not needed.
    List,
}

/// A tiny recursive-descent parser for `{'key': literal, ...}`.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Literal {
    fn parse_dict(text: &str) -> Result<Vec<(String, Literal)>, String> {
        let mut c = Cursor {
            s: text.as_bytes(),
            i: 0,
        };
        c.skip_ws();
        c.expect(b'{')?;
        let mut out = Vec::new();
        loop {
            c.skip_ws();
            if c.eat(b'}') {
                break;
            }
            let key = c.string()?;
            c.skip_ws();
            c.expect(b':')?;
            c.skip_ws();
            let value = c.literal()?;
            out.push((key, value));
            c.skip_ws();
            if c.eat(b',') {
                continue;
            }
            c.skip_ws();
            c.expect(b'}')?;
            break;
        }
        c.skip_ws();
        if c.i != c.s.len() {
            return Err(format!(
                "unexpected text after the header dict at byte {}",
                c.i
            ));
        }
        Ok(out)
    }
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {} of the header dict",
                b as char, self.i
            ))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {}", self.i)),
        };
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != quote {
            if self.s[self.i] == b'\\' {
                return Err("escapes in header strings are not supported".into());
            }
            self.i += 1;
        }
        if self.i == self.s.len() {
            return Err("unterminated string in the header dict".into());
        }
        let text = std::str::from_utf8(&self.s[start..self.i])
            .map_err(|_| "a header string is not UTF-8".to_string())?
            .to_string();
        self.i += 1;
        Ok(text)
    }

    fn literal(&mut self) -> Result<Literal, String> {
        match self.s.get(self.i) {
            Some(b'\'' | b'"') => Ok(Literal::Str(self.string()?)),
            Some(b'(') => {
                self.i += 1;
                let mut dims = Vec::new();
                loop {
                    self.skip_ws();
                    if self.eat(b')') {
                        break;
                    }
                    dims.push(self.integer()?);
                    self.skip_ws();
                    if self.eat(b',') {
                        continue;
                    }
                    self.expect(b')')?;
                    break;
                }
                Ok(Literal::Tuple(dims))
            }
            Some(b'[') => {
                // Skip a (possibly nested) list without interpreting it.
                let mut depth = 0usize;
                while let Some(&b) = self.s.get(self.i) {
                    self.i += 1;
                    match b {
                        b'[' | b'(' => depth += 1,
                        b']' | b')' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(Literal::List);
                            }
                        }
                        _ => {}
                    }
                }
                Err("unterminated list in the header dict".into())
            }
            _ if self.s[self.i..].starts_with(b"True") => {
                self.i += 4;
                Ok(Literal::Bool(true))
            }
            _ if self.s[self.i..].starts_with(b"False") => {
                self.i += 5;
                Ok(Literal::Bool(false))
            }
            _ => Err(format!("unexpected value at byte {} of the header", self.i)),
        }
    }

    fn integer(&mut self) -> Result<usize, String> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        // Python 2 era writers put an `L` after longs.
        let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
        self.eat(b'L');
        digits
            .parse::<usize>()
            .map_err(|_| format!("expected a non-negative dimension at byte {start}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    #[test]
    fn parses_what_numpy_writes() {
        // numpy.save of np.zeros((3, 4), '>i4', order='F') writes exactly this dict.
        let dict = "{'descr': '>i4', 'fortran_order': True, 'shape': (3, 4), }          \n";
        let h = parse(&header(dict)).unwrap();
        assert_eq!(h.dtype, DType::I32);
        assert_eq!(h.order, Order::Big);
        assert!(h.fortran);
        assert_eq!(h.shape, vec![3, 4]);
        assert_eq!(h.data_offset, 10 + dict.len() as u64);
        let scalar = parse(&header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n",
        ))
        .unwrap();
        assert_eq!(scalar.shape, Vec::<usize>::new());
        let one = parse(&header(
            "{'shape': (7,), 'fortran_order': False, 'descr': '|b1'}\n",
        ))
        .unwrap();
        assert_eq!((one.dtype, one.shape), (DType::Bool, vec![7]));
    }

    #[test]
    fn encoded_headers_round_trip_and_align_data_to_64_bytes() {
        for (dtype, shape) in [
            (DType::F64, vec![]),
            (DType::I8, vec![5]),
            (DType::U32, vec![3, 0, 1_000_000_007]),
        ] {
            let bytes = encode(dtype, &shape);
            assert_eq!(bytes.len() % 64, 0);
            assert_eq!(*bytes.last().unwrap(), b'\n');
            let h = parse(&bytes).unwrap();
            assert_eq!((h.dtype, &h.shape, h.fortran), (dtype, &shape, false));
            assert_eq!(h.data_offset as usize, bytes.len());
        }
    }

    #[test]
    fn bad_headers_are_errors_that_say_why() {
        let bad = |bytes: &[u8]| match parse(bytes) {
            Err(Parse::Bad(m)) => m,
            other => panic!("expected a bad header, got {other:?}"),
        };
        assert!(bad(b"PK\x03\x04notnpy!").contains("magic"));
        let mut v9 = MAGIC.to_vec();
        v9.extend_from_slice(&[9, 0, 0, 0]);
        assert!(bad(&v9).contains("version 9.0"));
        assert!(bad(&header(
            "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }"
        ))
        .contains("'<c16' is not supported"));
        assert!(bad(&header(
            "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }"
        ))
        .contains("structured"));
        assert!(bad(&header("{'descr': '<f8', 'shape': (2,), }")).contains("fortran_order"));
        assert!(bad(&header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }"
        ))
        .contains("non-negative"));
        assert!(bad(&header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"
        ))
        .contains("64 bits"));
        assert!(bad(&header(
            "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }"
        ))
        .contains("unexpected value"));
    }

    #[test]
    fn short_input_asks_for_more_bytes() {
        let full = encode(DType::F32, &[2, 2]);
        assert!(matches!(parse(&full[..4]), Err(Parse::Need(10))));
        assert!(matches!(parse(&full[..20]), Err(Parse::Need(n)) if n == full.len()));
    }
}

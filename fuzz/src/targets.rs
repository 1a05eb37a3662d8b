//! The fuzz targets: each takes raw bytes to one of the places where tessera reads what it
//! did not write — a CSV file, an `.npy` file, a Zarr array's metadata and chunks, the
//! dataframe protocol's wire messages, and the raw C values a plugin hands the host —
//! through the public functions a user or a plugin reaches, and runs what those bytes
//! build as far as it goes (a CSV file is read and computed, a decoded program is run
//! on a small partition). An error is a right answer; a panic, caught or not, is a bug.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use serde_json::{Map, Value};
use tessera::frame::{read_csv, CsvOptions};
use tessera::io::leftovers;
use tessera::io::npy::from_npy;
use tessera::io::zarr::{from_zarr, ZarrStore};
use tessera_core::frame::{
    col, lit, program_schema, AggFunc, AggSpec, DataFrameBackend, FrameCapabilities, FrameProgram,
    FrameStep, JoinAlgorithm, JoinSpec, JoinType, SortKey,
};
use tessera_core::ChunkSpec;
use tessera_plugin_abi as abi;
use tessera_plugin_ffi::{convert, wire};

/// Arrays whose declared size is beyond this are opened and planned but not computed: a
/// shape of 10¹⁵ elements with a fill value is a valid array, not a bug to find.
const COMPUTE_LIMIT_BYTES: u64 = 16 << 20;

/// Nor are arrays of more chunks than this: 65,535 × 3 in chunks of 2 × 2 is 65,536
/// chunk files to look for, a minute of valid work in a debug build (as many tasks as
/// Dask would schedule), not a hang.
const COMPUTE_LIMIT_CHUNKS: usize = 1024;

/// One place tessera reads untrusted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A CSV file read with `read_csv` (tokenizer, type inference, parsing) and computed,
    /// under options the input's first byte picks.
    Csv,
    /// An `.npy` file opened with `from_npy` (header, dtype, shape, sizes) and computed.
    Npy,
    /// A Zarr v3 (`zarr.json`) or v2 (`.zarray`) array: metadata, then the bytes after
    /// the first NUL as its first chunk; opened with `from_zarr` and computed.
    Zarr,
    /// A dataframe wire message: parsed, every value tried as each protocol item
    /// (expression, program, names, aggregations, sort keys, join, capabilities), and
    /// each decoded program checked and run on a five-row partition of the CPU backend.
    FrameWire,
    /// The raw C values a plugin hands the host: dtype codes, scalars, random specs,
    /// shapes, index maps, slices, op names and capability texts.
    PluginRaw,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 5] = [
        Target::Csv,
        Target::Npy,
        Target::Zarr,
        Target::FrameWire,
        Target::PluginRaw,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Target::Csv => "csv",
            Target::Npy => "npy",
            Target::Zarr => "zarr",
            Target::FrameWire => "frame_wire",
            Target::PluginRaw => "plugin_raw",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The largest input the mutator makes.
    pub fn max_len(self) -> usize {
        match self {
            Target::Csv | Target::Zarr => 4096,
            Target::Npy => 2048,
            Target::FrameWire => 8192,
            Target::PluginRaw => 512,
        }
    }

    /// The seed corpus: valid inputs of every shape the format has, built here from
    /// the writers where there is one (so they stay valid as the formats evolve).
    pub fn corpus(self) -> Vec<Vec<u8>> {
        match self {
            Target::Csv => csv_corpus(),
            Target::Npy => npy_corpus(),
            Target::Zarr => zarr_corpus(),
            Target::FrameWire => wire_corpus(),
            Target::PluginRaw => raw_corpus(),
        }
    }

    /// Tokens the mutator inserts: the format's keywords and delimiters.
    pub fn dictionary(self) -> &'static [&'static [u8]] {
        match self {
            Target::Csv => &[
                b"\"",
                b"\"\"",
                b",",
                b"\n",
                b"\r\n",
                b"NA",
                b"null",
                b"true",
                b"False",
                b"2024-02-29",
                b"2024-13-40",
                b"1970-01-01T00:00:00",
                b"\xef\xbb\xbf",
                b"1.5e",
                b"-",
                b"nan",
            ],
            Target::Npy => &[
                b"\x93NUMPY",
                b"'descr'",
                b"'shape'",
                b"'fortran_order'",
                b"True",
                b"False",
                b"'<f8'",
                b"'>i4'",
                b"'|b1'",
                b"'<u2'",
                b"'<c16'",
                b"'|O'",
                b"'<U3'",
                b"(0,)",
                b"()",
                b"(1, 2, 3)",
                b", ",
                b"}",
            ],
            Target::Zarr | Target::FrameWire | Target::PluginRaw => &[
                b"null",
                b"true",
                b"false",
                b"[]",
                b"{}",
                b"\"\"",
                b"\"\\u0000\"",
                b"\"\\ud800\"",
                b"\":\"",
                b",",
                b"\"name\"",
                b"\"configuration\"",
                b"\"shape\"",
                b"\"chunk_shape\"",
                b"\"data_type\"",
                b"\"fill_value\"",
                b"\"codecs\"",
                b"\"op\"",
                b"\"args\"",
                b"\"column\"",
                b"\"steps\"",
                b"\"type\"",
                b"\"func\"",
                b"\"how\"",
                b"\"int64\"",
                b"\"float32\"",
                b"\"NaN\"",
                b"\"Infinity\"",
                b"\"sharding_indexed\"",
                b"\"zstd\"",
                b"\"gzip\"",
                b"\"transpose\"",
                b"\"bytes\"",
            ],
        }
    }

    /// Runs one input: true when tessera accepted it all the way (read, decoded and
    /// computed), false when it gave an error somewhere. A panic unwinds out of here (or
    /// is caught inside tessera's task boundary and counted by the runner's hook).
    pub fn run(self, input: &[u8], scratch: &Scratch) -> bool {
        match self {
            Target::Csv => run_csv(input, scratch),
            Target::Npy => run_npy(input, scratch),
            Target::Zarr => run_zarr(input, scratch),
            Target::FrameWire => run_wire(input),
            Target::PluginRaw => run_raw(input),
        }
    }
}

/// A folder for the files the targets write, removed when dropped. Each input gets its
/// own name, so no reader can see a previous input under the same path.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    next: AtomicU64,
}

impl Scratch {
    /// A new folder under `/dev/shm` where there is one (files in memory), else the
    /// system's temporary folder; folders that runs which were killed left there are
    /// removed first.
    ///
    /// # Errors
    /// The folder cannot be made.
    pub fn new() -> std::io::Result<Scratch> {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        // A run killed by an abort or the out-of-memory killer cannot remove its folder;
        // the next one removes those of runs that are gone (see `tessera::io::leftovers`).
        leftovers::sweep(&base);
        let dir = base.join(leftovers::name("tessera-fuzz", leftovers::Kind::Tmp));
        fs::create_dir_all(&dir)?;
        Ok(Scratch {
            dir,
            next: AtomicU64::new(0),
        })
    }

    fn path(&self, ext: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("in-{n}{ext}"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn run_csv(input: &[u8], scratch: &Scratch) -> bool {
    let (flags, body) = input.split_first().unwrap_or((&0, &[]));
    let path = scratch.path(".csv");
    if fs::write(&path, body).is_err() {
        return false;
    }
    let mut options = CsvOptions {
        has_header: flags & 1 == 0,
        newlines_in_values: flags & 2 != 0,
        infer_rows: if flags & 4 != 0 { 2 } else { 1000 },
        partition_bytes: if flags & 8 != 0 { 7 } else { 1 << 20 },
        ..CsvOptions::default()
    };
    if flags & 16 != 0 {
        options.delimiter = b';';
    }
    if flags & 32 != 0 {
        options.parse_dates = vec!["d".into()];
    }
    if flags & 64 != 0 {
        options.dtypes = vec![
            ("a".into(), DataType::Int64),
            ("b".into(), DataType::Float64),
        ];
    }
    let r = read_csv(&path.to_string_lossy(), options)
        .and_then(|df| df.compute())
        .and_then(|out| out.concat());
    let accepted = r.is_ok();
    let _ = fs::remove_file(&path);
    accepted
}

fn run_npy(input: &[u8], scratch: &Scratch) -> bool {
    let path = scratch.path(".npy");
    if fs::write(&path, input).is_err() {
        return false;
    }
    let mut accepted = true;
    for chunks in [ChunkSpec::Auto, ChunkSpec::Uniform(2)] {
        accepted &= from_npy(&path, chunks, Some("cpu"))
            .and_then(|a| computed(&a))
            .is_ok();
    }
    let _ = fs::remove_file(&path);
    accepted
}

/// Computes `a` unless it is larger than [`COMPUTE_LIMIT_BYTES`] or in more chunks than
/// [`COMPUTE_LIMIT_CHUNKS`].
fn computed(a: &tessera::Array) -> tessera_core::Result<()> {
    if a.nbytes() <= COMPUTE_LIMIT_BYTES && a.chunks().count() <= COMPUTE_LIMIT_CHUNKS {
        a.compute()?;
    }
    Ok(())
}

fn run_zarr(input: &[u8], scratch: &Scratch) -> bool {
    let dir = scratch.path(".zarr");
    let split = input.iter().position(|&b| b == 0).unwrap_or(input.len());
    let (meta, chunk) = (&input[..split], input.get(split + 1..).unwrap_or(&[]));
    // A v2 array's metadata is `.zarray` and its first chunk `0.0` (or `0`); a v3
    // array's is `zarr.json` and `c/0/0` (or `c/0`).
    let v2 = meta.windows(15).any(|w| w == b"\"zarr_format\":2");
    let written = fs::create_dir_all(dir.join("c/0")).is_ok()
        && if v2 {
            fs::write(dir.join(".zarray"), meta).is_ok()
                && fs::write(dir.join("0.0"), chunk).is_ok()
                && fs::write(dir.join("0"), chunk).is_ok()
        } else {
            fs::write(dir.join("zarr.json"), meta).is_ok()
                && fs::write(dir.join("c/0/0"), chunk).is_ok()
        };
    let mut accepted = written;
    if written {
        match ZarrStore::open(&dir.to_string_lossy()) {
            Ok(store) => {
                for chunks in [None, Some(&[3usize, 3][..])] {
                    accepted &= from_zarr(&store, "", chunks, Some("cpu"))
                        .and_then(|a| computed(&a))
                        .is_ok();
                }
            }
            Err(_) => accepted = false,
        }
    }
    let _ = fs::remove_dir_all(&dir);
    accepted
}

/// The five-row partition decoded programs run on: every column type the seeds' programs
/// read, with a null and a NaN.
fn wire_batch() -> RecordBatch {
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "a",
            Arc::new(Int64Array::from(vec![
                Some(1),
                None,
                Some(-3),
                Some(i64::MAX),
                Some(0),
            ])),
        ),
        (
            "b",
            Arc::new(Float64Array::from(vec![
                Some(1.5),
                Some(f64::NAN),
                None,
                Some(-0.0),
                Some(1e300),
            ])),
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("x"),
                Some(""),
                None,
                Some("héllo, \"w\""),
                Some("x"),
            ])),
        ),
        (
            "d",
            Arc::new(Date32Array::from(vec![
                Some(0),
                Some(19_000),
                None,
                Some(-1),
                Some(60),
            ])),
        ),
        (
            "f",
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                Some(true),
                Some(false),
            ])),
        ),
    ];
    let schema = Schema::new(
        columns
            .iter()
            .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(
        Arc::new(schema),
        columns.into_iter().map(|(_, c)| c).collect(),
    )
    .expect("the fixed batch is valid")
}

fn run_wire(input: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    let Ok(map) = wire::parse_message(text) else {
        return false;
    };
    let mut ran = false;
    let batch = wire_batch();
    let backend = tessera_cpu_frame::CpuFrameBackend::default();
    for v in map.values() {
        let _ = wire::expr_from(v);
        let _ = wire::names_from(v);
        let _ = wire::aggs_from(v);
        let _ = wire::sort_from(v);
        let _ = wire::join_from(v);
        let _ = wire::capabilities_from(v);
        if let Ok(program) = wire::program_from(v) {
            // What the engine does before a backend sees a program: type it over the
            // input's schema. A program that types must then run or give an error.
            if program_schema(&batch.schema(), &program).is_ok() {
                if let Ok(part) = backend.import_batch(batch.clone()) {
                    ran |= backend.evaluate(&part, &program).is_ok();
                }
            }
        }
    }
    ran
}

/// Reads little-endian integers off the front of the input, zeros past its end; every
/// field takes 8 bytes, a `u32` the low half of them (the seeds lay fields out so).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let n = self.0.len().min(8);
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(b)
    }
    fn u32(&mut self) -> u32 {
        self.u64() as u32
    }
}

fn run_raw(input: &[u8]) -> bool {
    let mut r = Reader(input);
    let mut accepted = convert::decode_dtype(r.u32(), "fuzz").is_ok();
    accepted &= convert::scalar_from_raw(abi::RawScalar {
        dtype: r.u32(),
        bits: r.u64(),
    })
    .is_ok();
    accepted &= convert::random_from_raw(&abi::RawRandomSpec {
        seed: r.u64(),
        stream: r.u64(),
        dist: r.u32(),
        dtype: r.u32(),
        a: f64::from_bits(r.u64()),
        b: f64::from_bits(r.u64()),
        ia: r.u64() as i64,
        ib: r.u64() as i64,
    })
    .is_ok();
    let ndim = (r.u32() % 40) as usize;
    let extents: Vec<u64> = (0..ndim).map(|_| r.u64()).collect();
    let axes: Vec<abi::RawAxisMap> = (0..ndim)
        .map(|_| abi::RawAxisMap {
            start: r.u64() as i64,
            step: r.u64() as i64,
            out_axis: r.u64() as i64,
        })
        .collect();
    let slices: Vec<abi::RawAxisSlice> = (0..ndim)
        .map(|_| abi::RawAxisSlice {
            start: r.u64(),
            step: r.u64() as i64,
            len: r.u64(),
        })
        .collect();
    // SAFETY: every pointer below points into a live Vec holding exactly the count passed
    // with it, as a plugin's valid pointers would; only the values are hostile.
    #[allow(unsafe_code)]
    unsafe {
        accepted &= convert::shape_from_raw(extents.as_ptr(), ndim as u32, "fuzz").is_ok();
        let map = abi::RawIndexMap {
            ndim: ndim as u32,
            src_shape: extents.as_ptr(),
            axes: axes.as_ptr(),
        };
        accepted &= convert::index_map_from_raw(&map).is_ok();
        accepted &= convert::slices_from_raw(slices.as_ptr(), ndim as u32).is_ok();
    }
    // What is left is text: op names, and a capability message as a frame plugin
    // declares its own.
    let rest = String::from_utf8_lossy(r.0);
    let named = convert::unary_from_name(&rest).is_ok()
        || convert::binary_from_name(&rest).is_ok()
        || convert::reduce_from_name(&rest).is_ok();
    let declared = wire::parse_message(&rest)
        .and_then(|m| wire::capabilities_from(wire::field(&m, "capabilities")?))
        .is_ok();
    accepted && (named || declared)
}

fn csv_corpus() -> Vec<Vec<u8>> {
    let texts: [&[u8]; 10] = [
        b"a,b,s,d\n1,1.5,x,2024-01-31\n2,,\"y, z\",2024-02-29\n-3,NaN,\"q\"\"uote\",1970-01-01\n",
        b"a,b\n1,2\n3,4\n",
        b"a,b,c\n\"multi\nline\",2,true\n\"\",NA,False\n",
        b"x;y\n1;2\n",
        b"\xef\xbb\xbfa,b\r\n1,2\r\n3,4\r\n",
        b"a,b\n1\n2,3,4\n",
        b"a,a,\n1,2,3\n",
        b"n\n9223372036854775807\n-9223372036854775808\n1e308\n",
        b"d,t\n2024-01-01 10:00:00,2024-01-01T10:00:00.123456\n,\n",
        b"",
    ];
    let mut out = Vec::new();
    for t in texts {
        for flags in [0u8, 1, 2, 4 | 8] {
            let mut v = vec![flags];
            v.extend_from_slice(t);
            out.push(v);
        }
    }
    out.push(b"\x20d,v\n2024-01-31,1\n1970-01-01 00:00:01,\n".to_vec());
    out.push(b"\x40a,b\n1,2.5\n,\n".to_vec());
    out
}

/// An `.npy` file: magic, version, header length, the dict padded to 64 bytes, data.
fn npy_file(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let len_bytes = if version == 1 { 2 } else { 4 };
    let unpadded = 6 + 2 + len_bytes + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    let mut f = b"\x93NUMPY".to_vec();
    f.extend_from_slice(&[version, 0]);
    if version == 1 {
        f.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        f.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(data);
    f
}

fn npy_corpus() -> Vec<Vec<u8>> {
    let f64s: Vec<u8> = [1.5f64, -0.0, f64::NAN, 4.0, 1e300, -2.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let i32s: Vec<u8> = (0..6i32).flat_map(|v| v.to_be_bytes()).collect();
    vec![
        npy_file(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }",
            &f64s,
        ),
        npy_file(
            1,
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
            &f64s,
        ),
        npy_file(
            2,
            "{'descr': '>i4', 'fortran_order': False, 'shape': (6,), }",
            &i32s,
        ),
        npy_file(
            3,
            "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 1, 3), }",
            &[1, 0, 1, 1, 0, 0],
        ),
        npy_file(
            1,
            "{'descr': '<u2', 'fortran_order': False, 'shape': (), }",
            &[7, 0],
        ),
        npy_file(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
            &[],
        ),
    ]
}

fn zarr_corpus() -> Vec<Vec<u8>> {
    let v3 = |dtype: &str, fill: &str, codecs: &str| {
        format!(
            r#"{{"zarr_format":3,"node_type":"array","shape":[4,3],"data_type":"{dtype}","chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":[2,2]}}}},"chunk_key_encoding":{{"name":"default","configuration":{{"separator":"/"}}}},"fill_value":{fill},"codecs":[{codecs}]}}"#
        )
    };
    let bytes = r#"{"name":"bytes","configuration":{"endian":"little"}}"#;
    let f64s: Vec<u8> = [1.5f64, -0.0, f64::NAN, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let with_chunk = |meta: String, chunk: &[u8]| {
        let mut v = meta.into_bytes();
        v.push(0);
        v.extend_from_slice(chunk);
        v
    };
    vec![
        with_chunk(v3("float64", "0.0", bytes), &f64s),
        with_chunk(v3("float64", "\"NaN\"", bytes), &f64s),
        with_chunk(v3("int16", "-1", bytes), &[1, 0, 2, 0, 3, 0, 4, 0]),
        with_chunk(
            v3("uint8", "0", &format!(r#"{{"name":"transpose","configuration":{{"order":[1,0]}}}},{bytes}"#)),
            &[1, 2, 3, 4],
        ),
        with_chunk(
            v3("float32", "0.0", &format!(r#"{bytes},{{"name":"gzip","configuration":{{"level":1}}}}"#)),
            &gzip_stored(&[1.5f32, -0.0, 2.0, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()),
        ),
        with_chunk(
            v3(
                "int32",
                "0",
                &format!(r#"{{"name":"sharding_indexed","configuration":{{"chunk_shape":[1,1],"codecs":[{bytes}],"index_codecs":[{bytes}]}}}}"#),
            ),
            &[0xff; 64],
        ),
        with_chunk(
            r#"{"zarr_format":2,"shape":[4,3],"chunks":[2,2],"dtype":"<f8","compressor":null,"fill_value":0.0,"order":"C","filters":null}"#
                .to_string(),
            &f64s,
        ),
    ]
}

/// `data` as a gzip member holding one stored (uncompressed) deflate block.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    let len = data.len() as u16;
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&(!crc).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn wire_corpus() -> Vec<Vec<u8>> {
    let programs = [
        FrameProgram {
            steps: vec![
                FrameStep::Filter(col("a").gt(lit(0i64))),
                FrameStep::Project(vec![
                    ("a2".into(), col("a") * lit(2i64)),
                    ("b".into(), col("b")),
                ]),
            ],
        },
        FrameProgram {
            steps: vec![FrameStep::Project(vec![
                ("up".into(), col("s").upper()),
                ("n".into(), col("s").str_len()),
                ("y".into(), col("d").year()),
                ("c".into(), col("b").clip(lit(0.0), lit(1.0))),
                ("i".into(), col("a").is_in([1i64, 3])),
                ("k".into(), col("f").and(col("a").is_null())),
            ])],
        },
    ];
    let join = JoinSpec {
        left_on: vec!["a".into()],
        right_on: vec!["a".into()],
        how: JoinType::Left,
        suffixes: ("_x".into(), "_y".into()),
        algorithm: JoinAlgorithm::Hash,
    };
    let caps = FrameCapabilities {
        missing_aggregations: vec![AggFunc::Std],
        windows: true,
        ..FrameCapabilities::default()
    };
    let mut out = Vec::new();
    for p in &programs {
        let mut m = Map::new();
        m.insert("program".into(), wire::program_to(p));
        m.insert("keys".into(), wire::names_to(&["a".into(), "s".into()]));
        m.insert(
            "aggs".into(),
            wire::aggs_to(&[AggSpec::new("b", AggFunc::Mean, "b")]),
        );
        m.insert(
            "by".into(),
            wire::sort_to(&[SortKey {
                column: "b".into(),
                descending: true,
            }]),
        );
        m.insert("join".into(), wire::join_to(&join));
        m.insert("capabilities".into(), wire::capabilities_to(&caps));
        out.push(wire::message(m).into_bytes());
    }
    out.push(Value::Null.to_string().into_bytes());
    out
}

fn raw_corpus() -> Vec<Vec<u8>> {
    let mut caps = Map::new();
    caps.insert(
        "capabilities".into(),
        wire::capabilities_to(&FrameCapabilities::default()),
    );
    let mut out = Vec::new();
    for (dtype, tail) in [
        (1u32, "add"),
        (9, "sqrt"),
        (11, "sum"),
        (3, &*wire::message(caps)),
    ] {
        let mut v = Vec::new();
        v.extend_from_slice(&(dtype as u64).to_le_bytes());
        v.extend_from_slice(&(dtype as u64).to_le_bytes());
        v.extend_from_slice(&1.5f64.to_bits().to_le_bytes());
        for x in [
            7u64,
            0,
            2,
            dtype as u64,
            0f64.to_bits(),
            1f64.to_bits(),
            0,
            10,
            2,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        for x in [4u64, 5, 0, 1, 0, 0, 1, 1, 0, 2, 1, 4, 1, 5] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(tail.as_bytes());
        out.push(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The corpus is valid: every seed is accepted all the way except the ones kept for
    /// their edge — the empty CSV file and the ragged one under each of 4 option sets,
    /// under 2-row inference with 7-byte partitions a quoted newline (which needs
    /// `newlines_in_values`) and a float after two integers, and the `null` message —
    /// so mutations start from inputs that reach deep.
    #[test]
    fn the_seeds_are_valid_inputs() {
        let scratch = Scratch::new().unwrap();
        for t in Target::ALL {
            let refused: Vec<String> = t
                .corpus()
                .iter()
                .filter(|seed| !t.run(seed, &scratch))
                .map(|seed| String::from_utf8_lossy(seed).into_owned())
                .collect();
            let expected = match t {
                Target::Csv => 10,
                Target::FrameWire => 1,
                _ => 0,
            };
            assert_eq!(refused.len(), expected, "{}: {refused:#?}", t.name());
        }
    }

    #[test]
    fn a_seed_reads_back_its_values() {
        let scratch = Scratch::new().unwrap();
        let seed = &csv_corpus()[0];
        let path = scratch.path(".csv");
        fs::write(&path, &seed[1..]).unwrap();
        let df = read_csv(&path.to_string_lossy(), CsvOptions::default()).unwrap();
        assert_eq!(df.compute().unwrap().concat().unwrap().num_rows(), 3);
        let seed = &zarr_corpus()[0];
        let split = seed.iter().position(|&b| b == 0).unwrap();
        let dir = scratch.path(".zarr");
        fs::create_dir_all(dir.join("c/0")).unwrap();
        fs::write(dir.join("zarr.json"), &seed[..split]).unwrap();
        fs::write(dir.join("c/0/0"), &seed[split + 1..]).unwrap();
        let store = ZarrStore::open(&dir.to_string_lossy()).unwrap();
        let a = from_zarr(&store, "", None, Some("cpu")).unwrap();
        assert_eq!(a.compute().unwrap().to_f64_vec()[0], 1.5);
    }
}

//! [`ForeignFrameBackend`]: a plugin's dataframe table behind the ordinary
//! [`DataFrameBackend`] trait.
//!
//! Each primitive is one call through the table by name, its arguments in the frame wire
//! form. What comes back is checked against what the protocol says before anyone uses it:
//! the number of partitions, their row counts (a slice is clamped, a take has as many rows
//! as indices, a partitioning neither loses nor invents rows), their schemas (a program's
//! output is `program_schema` of its input, a join's is `JoinSpec::output_schema`, a sort
//! keeps its input's), and every exported batch (a valid struct array with the declared
//! schema and row count). A breach is [`Error::Plugin`], never trusted data. Declared gaps
//! are enforced here too: an aggregation or join algorithm the plugin declares missing is
//! [`Error::FrameUnsupported`] without calling it.

use std::any::Any;
use std::ffi::{c_void, CString};
use std::fmt;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{Schema, SchemaRef};
use serde_json::{Map, Value};
use tessera_plugin_abi as abi;

use tessera_core::error::{Error, Result};
use tessera_core::frame::{
    program_schema, AggSpec, DataFrameBackend, FrameCapabilities, FrameProgram, JoinSpec,
    Partition, PartitionData, SortKey,
};
use tessera_plugin_ffi::batch::{export_batch, import_batch, import_schema};
use tessera_plugin_ffi::wire;

use crate::status::{check, fault};

/// A loaded plugin's dataframe table (never unloaded).
pub(crate) struct FrameLib {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) table: &'static abi::DataFrameTable,
    pub(crate) caps: FrameCapabilities,
}

// SAFETY: the ABI requires every table function to be callable from any thread at once
// (the Rust SDK wraps a `Send + Sync` backend); the table is immutable plugin memory that
// is never unloaded.
#[allow(unsafe_code)]
unsafe impl Send for FrameLib {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for FrameLib {}

impl fmt::Debug for FrameLib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameLib")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish()
    }
}

/// A partition that lives inside a plugin.
pub struct ForeignPartition {
    handle: NonNull<c_void>,
    rows: usize,
    nbytes: usize,
    schema: SchemaRef,
    lib: Arc<FrameLib>,
}

// SAFETY: the handle is only passed back to the plugin's thread-safe table; the host never
// dereferences it.
#[allow(unsafe_code)]
unsafe impl Send for ForeignPartition {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for ForeignPartition {}

impl fmt::Debug for ForeignPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ForeignPartition({} {} rows)", self.lib.name, self.rows)
    }
}

impl Drop for ForeignPartition {
    fn drop(&mut self) {
        let t = self.lib.table;
        // SAFETY: a non-null handle from this plugin, released exactly once (here).
        #[allow(unsafe_code)]
        unsafe {
            (t.release_partition)(t.instance, self.handle.as_ptr())
        };
    }
}

impl PartitionData for ForeignPartition {
    fn backend(&self) -> &str {
        &self.lib.name
    }
    fn num_rows(&self) -> usize {
        self.rows
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn nbytes(&self) -> usize {
        self.nbytes
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A dataframe backend implemented by a plugin library.
#[derive(Debug)]
pub struct ForeignFrameBackend {
    lib: Arc<FrameLib>,
}

/// Column names and types (nullability and metadata are not part of the contract).
fn shape_of(s: &Schema) -> Vec<(String, arrow_schema::DataType)> {
    s.fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect()
}

impl ForeignFrameBackend {
    pub(crate) fn new(lib: FrameLib) -> ForeignFrameBackend {
        ForeignFrameBackend { lib: Arc::new(lib) }
    }

    /// The library this backend was loaded from.
    pub fn path(&self) -> &std::path::Path {
        &self.lib.path
    }

    fn fault(&self, op: &str, detail: impl Into<String>) -> Error {
        fault(&self.lib.name, op, detail)
    }

    fn check(&self, op: &str, status: i32) -> Result<()> {
        let t = self.lib.table;
        check(&self.lib.name, t.last_error, t.instance, op, status)
    }

    /// This plugin's partition, or [`Error::ForeignPartition`].
    fn handle<'a>(&self, p: &'a Partition, op: &str) -> Result<&'a ForeignPartition> {
        match p.as_any().downcast_ref::<ForeignPartition>() {
            Some(fp) if Arc::ptr_eq(&fp.lib, &self.lib) => Ok(fp),
            _ => Err(Error::ForeignPartition {
                op: op.to_string(),
                backend: self.lib.name.clone(),
                owner: p.backend().to_string(),
            }),
        }
    }

    /// Wraps what the plugin returned, reading its schema.
    fn adopt(&self, raw: abi::RawPartOut, op: &str) -> Result<Partition> {
        let handle = NonNull::new(raw.handle)
            .ok_or_else(|| self.fault(op, "reported success but returned no partition"))?;
        let rows = usize::try_from(raw.rows)
            .map_err(|_| self.fault(op, format!("a partition of {} rows", raw.rows)))?;
        let mut part = ForeignPartition {
            handle,
            rows,
            nbytes: usize::try_from(raw.nbytes).unwrap_or(usize::MAX),
            schema: Arc::new(Schema::empty()),
            lib: self.lib.clone(),
        };
        let t = self.lib.table;
        let mut s = abi::FFI_ArrowSchema::empty();
        // SAFETY: a live handle of this plugin; the schema is written into our struct.
        #[allow(unsafe_code)]
        let status = unsafe { (t.partition_schema)(t.instance, handle.as_ptr(), &mut s) };
        self.check(op, status)?;
        part.schema = import_schema(&s, op).map_err(|e| self.fault(op, e.to_string()))?;
        Ok(Arc::new(part))
    }

    /// Calls primitive `op` with `args` on `inputs` (and an extra batch), expecting
    /// `n_out` partitions.
    fn call(
        &self,
        op: &str,
        args: Map<String, Value>,
        inputs: &[&Partition],
        extra: Option<&RecordBatch>,
        n_out: usize,
    ) -> Result<Vec<Partition>> {
        let handles = inputs
            .iter()
            .map(|p| Ok(self.handle(p, op)?.handle.as_ptr()))
            .collect::<Result<Vec<_>>>()?;
        let c_op = CString::new(op).map_err(|_| Error::Internal("op name with NUL".into()))?;
        let c_args = CString::new(wire::message(args))
            .map_err(|_| Error::invalid(op, "arguments contain a NUL byte"))?;
        let mut extra_ffi = extra.map(export_batch).transpose()?;
        let (ea, es) = match extra_ffi.as_mut() {
            Some((a, s)) => (
                a as *mut abi::FFI_ArrowArray,
                s as *const abi::FFI_ArrowSchema,
            ),
            None => (std::ptr::null_mut(), std::ptr::null()),
        };
        let mut out: Vec<abi::RawPartOut> =
            (0..n_out).map(|_| abi::RawPartOut::default()).collect();
        let t = self.lib.table;
        // SAFETY: every pointer is valid for the call: NUL-terminated strings, `handles`
        // of live partitions of this plugin, an owned extra batch the plugin may move out
        // of (our copy is then released and dropping it is a no-op), and `n_out` slots.
        #[allow(unsafe_code)]
        let status = unsafe {
            (t.call)(
                t.instance,
                c_op.as_ptr(),
                c_args.as_ptr(),
                handles.as_ptr(),
                handles.len(),
                ea,
                es,
                out.as_mut_ptr(),
                n_out,
            )
        };
        self.check(op, status)?;
        out.into_iter().map(|raw| self.adopt(raw, op)).collect()
    }

    fn expect_schema(&self, op: &str, got: &Partition, want: &Schema) -> Result<()> {
        if shape_of(&got.schema()) != shape_of(want) {
            return Err(self.fault(
                op,
                format!(
                    "returned columns {:?}, the protocol requires {:?}",
                    shape_of(&got.schema()),
                    shape_of(want)
                ),
            ));
        }
        Ok(())
    }

    fn expect_rows(&self, op: &str, got: usize, want: usize) -> Result<()> {
        if got != want {
            return Err(self.fault(
                op,
                format!("returned {got} rows, the protocol requires {want}"),
            ));
        }
        Ok(())
    }

    fn single(&self, mut parts: Vec<Partition>, op: &str) -> Result<Partition> {
        parts
            .pop()
            .ok_or_else(|| self.fault(op, "returned no partition"))
    }

    fn unsupported(&self, op: String) -> Error {
        Error::FrameUnsupported {
            backend: self.lib.name.clone(),
            op,
        }
    }

    fn check_aggs(&self, aggs: &[AggSpec]) -> Result<()> {
        match aggs
            .iter()
            .find(|a| self.lib.caps.missing_aggregations.contains(&a.func))
        {
            Some(a) => Err(self.unsupported(format!("aggregate {}", a.func.name()))),
            None => Ok(()),
        }
    }

    fn agg_args(keys: &[String], aggs: &[AggSpec]) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("keys".into(), wire::names_to(keys));
        m.insert("aggs".into(), wire::aggs_to(aggs));
        m
    }
}

fn args(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl DataFrameBackend for ForeignFrameBackend {
    fn name(&self) -> &str {
        &self.lib.name
    }

    fn capabilities(&self) -> FrameCapabilities {
        self.lib.caps.clone()
    }

    fn import_batch(&self, batch: RecordBatch) -> Result<Partition> {
        let (mut a, s) = export_batch(&batch)?;
        let mut out = abi::RawPartOut::default();
        let t = self.lib.table;
        // SAFETY: a live struct array the plugin moves out of, its schema borrowed for
        // the call, one output slot.
        #[allow(unsafe_code)]
        let status = unsafe { (t.import_batch)(t.instance, &mut a, &s, &mut out) };
        self.check("import_batch", status)?;
        let p = self.adopt(out, "import_batch")?;
        self.expect_rows("import_batch", p.num_rows(), batch.num_rows())?;
        self.expect_schema("import_batch", &p, &batch.schema())?;
        Ok(p)
    }

    fn export_batch(&self, part: &Partition) -> Result<RecordBatch> {
        let fp = self.handle(part, "export_batch")?;
        let mut a = abi::FFI_ArrowArray::empty();
        let mut s = abi::FFI_ArrowSchema::empty();
        let t = self.lib.table;
        // SAFETY: a live handle; both outputs are written into our structs, which we own
        // and release on drop.
        #[allow(unsafe_code)]
        let status = unsafe { (t.export_batch)(t.instance, fp.handle.as_ptr(), &mut a, &mut s) };
        self.check("export_batch", status)?;
        let b = import_batch(a, &s, "export_batch")
            .map_err(|e| self.fault("export_batch", e.to_string()))?;
        self.expect_rows("export_batch", b.num_rows(), fp.rows)?;
        if shape_of(&b.schema()) != shape_of(&fp.schema) {
            return Err(self.fault(
                "export_batch",
                format!(
                    "exported columns {:?} but the partition declares {:?}",
                    shape_of(&b.schema()),
                    shape_of(&fp.schema)
                ),
            ));
        }
        Ok(b)
    }

    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition> {
        let want = program_schema(&part.schema(), program)?;
        let out = self.call(
            "evaluate",
            args(vec![("program", wire::program_to(program))]),
            &[part],
            None,
            1,
        )?;
        let p = self.single(out, "evaluate")?;
        self.expect_schema("evaluate", &p, &want)?;
        if p.num_rows() > part.num_rows() {
            return Err(self.fault(
                "evaluate",
                format!("{} rows from {}", p.num_rows(), part.num_rows()),
            ));
        }
        Ok(p)
    }

    fn hash_partition(
        &self,
        part: &Partition,
        keys: &[String],
        n: usize,
    ) -> Result<Vec<Partition>> {
        let n_value = Value::from(u64::try_from(n).unwrap_or(u64::MAX));
        let outs = self.call(
            "hash_partition",
            args(vec![("keys", wire::names_to(keys)), ("n", n_value)]),
            &[part],
            None,
            n,
        )?;
        for p in &outs {
            self.expect_schema("hash_partition", p, &part.schema())?;
        }
        self.expect_rows(
            "hash_partition",
            outs.iter().map(|p| p.num_rows()).sum(),
            part.num_rows(),
        )?;
        Ok(outs)
    }

    fn range_partition(
        &self,
        part: &Partition,
        by: &[SortKey],
        bounds: &RecordBatch,
    ) -> Result<Vec<Partition>> {
        let outs = self.call(
            "range_partition",
            args(vec![("by", wire::sort_to(by))]),
            &[part],
            Some(bounds),
            bounds.num_rows() + 1,
        )?;
        for p in &outs {
            self.expect_schema("range_partition", p, &part.schema())?;
        }
        self.expect_rows(
            "range_partition",
            outs.iter().map(|p| p.num_rows()).sum(),
            part.num_rows(),
        )?;
        Ok(outs)
    }

    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        self.check_aggs(aggs)?;
        let out = self.call(
            "aggregate_partial",
            Self::agg_args(keys, aggs),
            &[part],
            None,
            1,
        )?;
        self.single(out, "aggregate_partial")
    }

    fn aggregate_combine(
        &self,
        parts: &[Partition],
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        self.check_aggs(aggs)?;
        let inputs: Vec<&Partition> = parts.iter().collect();
        let out = self.call(
            "aggregate_combine",
            Self::agg_args(keys, aggs),
            &inputs,
            None,
            1,
        )?;
        self.single(out, "aggregate_combine")
    }

    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        self.check_aggs(aggs)?;
        let out = self.call(
            "aggregate_finalize",
            Self::agg_args(keys, aggs),
            &[state],
            None,
            1,
        )?;
        self.single(out, "aggregate_finalize")
    }

    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        if self
            .lib
            .caps
            .missing_join_algorithms
            .contains(&spec.algorithm)
        {
            return Err(self.unsupported(format!("join {:?}", spec.algorithm)));
        }
        let want = spec.output_schema(&left.schema(), &right.schema())?;
        let out = self.call(
            "join",
            args(vec![("spec", wire::join_to(spec))]),
            &[left, right],
            None,
            1,
        )?;
        let p = self.single(out, "join")?;
        self.expect_schema("join", &p, &want)?;
        Ok(p)
    }

    fn prepare_broadcast(&self, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let out = self.call(
            "prepare_broadcast",
            args(vec![("spec", wire::join_to(spec))]),
            &[right],
            None,
            1,
        )?;
        let p = self.single(out, "prepare_broadcast")?;
        self.expect_schema("prepare_broadcast", &p, &right.schema())?;
        self.expect_rows("prepare_broadcast", p.num_rows(), right.num_rows())?;
        Ok(p)
    }

    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition> {
        let out = self.call(
            "sort",
            args(vec![("by", wire::sort_to(by))]),
            &[part],
            None,
            1,
        )?;
        let p = self.single(out, "sort")?;
        self.expect_schema("sort", &p, &part.schema())?;
        self.expect_rows("sort", p.num_rows(), part.num_rows())?;
        Ok(p)
    }

    fn concat(&self, parts: &[Partition]) -> Result<Partition> {
        let inputs: Vec<&Partition> = parts.iter().collect();
        let out = self.call("concat", Map::new(), &inputs, None, 1)?;
        let p = self.single(out, "concat")?;
        if let Some(first) = parts.first() {
            self.expect_schema("concat", &p, &first.schema())?;
        }
        self.expect_rows(
            "concat",
            p.num_rows(),
            parts.iter().map(|q| q.num_rows()).sum(),
        )?;
        Ok(p)
    }

    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition> {
        let out = self.call(
            "slice",
            args(vec![
                ("offset", Value::from(offset as u64)),
                ("len", Value::from(len as u64)),
            ]),
            &[part],
            None,
            1,
        )?;
        let p = self.single(out, "slice")?;
        self.expect_schema("slice", &p, &part.schema())?;
        let want = len.min(part.num_rows().saturating_sub(offset));
        self.expect_rows("slice", p.num_rows(), want)?;
        Ok(p)
    }

    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition> {
        let idx: ArrayRef = Arc::new(UInt64Array::from(indices.to_vec()));
        let extra = RecordBatch::try_from_iter(vec![("indices", idx)])
            .map_err(|e| Error::arrow("take", e))?;
        let out = self.call("take", Map::new(), &[part], Some(&extra), 1)?;
        let p = self.single(out, "take")?;
        self.expect_schema("take", &p, &part.schema())?;
        self.expect_rows("take", p.num_rows(), indices.len())?;
        Ok(p)
    }
}

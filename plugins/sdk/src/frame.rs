//! Dataframe backends as plugins: [`export_frame_plugin!`](crate::export_frame_plugin)
//! turns any [`DataFrameBackend`] into the ABI's [`DataFrameTable`](abi::DataFrameTable).
//!
//! Partitions stay in the plugin as boxed [`Partition`]s behind handles; batches cross as
//! Arrow C Data struct arrays; programs and specs arrive in the frame wire form
//! ([`tessera_plugin_ffi::wire`]) and are decoded without trusting them. Every call runs
//! inside `catch_unwind`, as for arrays.

use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use tessera_core::frame::{DataFrameBackend, FrameBackendRef, Partition};
use tessera_core::{Error, Result};
use tessera_plugin_ffi::batch::{export_batch, export_schema, import_batch};
use tessera_plugin_ffi::convert::{raw_slice, str_from_raw};
use tessera_plugin_ffi::wire;

use crate::abi::{self, FFI_ArrowArray, FFI_ArrowSchema, Handle, RawPartOut};
use crate::{borrow_handle, cstring, guard, last_error};

/// Exports `$backend` (an expression of a type implementing
/// [`DataFrameBackend`](tessera_core::frame::DataFrameBackend)) as this library's
/// plugin. Use once, in a `cdylib` crate, instead of `export_plugin!`.
#[macro_export]
macro_rules! export_frame_plugin {
    ($backend:expr) => {
        $crate::__export_entry!($crate::frame::frame_declaration(|| $backend));
    };
}

struct Exported {
    backend: Option<FrameBackendRef>,
    _strings: Vec<CString>,
    table: abi::DataFrameTable,
    decl: abi::PluginDecl,
}

// SAFETY: the raw pointers point at this struct's own strings and table, immutable once
// built; the backend is `Send + Sync` by the trait's bounds.
unsafe impl Send for Exported {}
// SAFETY: as above.
unsafe impl Sync for Exported {}

static EXPORTED: OnceLock<Box<Exported>> = OnceLock::new();

/// Builds (once) and returns the declaration for the dataframe backend `make` constructs.
/// Called by [`export_frame_plugin!`](crate::export_frame_plugin); never unwinds.
pub fn frame_declaration<B: DataFrameBackend + 'static>(
    make: impl FnOnce() -> B,
) -> *const abi::PluginDecl {
    let exported = EXPORTED.get_or_init(|| {
        let made = catch_unwind(AssertUnwindSafe(|| Arc::new(make()) as FrameBackendRef));
        build(made.map_err(|p| tessera_core::error::panic_message(p.as_ref())))
    });
    &exported.decl
}

fn build(made: std::result::Result<FrameBackendRef, String>) -> Box<Exported> {
    let (backend, name, caps, init_error) = match made {
        Ok(b) => {
            let mut m = serde_json::Map::new();
            m.insert(
                "capabilities".into(),
                wire::capabilities_to(&b.capabilities()),
            );
            let caps = cstring(&wire::message(m));
            let name = cstring(b.name());
            (Some(b), name, caps, None)
        }
        Err(why) => (None, cstring("?"), cstring(""), Some(cstring(&why))),
    };
    let table = abi::DataFrameTable {
        size: std::mem::size_of::<abi::DataFrameTable>(),
        instance: std::ptr::null(),
        capabilities: caps.as_ptr(),
        last_error,
        release_partition,
        import_batch: import,
        export_batch: export,
        partition_schema,
        call,
    };
    let decl = abi::PluginDecl {
        size: std::mem::size_of::<abi::PluginDecl>(),
        abi_version: abi::ABI_VERSION,
        capability_bits: if backend.is_some() {
            abi::CAP_DATAFRAME
        } else {
            0
        },
        name: name.as_ptr(),
        description: std::ptr::null(),
        init_error: init_error.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
        array: std::ptr::null(),
        dataframe: std::ptr::null(),
    };
    let mut strings = vec![name, caps];
    strings.extend(init_error);
    let mut e = Box::new(Exported {
        backend,
        _strings: strings,
        table,
        decl,
    });
    if e.backend.is_some() {
        e.decl.dataframe = &e.table;
    }
    e
}

fn backend() -> Result<&'static dyn DataFrameBackend> {
    EXPORTED
        .get()
        .and_then(|e| e.backend.as_deref())
        .ok_or_else(|| Error::Internal("plugin called before its declaration was built".into()))
}

/// Borrows the partition behind a handle.
///
/// # Safety
/// As [`borrow_handle`], for a `Box<Partition>` made by `raw_part`.
unsafe fn part<'a>(h: Handle, op: &str) -> Result<&'a Partition> {
    // SAFETY: the caller's contract.
    unsafe { borrow_handle(h, op, "partition") }
}

fn raw_part(p: Partition) -> RawPartOut {
    RawPartOut {
        rows: p.num_rows() as u64,
        nbytes: p.nbytes() as u64,
        handle: Box::into_raw(Box::new(p)).cast::<c_void>(),
    }
}

/// Hands `parts` to the host through `out` (exactly `n_out` of them).
///
/// # Safety
/// `out` must be valid for `n_out` writes.
unsafe fn put_all(
    out: *mut RawPartOut,
    n_out: usize,
    parts: Vec<Partition>,
    op: &str,
) -> Result<()> {
    if parts.len() != n_out {
        return Err(Error::Internal(format!(
            "{op} produced {} partitions; the host expects {n_out}",
            parts.len()
        )));
    }
    if out.is_null() && n_out > 0 {
        return Err(Error::invalid(op, "null output pointer"));
    }
    for (i, p) in parts.into_iter().enumerate() {
        // SAFETY: `out` holds `n_out` slots (ABI contract) and `i < n_out`.
        unsafe { out.add(i).write(raw_part(p)) };
    }
    Ok(())
}

unsafe extern "C" fn release_partition(_instance: *const c_void, h: Handle) {
    if h.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a handle from `raw_part`, released exactly once by the host.
        drop(unsafe { Box::from_raw(h.cast::<Partition>()) })
    }));
}

/// Takes ownership of an Arrow struct array passed in by the host.
///
/// # Safety
/// `array` and `schema` must be null or valid (ABI contract).
unsafe fn take_batch(
    array: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    what: &str,
) -> Result<Option<arrow_array::RecordBatch>> {
    if array.is_null() || schema.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and live; we move the array out (leaving a released struct) and
    // borrow the schema for the call.
    let (array, schema) = unsafe { (FFI_ArrowArray::from_raw(array), &*schema) };
    import_batch(array, schema, what).map(Some)
}

unsafe extern "C" fn import(
    _instance: *const c_void,
    array: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    out: *mut RawPartOut,
) -> i32 {
    guard(|| {
        // SAFETY: ABI contract for the arguments.
        let batch = unsafe { take_batch(array, schema, "import_batch")? }
            .ok_or_else(|| Error::invalid("import_batch", "null Arrow array or schema"))?;
        let p = backend()?.import_batch(batch)?;
        // SAFETY: `out` is valid for one write.
        unsafe { put_all(out, 1, vec![p], "import_batch") }
    })
}

unsafe extern "C" fn export(
    _instance: *const c_void,
    h: Handle,
    out_array: *mut FFI_ArrowArray,
    out_schema: *mut FFI_ArrowSchema,
) -> i32 {
    guard(|| {
        if out_array.is_null() || out_schema.is_null() {
            return Err(Error::invalid("export_batch", "null output pointer"));
        }
        // SAFETY: a live handle (ABI contract).
        let p = unsafe { part(h, "export_batch")? };
        let (a, s) = export_batch(&backend()?.export_batch(p)?)?;
        // SAFETY: both outputs are valid for writes; the host owns them from here.
        unsafe {
            out_array.write(a);
            out_schema.write(s);
        }
        Ok(())
    })
}

unsafe extern "C" fn partition_schema(
    _instance: *const c_void,
    h: Handle,
    out_schema: *mut FFI_ArrowSchema,
) -> i32 {
    guard(|| {
        if out_schema.is_null() {
            return Err(Error::invalid("partition_schema", "null output pointer"));
        }
        // SAFETY: a live handle (ABI contract).
        let p = unsafe { part(h, "partition_schema")? };
        let s = export_schema(&p.schema())?;
        // SAFETY: valid for writes; the host owns it from here.
        unsafe { out_schema.write(s) };
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn call(
    _instance: *const c_void,
    op: *const c_char,
    args: *const c_char,
    inputs: *const Handle,
    n_inputs: usize,
    extra_array: *mut FFI_ArrowArray,
    extra_schema: *const FFI_ArrowSchema,
    out: *mut RawPartOut,
    n_out: usize,
) -> i32 {
    guard(|| {
        // SAFETY: NUL-terminated strings and `n_inputs` live handles (ABI contract).
        let (op, args, handles) = unsafe {
            (
                str_from_raw(op, "op")?,
                str_from_raw(args, "args")?,
                raw_slice(inputs, n_inputs),
            )
        };
        let parts = handles
            .iter()
            // SAFETY: live handles (ABI contract).
            .map(|&h| unsafe { part(h, op) }.cloned())
            .collect::<Result<Vec<Partition>>>()?;
        // SAFETY: null or a live struct array (ABI contract).
        let extra = unsafe { take_batch(extra_array, extra_schema, op)? };
        let outs = dispatch(backend()?, op, args, &parts, extra)?;
        // SAFETY: `out` holds `n_out` slots (ABI contract).
        unsafe { put_all(out, n_out, outs, op) }
    })
}

fn one<'a>(parts: &'a [Partition], op: &str) -> Result<&'a Partition> {
    match parts {
        [p] => Ok(p),
        _ => Err(Error::invalid(
            op,
            format!("takes one partition, got {}", parts.len()),
        )),
    }
}

fn usize_field(
    m: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    op: &str,
) -> Result<usize> {
    wire::field(m, key)?
        .as_u64()
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| Error::invalid(op, format!("'{key}' is not a non-negative integer")))
}

/// Decodes the arguments of primitive `op` and runs it.
fn dispatch(
    b: &dyn DataFrameBackend,
    op: &str,
    args: &str,
    parts: &[Partition],
    extra: Option<arrow_array::RecordBatch>,
) -> Result<Vec<Partition>> {
    let m = wire::parse_message(args)?;
    let keys = || wire::names_from(wire::field(&m, "keys")?);
    let aggs = || wire::aggs_from(wire::field(&m, "aggs")?);
    let need_extra = || {
        extra
            .clone()
            .ok_or_else(|| Error::invalid(op, "needs an Arrow batch"))
    };
    Ok(match op {
        "evaluate" => vec![b.evaluate(
            one(parts, op)?,
            &wire::program_from(wire::field(&m, "program")?)?,
        )?],
        "hash_partition" => {
            b.hash_partition(one(parts, op)?, &keys()?, usize_field(&m, "n", op)?)?
        }
        "range_partition" => b.range_partition(
            one(parts, op)?,
            &wire::sort_from(wire::field(&m, "by")?)?,
            &need_extra()?,
        )?,
        "aggregate_partial" => vec![b.aggregate_partial(one(parts, op)?, &keys()?, &aggs()?)?],
        "aggregate_combine" => vec![b.aggregate_combine(parts, &keys()?, &aggs()?)?],
        "aggregate_finalize" => vec![b.aggregate_finalize(one(parts, op)?, &keys()?, &aggs()?)?],
        "join" => match parts {
            [l, r] => vec![b.join(l, r, &wire::join_from(wire::field(&m, "spec")?)?)?],
            _ => {
                return Err(Error::invalid(
                    op,
                    format!("takes two partitions, got {}", parts.len()),
                ))
            }
        },
        "prepare_broadcast" => {
            vec![b.prepare_broadcast(one(parts, op)?, &wire::join_from(wire::field(&m, "spec")?)?)?]
        }
        "sort" => vec![b.sort(one(parts, op)?, &wire::sort_from(wire::field(&m, "by")?)?)?],
        "concat" => vec![b.concat(parts)?],
        "slice" => vec![b.slice(
            one(parts, op)?,
            usize_field(&m, "offset", op)?,
            usize_field(&m, "len", op)?,
        )?],
        "take" => {
            let batch = need_extra()?;
            let idx = batch
                .columns()
                .first()
                .and_then(|c| c.as_any().downcast_ref::<arrow_array::UInt64Array>())
                .ok_or_else(|| Error::invalid(op, "indices must be one UInt64 column"))?;
            vec![b.take(one(parts, op)?, idx.values())?]
        }
        other => {
            return Err(Error::invalid(
                "call",
                format!("unknown dataframe primitive '{other}'"),
            ))
        }
    })
}

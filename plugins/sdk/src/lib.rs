//! # tessera-plugin
//!
//! Ship a tessera backend as a shared library while writing only safe Rust. Implement the
//! ordinary [`ArrayBackend`] trait, then in a crate with `crate-type = ["cdylib"]`:
//!
//! ```ignore
//! tessera_plugin::export_plugin!(MyBackend::new());
//! ```
//!
//! The macro exports the two symbols of the plugin ABI (the version and the entry point).
//! This crate supplies every function of the table ([`tessera_plugin_abi::ArrayTable`]):
//! each one decodes its arguments without trusting them, calls your backend inside
//! `catch_unwind`, and reports errors and panics through status codes and a per-thread
//! last error — a panic in your backend becomes an error in the host, never an abort or
//! undefined behaviour. Chunks stay in the plugin as boxed [`Chunk`]s behind opaque
//! handles; bulk data crosses as Arrow C Data (see `tessera_plugin_ffi::arrow`) and is
//! freed by whichever side allocated it.
//!
//! Dataframe backends ship the same way with `tessera_plugin::export_frame_plugin!` (see
//! [`frame`]).
//!
//! The backend's name, device and declared gaps come from its [`ArrayBackend::name`] and
//! [`ArrayBackend::capabilities`], read once when the host loads the library. A
//! constructor that panics yields a declaration with `init_error` set, which the host
//! reports as a load error.

#![allow(unsafe_code)] // the FFI boundary: every block below carries its SAFETY argument

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

pub use tessera_core;
pub use tessera_plugin_abi as abi;

pub mod frame;

use abi::{FFI_ArrowArray, FFI_ArrowSchema, Handle, RawChunkOut};
use tessera_core::host::arrow::dtype_from_format;
use tessera_core::{ArrayBackend, BackendRef, Chunk, Error, Result};
use tessera_plugin_ffi::arrow::{export_host, import_host};
use tessera_plugin_ffi::convert::{
    binary_from_name, decode_dtype, dtype_code, error_detail, error_parts, index_map_from_raw,
    random_from_raw, raw_slice, reduce_from_name, scalar_from_raw, shape_from_raw, slices_from_raw,
    str_from_raw, unary_from_name,
};

/// Exports `$backend` (an expression of a type implementing [`ArrayBackend`]) as this
/// library's plugin. Use once, in a `cdylib` crate.
#[macro_export]
macro_rules! export_plugin {
    ($backend:expr) => {
        $crate::__export_entry!($crate::declaration(|| $backend));
    };
}

/// The two exported symbols of a plugin library, its entry point returning
/// `$declaration` (used by `export_plugin!` and `export_frame_plugin!`).
#[doc(hidden)]
#[macro_export]
macro_rules! __export_entry {
    ($declaration:expr) => {
        /// The plugin ABI version this library was built for (read by the host first).
        #[allow(unsafe_code, non_upper_case_globals)]
        #[no_mangle]
        pub static tessera_plugin_abi_version: u32 = $crate::abi::ABI_VERSION;

        /// The plugin's entry point: its declaration, built on first call.
        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn tessera_plugin_entry() -> *const $crate::abi::PluginDecl {
            $declaration
        }
    };
}

/// Everything the declaration points at, kept alive for the life of the process.
struct Exported {
    backend: Option<BackendRef>,
    _strings: Vec<CString>,
    _gaps: Vec<abi::RawOpDType>,
    table: abi::ArrayTable,
    decl: abi::PluginDecl,
}

// SAFETY: the raw pointers inside point at this struct's own strings and table, which are
// immutable once built; the backend is `Send + Sync` by the trait's bounds.
unsafe impl Send for Exported {}
// SAFETY: as above.
unsafe impl Sync for Exported {}

static EXPORTED: OnceLock<Box<Exported>> = OnceLock::new();

pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Builds (once) and returns the declaration for the backend `make` constructs. Called by
/// [`export_plugin!`]; never unwinds.
pub fn declaration<B: ArrayBackend + 'static>(make: impl FnOnce() -> B) -> *const abi::PluginDecl {
    let exported = EXPORTED.get_or_init(|| {
        let made = catch_unwind(AssertUnwindSafe(|| Arc::new(make()) as BackendRef));
        build(made.map_err(|p| tessera_core::error::panic_message(p.as_ref())))
    });
    &exported.decl
}

fn build(made: std::result::Result<BackendRef, String>) -> Box<Exported> {
    let mut strings = Vec::new();
    let mut gaps = Vec::new();
    let (backend, name, device, init_error) = match made {
        Ok(b) => {
            for (op, dtype) in b.capabilities().unsupported() {
                let s = cstring(op.name());
                gaps.push(abi::RawOpDType {
                    op: s.as_ptr(),
                    dtype: dtype_code(*dtype),
                });
                strings.push(s);
            }
            let name = cstring(b.name());
            let device = cstring(&b.capabilities().device);
            (Some(b), name, device, None)
        }
        Err(why) => (None, cstring("?"), cstring("host"), Some(cstring(&why))),
    };
    let table = abi::ArrayTable {
        size: std::mem::size_of::<abi::ArrayTable>(),
        instance: std::ptr::null(),
        device: device.as_ptr(),
        unsupported: gaps.as_ptr(),
        n_unsupported: gaps.len(),
        last_error,
        release_chunk,
        from_host,
        to_host,
        full,
        random,
        iota,
        cast,
        unary,
        binary,
        where_,
        slice,
        transpose,
        reshape,
        broadcast_to,
        reduce,
        concatenate,
        matmul,
    };
    let decl = abi::PluginDecl {
        size: std::mem::size_of::<abi::PluginDecl>(),
        abi_version: abi::ABI_VERSION,
        capability_bits: if backend.is_some() { abi::CAP_ARRAY } else { 0 },
        name: name.as_ptr(),
        description: std::ptr::null(),
        init_error: init_error.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
        array: std::ptr::null(),
        dataframe: std::ptr::null(),
    };
    strings.extend([name, device]);
    strings.extend(init_error);
    let mut e = Box::new(Exported {
        backend,
        _strings: strings,
        _gaps: gaps,
        table,
        decl,
    });
    if e.backend.is_some() {
        e.decl.array = &e.table;
    }
    e
}

/// The last error on this thread: kind, dtype code, op and message.
struct LastError {
    kind: u32,
    dtype: u32,
    op: CString,
    message: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError {
        kind: abi::error_kind::OTHER,
        dtype: 0,
        op: CString::default(),
        message: CString::default(),
    });
}

pub(crate) fn set_error(kind: u32, dtype: u32, op: &str, message: &str) {
    LAST_ERROR.with(|l| {
        *l.borrow_mut() = LastError {
            kind,
            dtype,
            op: cstring(op),
            message: cstring(message),
        }
    });
}

/// Runs one table function: catches panics, records errors, returns the status.
pub(crate) fn guard(f: impl FnOnce() -> Result<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => abi::STATUS_OK,
        Ok(Err(e)) => {
            let (kind, op, dtype) = error_parts(&e);
            set_error(
                kind,
                dtype.map_or(0, dtype_code),
                op.unwrap_or(""),
                &error_detail(&e),
            );
            abi::STATUS_ERROR
        }
        Err(payload) => {
            set_error(
                abi::error_kind::OTHER,
                0,
                "",
                &tessera_core::error::panic_message(payload.as_ref()),
            );
            abi::STATUS_PANIC
        }
    }
}

fn backend() -> Result<&'static dyn ArrayBackend> {
    EXPORTED
        .get()
        .and_then(|e| e.backend.as_deref())
        .ok_or_else(|| Error::Internal("plugin called before its declaration was built".into()))
}

/// Borrows the `T` behind a handle (a chunk or a partition), naming `what` it is when the
/// handle is null.
///
/// # Safety
/// `h` must be null or a handle to a live `Box<T>` this library returned and the host has
/// not released.
pub(crate) unsafe fn borrow_handle<'a, T>(h: Handle, op: &str, what: &str) -> Result<&'a T> {
    if h.is_null() {
        return Err(Error::invalid(op, format!("null {what} handle")));
    }
    // SAFETY: by the caller's contract, a live `Box<T>` made by this library.
    Ok(unsafe { &*(h as *const T) })
}

/// Borrows the chunk behind a handle.
///
/// # Safety
/// As [`borrow_handle`], for a `Box<Chunk>` made by `put`.
unsafe fn chunk<'a>(h: Handle, op: &str) -> Result<&'a Chunk> {
    // SAFETY: the caller's contract.
    unsafe { borrow_handle(h, op, "chunk") }
}

/// Hands a chunk to the host through `out`.
///
/// # Safety
/// `out` must be valid for writes.
unsafe fn put(out: *mut RawChunkOut, c: Chunk, op: &str) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid(op, "null output pointer"));
    }
    let shape = c.shape();
    if shape.len() > abi::MAX_NDIM {
        return Err(Error::invalid(
            op,
            format!(
                "{} dimensions; at most {} cross the plugin ABI",
                shape.len(),
                abi::MAX_NDIM
            ),
        ));
    }
    let mut raw = RawChunkOut {
        handle: std::ptr::null_mut(),
        dtype: dtype_code(c.dtype()),
        ndim: shape.len() as u32,
        shape: [0; abi::MAX_NDIM],
    };
    for (dst, &d) in raw.shape.iter_mut().zip(shape) {
        *dst = d as u64;
    }
    raw.handle = Box::into_raw(Box::new(c)).cast::<c_void>();
    // SAFETY: `out` is valid for writes by the caller's contract.
    unsafe { out.write(raw) };
    Ok(())
}

pub(crate) unsafe extern "C" fn last_error(_instance: *const c_void, out: *mut abi::RawError) {
    if out.is_null() {
        return;
    }
    LAST_ERROR.with(|l| {
        let l = l.borrow();
        // SAFETY: `out` is non-null and valid for writes by the ABI; the strings stay
        // valid until this thread's next call, as the ABI states.
        unsafe {
            out.write(abi::RawError {
                kind: l.kind,
                dtype: l.dtype,
                op: l.op.as_ptr(),
                message: l.message.as_ptr(),
            })
        }
    });
}

unsafe extern "C" fn release_chunk(_instance: *const c_void, h: Handle) {
    if h.is_null() {
        return;
    }
    // Dropping a chunk runs backend code: keep a panic inside the plugin.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a handle from `put`, released exactly once by the host (ABI contract).
        drop(unsafe { Box::from_raw(h.cast::<Chunk>()) })
    }));
}

unsafe extern "C" fn from_host(
    _instance: *const c_void,
    array: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        if array.is_null() || schema.is_null() {
            return Err(Error::invalid("from_host", "null Arrow array or schema"));
        }
        // SAFETY: non-null; the host passes a live array that we take ownership of
        // (leaving a released struct behind) and a schema it keeps alive for the call.
        let (array, schema) = unsafe { (FFI_ArrowArray::from_raw(array), &*schema) };
        // SAFETY: `shape` holds `ndim` entries (ABI contract).
        let shape = unsafe { shape_from_raw(shape, ndim, "from_host")? };
        let dtype = dtype_from_format(schema.format()).ok_or_else(|| {
            Error::invalid(
                "from_host",
                format!("Arrow format '{}' is not a tessera dtype", schema.format()),
            )
        })?;
        let host = import_host(array, schema, dtype, &shape, "from_host")?;
        let c = backend()?.from_host(&host)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "from_host") }
    })
}

unsafe extern "C" fn to_host(
    _instance: *const c_void,
    h: Handle,
    out_array: *mut FFI_ArrowArray,
    out_schema: *mut FFI_ArrowSchema,
) -> i32 {
    guard(|| {
        if out_array.is_null() || out_schema.is_null() {
            return Err(Error::invalid("to_host", "null output pointer"));
        }
        // SAFETY: a live handle (ABI contract).
        let c = unsafe { chunk(h, "to_host")? };
        let host = backend()?.to_host(c)?;
        let (a, s) = export_host(host)?;
        // SAFETY: both outputs are valid for writes and hold released (empty) structs
        // that need no drop (ABI contract); the host now owns the array and schema.
        unsafe {
            out_array.write(a);
            out_schema.write(s);
        }
        Ok(())
    })
}

unsafe extern "C" fn full(
    _instance: *const c_void,
    shape: *const u64,
    ndim: u32,
    value: abi::RawScalar,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: `shape` holds `ndim` entries (ABI contract).
        let shape = unsafe { shape_from_raw(shape, ndim, "full")? };
        let c = backend()?.full(&shape, scalar_from_raw(value)?)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "full") }
    })
}

unsafe extern "C" fn random(
    _instance: *const c_void,
    spec: *const abi::RawRandomSpec,
    map: *const abi::RawIndexMap,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        if spec.is_null() {
            return Err(Error::invalid("random", "null spec"));
        }
        // SAFETY: non-null and valid for the call (ABI contract).
        let spec = random_from_raw(unsafe { &*spec })?;
        // SAFETY: a valid map and `ndim` shape entries (ABI contract).
        let (map, shape) = unsafe {
            (
                index_map_from_raw(map)?,
                shape_from_raw(shape, ndim, "random")?,
            )
        };
        let c = backend()?.random(&spec, &map, &shape)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "random") }
    })
}

unsafe extern "C" fn iota(
    _instance: *const c_void,
    map: *const abi::RawIndexMap,
    axis: u32,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a valid map and `ndim` shape entries (ABI contract).
        let (map, shape) = unsafe {
            (
                index_map_from_raw(map)?,
                shape_from_raw(shape, ndim, "iota")?,
            )
        };
        let c = backend()?.iota(&map, axis as usize, &shape)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "iota") }
    })
}

unsafe extern "C" fn cast(
    _instance: *const c_void,
    x: Handle,
    to: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle (ABI contract).
        let x = unsafe { chunk(x, "astype")? };
        let c = backend()?.cast(x, decode_dtype(to, "astype")?)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "astype") }
    })
}

unsafe extern "C" fn unary(
    _instance: *const c_void,
    op: *const c_char,
    x: Handle,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a NUL-terminated name and a live handle (ABI contract).
        let (op, x) = unsafe {
            (
                unary_from_name(str_from_raw(op, "unary")?)?,
                chunk(x, "unary")?,
            )
        };
        let c = backend()?.unary(op, x)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, op.name()) }
    })
}

unsafe extern "C" fn binary(
    _instance: *const c_void,
    op: *const c_char,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a NUL-terminated name and live handles (ABI contract).
        let (op, a, b) = unsafe {
            (
                binary_from_name(str_from_raw(op, "binary")?)?,
                chunk(a, "binary")?,
                chunk(b, "binary")?,
            )
        };
        let c = backend()?.binary(op, a, b)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, op.name()) }
    })
}

unsafe extern "C" fn where_(
    _instance: *const c_void,
    cond: Handle,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: live handles (ABI contract).
        let (cond, a, b) = unsafe {
            (
                chunk(cond, "where")?,
                chunk(a, "where")?,
                chunk(b, "where")?,
            )
        };
        let c = backend()?.where_(cond, a, b)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "where") }
    })
}

unsafe extern "C" fn slice(
    _instance: *const c_void,
    x: Handle,
    slices: *const abi::RawAxisSlice,
    n: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle and `n` slices (ABI contract).
        let (x, slices) = unsafe { (chunk(x, "slice")?, slices_from_raw(slices, n)?) };
        let c = backend()?.slice(x, &slices)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "slice") }
    })
}

unsafe extern "C" fn transpose(
    _instance: *const c_void,
    x: Handle,
    perm: *const u32,
    n: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle and `n` axes (ABI contract).
        let (x, perm) = unsafe { (chunk(x, "transpose")?, raw_slice(perm, n as usize)) };
        let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
        let c = backend()?.transpose(x, &perm)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "transpose") }
    })
}

unsafe extern "C" fn reshape(
    _instance: *const c_void,
    x: Handle,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle and `ndim` extents (ABI contract).
        let (x, shape) = unsafe {
            (
                chunk(x, "reshape")?,
                shape_from_raw(shape, ndim, "reshape")?,
            )
        };
        let c = backend()?.reshape(x, &shape)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "reshape") }
    })
}

unsafe extern "C" fn broadcast_to(
    _instance: *const c_void,
    x: Handle,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle and `ndim` extents (ABI contract).
        let (x, shape) = unsafe {
            (
                chunk(x, "broadcast_to")?,
                shape_from_raw(shape, ndim, "broadcast_to")?,
            )
        };
        let c = backend()?.broadcast_to(x, &shape)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "broadcast_to") }
    })
}

unsafe extern "C" fn reduce(
    _instance: *const c_void,
    x: Handle,
    op: *const c_char,
    axes: *const u32,
    n: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: a live handle, a NUL-terminated name and `n` axes (ABI contract).
        let (x, op, axes) = unsafe {
            (
                chunk(x, "reduce")?,
                reduce_from_name(str_from_raw(op, "reduce")?)?,
                raw_slice(axes, n as usize),
            )
        };
        let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
        let c = backend()?.reduce(x, op, &axes)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, op.name()) }
    })
}

unsafe extern "C" fn concatenate(
    _instance: *const c_void,
    parts: *const Handle,
    n: u32,
    axis: u32,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: `n` live handles (ABI contract).
        let handles = unsafe { raw_slice(parts, n as usize) };
        let parts: Vec<Chunk> = handles
            .iter()
            // SAFETY: each is a live handle (ABI contract).
            .map(|&h| unsafe { chunk(h, "concatenate") }.cloned())
            .collect::<Result<_>>()?;
        let c = backend()?.concatenate(&parts, axis as usize)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "concatenate") }
    })
}

unsafe extern "C" fn matmul(
    _instance: *const c_void,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32 {
    guard(|| {
        // SAFETY: live handles (ABI contract).
        let (a, b) = unsafe { (chunk(a, "matmul")?, chunk(b, "matmul")?) };
        let c = backend()?.matmul(a, b)?;
        // SAFETY: `out` is valid for writes (ABI contract).
        unsafe { put(out, c, "matmul") }
    })
}

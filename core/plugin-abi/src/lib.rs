//! # tessera-plugin-abi
//!
//! The C ABI between tessera (the *host*) and a backend shipped as a shared library (the
//! *plugin*). Only `#[repr(C)]` structs, integers, raw pointers and `extern "C"` function
//! pointers cross it — no trait objects, `String`, `Vec` or other std types — so a plugin
//! built by another compiler version, or written in C, works with any host of the same
//! ABI major version.
//!
//! ## Loading protocol
//! 1. The host reads the data symbol [`VERSION_SYMBOL`] (a `u32`) **before calling
//!    anything** and refuses the library unless it equals [`ABI_VERSION`].
//! 2. It calls [`ENTRY_SYMBOL`] (an [`EntryFn`]), which returns a [`PluginDecl`] that
//!    lives as long as the process. It checks the declaration's and the table's `size`
//!    fields before reading any field.
//! 3. Chunks stay inside the plugin behind opaque [`Handle`]s; the host releases each
//!    one exactly once through [`ArrayTable::release_chunk`]. Bulk data crosses as the
//!    Arrow C Data Interface ([`FFI_ArrowArray`] + [`FFI_ArrowSchema`], flat in C order,
//!    the n-d shape in the schema metadata under [`SHAPE_METADATA_KEY`] and in explicit
//!    arguments). Whoever allocated an Arrow array frees it through its release callback.
//!
//! ## Errors
//! Every table function returns a status ([`STATUS_OK`], [`STATUS_ERROR`],
//! [`STATUS_PANIC`]). After a non-zero status the host calls [`ArrayTable::last_error`] on
//! the same thread to read a [`RawError`] (kind, op, dtype, message). A plugin must catch
//! every panic at the boundary (unwinding into the host is undefined behaviour);
//! `tessera-plugin` does this for plugins written in Rust.
//!
//! ## Versioning policy
//! * [`ABI_VERSION`] changes only for incompatible changes (a field changes meaning or
//!   moves, a signature changes). Host and plugin must agree on it exactly.
//! * Compatible growth appends fields at the end of [`PluginDecl`] or [`ArrayTable`] and
//!   does not change the version: each struct starts with its `size` as built by the
//!   plugin, and the host reads a field only when the plugin's struct is large enough to
//!   hold it (an older plugin simply lacks the new function, which the host reports as
//!   unsupported). A host never reads past `size`.
//! * [`PluginDecl::capability_bits`] says which protocol tables are present
//!   ([`CAP_ARRAY`], [`CAP_DATAFRAME`]; [`CAP_DLPACK`] is reserved for device memory
//!   exchange). The dataframe table filled the slot ABI 1 reserved for it, so adding it
//!   changed no layout and no version.
//!
//! ## Dataframe backends
//! A [`DataFrameTable`] keeps partitions in the plugin behind [`Handle`]s, released once
//! each through [`DataFrameTable::release_partition`]. Batches cross as Arrow C Data
//! struct arrays (one child per column). Everything else a primitive takes — programs,
//! expressions, key lists, aggregation, join and sort specs — crosses as a NUL-terminated
//! JSON message in tessera's versioned frame wire form (`tessera_plugin_ffi::wire`,
//! `"wire": "tessera-frame/1"`), never as Rust types; each primitive is one
//! [`FrameCallFn`] call by name.

use std::ffi::{c_char, c_void};

pub use arrow_data::ffi::FFI_ArrowArray;
pub use arrow_schema::ffi::FFI_ArrowSchema;

/// The ABI major version this crate describes.
pub const ABI_VERSION: u32 = 1;

/// Name of the exported `u32` data symbol holding the plugin's ABI version.
pub const VERSION_SYMBOL: &[u8] = b"tessera_plugin_abi_version\0";

/// Name of the exported entry function (an [`EntryFn`]).
pub const ENTRY_SYMBOL: &[u8] = b"tessera_plugin_entry\0";

/// Schema metadata key carrying the n-d shape of a chunk as `[d0,d1,...]`.
pub const SHAPE_METADATA_KEY: &str = "tessera.shape";

/// Most dimensions a chunk may have across the boundary.
pub const MAX_NDIM: usize = 32;

/// The entry point: returns the plugin's declaration (never freed).
pub type EntryFn = unsafe extern "C" fn() -> *const PluginDecl;

/// The call succeeded and its out-parameters are filled.
pub const STATUS_OK: i32 = 0;
/// The backend returned an error; read it with [`ArrayTable::last_error`].
pub const STATUS_ERROR: i32 = 1;
/// The plugin panicked; the panic message is in [`ArrayTable::last_error`].
pub const STATUS_PANIC: i32 = 2;

/// The declaration has an array backend table.
pub const CAP_ARRAY: u64 = 1;
/// The declaration has a dataframe backend table.
pub const CAP_DATAFRAME: u64 = 1 << 1;
/// Reserved: device memory exchange through DLPack.
pub const CAP_DLPACK: u64 = 1 << 2;

/// Stable dtype codes (never renumbered).
pub mod dtype {
    /// `bool`
    pub const BOOL: u32 = 1;
    /// `int8`
    pub const I8: u32 = 2;
    /// `int16`
    pub const I16: u32 = 3;
    /// `int32`
    pub const I32: u32 = 4;
    /// `int64`
    pub const I64: u32 = 5;
    /// `uint8`
    pub const U8: u32 = 6;
    /// `uint16`
    pub const U16: u32 = 7;
    /// `uint32`
    pub const U32: u32 = 8;
    /// `uint64`
    pub const U64: u32 = 9;
    /// `float32`
    pub const F32: u32 = 10;
    /// `float64`
    pub const F64: u32 = 11;
}

/// Stable error kind codes, mirroring tessera's error variants.
pub mod error_kind {
    /// Anything else (reported as a plugin error).
    pub const OTHER: u32 = 0;
    /// Shapes do not fit the operation.
    pub const SHAPE: u32 = 1;
    /// A dtype is not accepted by the operation.
    pub const DTYPE: u32 = 2;
    /// Declared unsupported (`op` and `dtype` say what).
    pub const UNSUPPORTED: u32 = 3;
    /// An invalid argument.
    pub const INVALID: u32 = 4;
    /// A bug inside the backend.
    pub const INTERNAL: u32 = 5;
}

/// An opaque chunk owned by the plugin.
pub type Handle = *mut c_void;

/// The error of the last failed call on the calling thread. The strings are owned by the
/// plugin and valid until the next call on that thread; the host copies them at once.
#[repr(C)]
#[derive(Debug)]
pub struct RawError {
    /// One of [`error_kind`].
    pub kind: u32,
    /// A [`dtype`] code, or 0 when none applies.
    pub dtype: u32,
    /// The operation (NUL-terminated UTF-8), or null.
    pub op: *const c_char,
    /// The message (NUL-terminated UTF-8), or null.
    pub message: *const c_char,
}

impl Default for RawError {
    fn default() -> RawError {
        RawError {
            kind: error_kind::OTHER,
            dtype: 0,
            op: std::ptr::null(),
            message: std::ptr::null(),
        }
    }
}

/// A chunk made by the plugin: its handle and metadata, written into host memory.
#[repr(C)]
#[derive(Debug)]
pub struct RawChunkOut {
    /// The new chunk (non-null on success).
    pub handle: Handle,
    /// Its [`dtype`] code.
    pub dtype: u32,
    /// Its number of dimensions (at most [`MAX_NDIM`]).
    pub ndim: u32,
    /// Its shape; entries past `ndim` are ignored.
    pub shape: [u64; MAX_NDIM],
}

impl Default for RawChunkOut {
    fn default() -> RawChunkOut {
        RawChunkOut {
            handle: std::ptr::null_mut(),
            dtype: 0,
            ndim: 0,
            shape: [0; MAX_NDIM],
        }
    }
}

/// A typed scalar: `bits` holds the value (integers sign/zero-extended, `f32`/`f64` by
/// their IEEE bit patterns, `bool` as 0/1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawScalar {
    /// A [`dtype`] code.
    pub dtype: u32,
    /// The value's bits.
    pub bits: u64,
}

/// Uniform on `[a, b)` (floats).
pub const DIST_UNIFORM: u32 = 1;
/// Normal with mean `a` and standard deviation `b`.
pub const DIST_NORMAL: u32 = 2;
/// Integers uniform on `[ia, ib)`.
pub const DIST_RANDINT: u32 = 3;

/// A counter-based random source (Philox 4x32-10 keyed by `seed`, counter high word
/// `stream`); the element at flat index `i` must equal tessera's reference sample.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawRandomSpec {
    /// The seed.
    pub seed: u64,
    /// The stream.
    pub stream: u64,
    /// [`DIST_UNIFORM`], [`DIST_NORMAL`] or [`DIST_RANDINT`].
    pub dist: u32,
    /// The output [`dtype`].
    pub dtype: u32,
    /// First float parameter (low or mean).
    pub a: f64,
    /// Second float parameter (high or std).
    pub b: f64,
    /// First integer parameter (low).
    pub ia: i64,
    /// Second integer parameter (high).
    pub ib: i64,
}

/// One source axis of an affine index map: `coord = start + step * out[out_axis]`, or
/// `start` when `out_axis` is negative.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawAxisMap {
    /// Coordinate at output index 0.
    pub start: i64,
    /// Increment per output step.
    pub step: i64,
    /// The driving output axis, or -1.
    pub out_axis: i64,
}

/// An affine map from output coordinates into a source of shape `src_shape`.
#[repr(C)]
#[derive(Debug)]
pub struct RawIndexMap {
    /// Number of source axes.
    pub ndim: u32,
    /// `ndim` source extents.
    pub src_shape: *const u64,
    /// `ndim` axis maps.
    pub axes: *const RawAxisMap,
}

/// One axis of a strided slice: `start + i * step` for `i < len`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RawAxisSlice {
    /// First element.
    pub start: u64,
    /// Step (non-zero, may be negative).
    pub step: i64,
    /// Number of elements.
    pub len: u64,
}

/// A declared gap: `op` is unsupported for `dtype`.
#[repr(C)]
#[derive(Debug)]
pub struct RawOpDType {
    /// The op name (NUL-terminated): an `ArrayOp`'s name (`cos`, `where`, `matmul`, ...);
    /// the host refuses to load a library that names anything else.
    pub op: *const c_char,
    /// A [`dtype`] code.
    pub dtype: u32,
}

/// What a plugin library provides. Lives for the life of the process.
#[repr(C)]
#[derive(Debug)]
pub struct PluginDecl {
    /// `size_of::<PluginDecl>()` as the plugin was built.
    pub size: usize,
    /// The plugin's [`ABI_VERSION`] (checked again after the data symbol).
    pub abi_version: u32,
    /// Which tables are present ([`CAP_ARRAY`], ...).
    pub capability_bits: u64,
    /// The backend's registry name (NUL-terminated UTF-8, non-empty).
    pub name: *const c_char,
    /// One line about the backend, or null.
    pub description: *const c_char,
    /// Non-null when the plugin could not initialise: why (the tables are then null).
    pub init_error: *const c_char,
    /// The array backend table, when [`CAP_ARRAY`] is set.
    pub array: *const ArrayTable,
    /// The dataframe backend table, when [`CAP_DATAFRAME`] is set (null otherwise).
    pub dataframe: *const DataFrameTable,
}

/// Makes a chunk from a host array that the plugin takes ownership of (it moves it out
/// and leaves a released struct behind).
pub type FromHostFn = unsafe extern "C" fn(
    instance: *const c_void,
    array: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32;

/// Exports a chunk as an Arrow array written into host memory; the host owns the result
/// and calls its release callback (which frees in the plugin).
pub type ToHostFn = unsafe extern "C" fn(
    instance: *const c_void,
    chunk: Handle,
    out_array: *mut FFI_ArrowArray,
    out_schema: *mut FFI_ArrowSchema,
) -> i32;

/// `full(shape, value)`.
pub type FullFn = unsafe extern "C" fn(
    instance: *const c_void,
    shape: *const u64,
    ndim: u32,
    value: RawScalar,
    out: *mut RawChunkOut,
) -> i32;

/// `random(spec, map, shape)`.
pub type RandomFn = unsafe extern "C" fn(
    instance: *const c_void,
    spec: *const RawRandomSpec,
    map: *const RawIndexMap,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32;

/// `iota(map, axis, shape)`.
pub type IotaFn = unsafe extern "C" fn(
    instance: *const c_void,
    map: *const RawIndexMap,
    axis: u32,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32;

/// `astype`.
pub type CastFn =
    unsafe extern "C" fn(instance: *const c_void, x: Handle, to: u32, out: *mut RawChunkOut) -> i32;

/// A unary op, by name.
pub type UnaryFn = unsafe extern "C" fn(
    instance: *const c_void,
    op: *const c_char,
    x: Handle,
    out: *mut RawChunkOut,
) -> i32;

/// A binary op, by name.
pub type BinaryFn = unsafe extern "C" fn(
    instance: *const c_void,
    op: *const c_char,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32;

/// `where(cond, a, b)`.
pub type WhereFn = unsafe extern "C" fn(
    instance: *const c_void,
    cond: Handle,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32;

/// A strided slice, one entry per axis.
pub type SliceFn = unsafe extern "C" fn(
    instance: *const c_void,
    x: Handle,
    slices: *const RawAxisSlice,
    n: u32,
    out: *mut RawChunkOut,
) -> i32;

/// A permutation of axes.
pub type TransposeFn = unsafe extern "C" fn(
    instance: *const c_void,
    x: Handle,
    perm: *const u32,
    n: u32,
    out: *mut RawChunkOut,
) -> i32;

/// `reshape` or `broadcast_to` to `shape`.
pub type ShapeFn = unsafe extern "C" fn(
    instance: *const c_void,
    x: Handle,
    shape: *const u64,
    ndim: u32,
    out: *mut RawChunkOut,
) -> i32;

/// A reduction over `axes` (kept as size-1 axes), by op name.
pub type ReduceFn = unsafe extern "C" fn(
    instance: *const c_void,
    x: Handle,
    op: *const c_char,
    axes: *const u32,
    n: u32,
    out: *mut RawChunkOut,
) -> i32;

/// Concatenation of `n` chunks along `axis`.
pub type ConcatenateFn = unsafe extern "C" fn(
    instance: *const c_void,
    parts: *const Handle,
    n: u32,
    axis: u32,
    out: *mut RawChunkOut,
) -> i32;

/// Matrix product of two 2-d chunks.
pub type MatmulFn = unsafe extern "C" fn(
    instance: *const c_void,
    a: Handle,
    b: Handle,
    out: *mut RawChunkOut,
) -> i32;

/// The array backend protocol as a table of functions. Append-only (see the versioning
/// policy in the crate docs).
#[repr(C)]
#[derive(Debug)]
pub struct ArrayTable {
    /// `size_of::<ArrayTable>()` as the plugin was built.
    pub size: usize,
    /// Passed back as the first argument of every function (plugin state).
    pub instance: *const c_void,
    /// Where the chunks live (`host`, `cuda:0`, ...), NUL-terminated.
    pub device: *const c_char,
    /// `n_unsupported` declared gaps.
    pub unsupported: *const RawOpDType,
    /// Number of entries in `unsupported`.
    pub n_unsupported: usize,
    /// Fills the calling thread's last error.
    pub last_error: unsafe extern "C" fn(instance: *const c_void, out: *mut RawError),
    /// Frees a chunk. Called exactly once per handle.
    pub release_chunk: unsafe extern "C" fn(instance: *const c_void, chunk: Handle),
    /// See [`FromHostFn`].
    pub from_host: FromHostFn,
    /// See [`ToHostFn`].
    pub to_host: ToHostFn,
    /// See [`FullFn`].
    pub full: FullFn,
    /// See [`RandomFn`].
    pub random: RandomFn,
    /// See [`IotaFn`].
    pub iota: IotaFn,
    /// See [`CastFn`].
    pub cast: CastFn,
    /// See [`UnaryFn`].
    pub unary: UnaryFn,
    /// See [`BinaryFn`].
    pub binary: BinaryFn,
    /// See [`WhereFn`].
    pub where_: WhereFn,
    /// See [`SliceFn`].
    pub slice: SliceFn,
    /// See [`TransposeFn`].
    pub transpose: TransposeFn,
    /// `reshape`, see [`ShapeFn`].
    pub reshape: ShapeFn,
    /// `broadcast_to`, see [`ShapeFn`].
    pub broadcast_to: ShapeFn,
    /// See [`ReduceFn`].
    pub reduce: ReduceFn,
    /// See [`ConcatenateFn`].
    pub concatenate: ConcatenateFn,
    /// See [`MatmulFn`].
    pub matmul: MatmulFn,
}

/// A partition made by the plugin, written into host memory.
#[repr(C)]
#[derive(Debug)]
pub struct RawPartOut {
    /// The new partition (non-null on success).
    pub handle: Handle,
    /// Its number of rows.
    pub rows: u64,
    /// About how many bytes it holds.
    pub nbytes: u64,
}

impl Default for RawPartOut {
    fn default() -> RawPartOut {
        RawPartOut {
            handle: std::ptr::null_mut(),
            rows: 0,
            nbytes: 0,
        }
    }
}

/// Wraps a batch — an Arrow struct array, one child per column — as a partition. The
/// plugin takes ownership of `array` (moves it out, leaving a released struct).
pub type ImportBatchFn = unsafe extern "C" fn(
    instance: *const c_void,
    array: *mut FFI_ArrowArray,
    schema: *const FFI_ArrowSchema,
    out: *mut RawPartOut,
) -> i32;

/// Exports a partition as an Arrow struct array written into host memory; the host owns
/// the result and calls its release callback.
pub type ExportBatchFn = unsafe extern "C" fn(
    instance: *const c_void,
    part: Handle,
    out_array: *mut FFI_ArrowArray,
    out_schema: *mut FFI_ArrowSchema,
) -> i32;

/// The schema of a partition (a struct-typed Arrow schema, one child per column), written
/// into host memory; the host releases it.
pub type PartitionSchemaFn = unsafe extern "C" fn(
    instance: *const c_void,
    part: Handle,
    out_schema: *mut FFI_ArrowSchema,
) -> i32;

/// One dataframe primitive by name: `evaluate`, `hash_partition`, `range_partition`,
/// `aggregate_partial`, `aggregate_combine`, `aggregate_finalize`, `join`,
/// `prepare_broadcast`, `sort`, `concat`, `slice`, `take`. `args` is a wire message with
/// the primitive's arguments; `inputs` are `n_inputs` partitions (borrowed); `extra_*`
/// is an Arrow struct array the plugin takes ownership of (range bounds, take indices)
/// or null; the plugin writes exactly `n_out` partitions into `out` (the host knows how
/// many each primitive makes).
pub type FrameCallFn = unsafe extern "C" fn(
    instance: *const c_void,
    op: *const c_char,
    args: *const c_char,
    inputs: *const Handle,
    n_inputs: usize,
    extra_array: *mut FFI_ArrowArray,
    extra_schema: *const FFI_ArrowSchema,
    out: *mut RawPartOut,
    n_out: usize,
) -> i32;

/// The dataframe backend protocol as a table of functions. Append-only, like
/// [`ArrayTable`].
#[repr(C)]
#[derive(Debug)]
pub struct DataFrameTable {
    /// `size_of::<DataFrameTable>()` as the plugin was built.
    pub size: usize,
    /// Passed back as the first argument of every function.
    pub instance: *const c_void,
    /// A wire message `{"capabilities": {...}}` (NUL-terminated): what the backend lacks.
    pub capabilities: *const c_char,
    /// Fills the calling thread's last error.
    pub last_error: unsafe extern "C" fn(instance: *const c_void, out: *mut RawError),
    /// Frees a partition. Called exactly once per handle.
    pub release_partition: unsafe extern "C" fn(instance: *const c_void, part: Handle),
    /// See [`ImportBatchFn`].
    pub import_batch: ImportBatchFn,
    /// See [`ExportBatchFn`].
    pub export_batch: ExportBatchFn,
    /// See [`PartitionSchemaFn`].
    pub partition_schema: PartitionSchemaFn,
    /// See [`FrameCallFn`].
    pub call: FrameCallFn,
}

/// The smallest [`DataFrameTable`] a host of this version accepts.
pub const DATAFRAME_TABLE_MIN_SIZE: usize =
    std::mem::offset_of!(DataFrameTable, call) + std::mem::size_of::<FrameCallFn>();

/// The smallest [`ArrayTable`] a host of this version accepts: every field of ABI 1.
pub const ARRAY_TABLE_MIN_SIZE: usize =
    std::mem::offset_of!(ArrayTable, matmul) + std::mem::size_of::<MatmulFn>();

/// The smallest [`PluginDecl`] a host of this version accepts.
pub const PLUGIN_DECL_MIN_SIZE: usize =
    std::mem::offset_of!(PluginDecl, dataframe) + std::mem::size_of::<*const c_void>();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_sizes_cover_every_field_of_this_version() {
        assert_eq!(ARRAY_TABLE_MIN_SIZE, std::mem::size_of::<ArrayTable>());
        assert_eq!(PLUGIN_DECL_MIN_SIZE, std::mem::size_of::<PluginDecl>());
        assert_eq!(
            DATAFRAME_TABLE_MIN_SIZE,
            std::mem::size_of::<DataFrameTable>()
        );
    }

    #[test]
    fn symbol_names_are_nul_terminated() {
        for s in [VERSION_SYMBOL, ENTRY_SYMBOL] {
            assert_eq!(s.last(), Some(&0));
            assert_eq!(s.iter().filter(|&&b| b == 0).count(), 1);
        }
    }
}

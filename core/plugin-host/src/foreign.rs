//! [`ForeignBackend`]: a plugin's function table behind the ordinary [`ArrayBackend`] trait.
//!
//! Every call encodes its arguments into the ABI's `#[repr(C)]` forms, calls through the
//! table, turns a non-zero status into a typed [`Error`] (reading the plugin's last error
//! on the same thread), and checks what came back against what the protocol requires —
//! a chunk of the wrong dtype or shape, or malformed Arrow data, is refused with
//! [`Error::Plugin`] instead of being trusted. Chunks are [`ForeignChunk`]s: an opaque
//! handle, the metadata the host validated, and a reference to the library, released
//! through the plugin exactly once when the last reference drops.

use std::any::Any;
use std::ffi::{c_void, CString};
use std::fmt;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;

use tessera_plugin_abi as abi;

use tessera_core::backend::{ArrayBackend, AxisSlice, Capabilities, Chunk, ChunkData};
use tessera_core::dtype::{DType, Scalar};
use tessera_core::error::{Error, Result};
use tessera_core::host::HostArray;
use tessera_core::program::{BinaryOp, IndexMap, ReduceOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_plugin_ffi::arrow::{export_host, import_host};
use tessera_plugin_ffi::convert::{
    dtype_code, random_to_raw, scalar_to_raw, shape_to_raw, slices_to_raw, RawIndexMapBuf,
};

/// A loaded plugin's array table. The library is never unloaded, so the table and the
/// code it points to live for the rest of the process.
pub(crate) struct PluginLib {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) table: &'static abi::ArrayTable,
}

// SAFETY: the ABI requires every table function to be callable from any thread at once
// (the Rust SDK enforces it: the wrapped backend is `Send + Sync`), and the table itself
// is immutable plugin memory that is never unloaded.
#[allow(unsafe_code)]
unsafe impl Send for PluginLib {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for PluginLib {}

impl fmt::Debug for PluginLib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginLib")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish()
    }
}

/// A chunk that lives inside a plugin.
pub struct ForeignChunk {
    handle: NonNull<c_void>,
    dtype: DType,
    shape: Vec<usize>,
    lib: Arc<PluginLib>,
}

// SAFETY: the handle is only ever passed back to the plugin's thread-safe table (see
// `PluginLib`); the host never dereferences it.
#[allow(unsafe_code)]
unsafe impl Send for ForeignChunk {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for ForeignChunk {}

impl fmt::Debug for ForeignChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ForeignChunk({} {} {:?})",
            self.lib.name, self.dtype, self.shape
        )
    }
}

impl Drop for ForeignChunk {
    fn drop(&mut self) {
        let t = self.lib.table;
        // SAFETY: the handle came from this plugin, was validated as non-null and is
        // released exactly once (here, as the sole owner drops).
        #[allow(unsafe_code)]
        unsafe {
            (t.release_chunk)(t.instance, self.handle.as_ptr())
        };
    }
}

impl ChunkData for ForeignChunk {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn backend(&self) -> &str {
        &self.lib.name
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A backend implemented by a plugin library.
#[derive(Debug)]
pub struct ForeignBackend {
    lib: Arc<PluginLib>,
    caps: Capabilities,
}

/// What a call must return: a chunk of this dtype and shape, when the host can tell.
type Expect = Option<(DType, Vec<usize>)>;

impl ForeignBackend {
    pub(crate) fn new(lib: PluginLib, caps: Capabilities) -> ForeignBackend {
        ForeignBackend {
            lib: Arc::new(lib),
            caps,
        }
    }

    /// The library this backend was loaded from.
    pub fn path(&self) -> &std::path::Path {
        &self.lib.path
    }

    fn fault(&self, op: &str, detail: impl Into<String>) -> Error {
        crate::status::fault(&self.lib.name, op, detail)
    }

    /// This plugin's chunk, or [`Error::ForeignChunk`].
    fn handle(&self, c: &Chunk, op: &str) -> Result<Handle> {
        match c.as_any().downcast_ref::<ForeignChunk>() {
            Some(fc) if Arc::ptr_eq(&fc.lib, &self.lib) => Ok(Handle(fc.handle.as_ptr())),
            _ => Err(Error::ForeignChunk {
                op: op.to_string(),
                backend: self.lib.name.clone(),
                owner: c.backend().to_string(),
            }),
        }
    }

    /// Turns a failed status into an error, reading the plugin's last error.
    fn error(&self, op: &str, status: i32) -> Error {
        let t = self.lib.table;
        crate::status::read_error(&self.lib.name, t.last_error, t.instance, op, status)
    }

    /// Calls a chunk-producing function and validates its result.
    fn call(
        &self,
        op: &str,
        expect: Expect,
        f: impl FnOnce(&abi::ArrayTable, *mut abi::RawChunkOut) -> i32,
    ) -> Result<Chunk> {
        let mut out = abi::RawChunkOut::default();
        let status = f(self.lib.table, &mut out);
        if status != abi::STATUS_OK {
            return Err(self.error(op, status));
        }
        let handle = NonNull::new(out.handle)
            .ok_or_else(|| self.fault(op, "reported success but returned no chunk"))?;
        // From here the handle is owned: it is released on every path below.
        let bad_meta = match (
            tessera_plugin_ffi::convert::dtype_from_code(out.dtype),
            (out.ndim as usize) <= abi::MAX_NDIM,
        ) {
            (Some(d), true) => Ok(d),
            (None, _) => Err(format!(
                "returned a chunk of unknown dtype code {}",
                out.dtype
            )),
            (_, false) => Err(format!("returned a chunk with {} dimensions", out.ndim)),
        };
        let shape: Vec<usize> = out.shape[..(out.ndim as usize).min(abi::MAX_NDIM)]
            .iter()
            .map(|&d| d as usize)
            .collect();
        let chunk = ForeignChunk {
            handle,
            dtype: *bad_meta.as_ref().unwrap_or(&DType::Bool),
            shape,
            lib: self.lib.clone(),
        };
        let dtype = bad_meta.map_err(|m| self.fault(op, m))?;
        if let Some((want_dtype, want_shape)) = expect {
            if dtype != want_dtype || chunk.shape != want_shape {
                return Err(self.fault(
                    op,
                    format!(
                        "returned a {dtype} chunk of shape {:?}; the protocol requires {want_dtype} of shape {want_shape:?}",
                        chunk.shape
                    ),
                ));
            }
        }
        Ok(Arc::new(chunk))
    }
}

/// A raw handle (for passing through closures).
#[derive(Clone, Copy)]
struct Handle(abi::Handle);

fn op_name(name: &str) -> CString {
    CString::new(name).unwrap_or_default()
}

fn reduced_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect()
}

// Every `unsafe` call below passes pointers to locals that outlive the call and handles
// that `handle()` verified belong to this plugin; the ABI forbids the plugin from keeping
// any of them past the call.
#[allow(unsafe_code)]
impl ArrayBackend for ForeignBackend {
    fn name(&self) -> &str {
        &self.lib.name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        let dtype = data.dtype();
        let shape = data.shape().to_vec();
        let raw_shape = shape_to_raw(&shape);
        let (mut array, schema) = export_host(data.clone())?;
        let chunk = self.call("from_host", Some((dtype, shape)), |t, out| {
            // SAFETY: see the impl comment; the plugin moves the array out of `array`
            // (leaving a released struct), which we drop afterwards.
            unsafe {
                (t.from_host)(
                    t.instance,
                    &mut array,
                    &schema,
                    raw_shape.as_ptr(),
                    raw_shape.len() as u32,
                    out,
                )
            }
        });
        drop(array);
        chunk
    }

    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        let h = self.handle(chunk, "to_host")?;
        let mut array = abi::FFI_ArrowArray::empty();
        let mut schema = abi::FFI_ArrowSchema::empty();
        let t = self.lib.table;
        // SAFETY: see the impl comment; the plugin writes an owned array and schema into
        // our empty structs (whose drop is a no-op until filled).
        let status = unsafe { (t.to_host)(t.instance, h.0, &mut array, &mut schema) };
        if status != abi::STATUS_OK {
            return Err(self.error("to_host", status));
        }
        import_host(array, &schema, chunk.dtype(), chunk.shape(), "to_host")
            .map_err(|e| self.fault("to_host", e.to_string()))
    }

    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        let s = shape_to_raw(shape);
        self.call("full", Some((value.dtype(), shape.to_vec())), |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe {
                (t.full)(
                    t.instance,
                    s.as_ptr(),
                    s.len() as u32,
                    scalar_to_raw(value),
                    out,
                )
            }
        })
    }

    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk> {
        let s = shape_to_raw(shape);
        let spec_raw = random_to_raw(spec);
        let buf = RawIndexMapBuf::new(map);
        let map_raw = buf.raw();
        self.call("random", Some((spec.dtype, shape.to_vec())), |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe {
                (t.random)(
                    t.instance,
                    &spec_raw,
                    &map_raw,
                    s.as_ptr(),
                    s.len() as u32,
                    out,
                )
            }
        })
    }

    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk> {
        let s = shape_to_raw(shape);
        let buf = RawIndexMapBuf::new(map);
        let map_raw = buf.raw();
        self.call("iota", Some((DType::I64, shape.to_vec())), |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe {
                (t.iota)(
                    t.instance,
                    &map_raw,
                    axis as u32,
                    s.as_ptr(),
                    s.len() as u32,
                    out,
                )
            }
        })
    }

    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        let h = self.handle(x, "astype")?;
        self.call("astype", Some((to, x.shape().to_vec())), |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.cast)(t.instance, h.0, dtype_code(to), out) }
        })
    }

    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk> {
        let h = self.handle(x, op.name())?;
        let name = op_name(op.name());
        let expect = Some((op.result_dtype(x.dtype()), x.shape().to_vec()));
        self.call(op.name(), expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.unary)(t.instance, name.as_ptr(), h.0, out) }
        })
    }

    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let (ha, hb) = (self.handle(a, op.name())?, self.handle(b, op.name())?);
        let name = op_name(op.name());
        let expect = Some((op.result_dtype(a.dtype()), a.shape().to_vec()));
        self.call(op.name(), expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.binary)(t.instance, name.as_ptr(), ha.0, hb.0, out) }
        })
    }

    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let hc = self.handle(cond, "where")?;
        let (ha, hb) = (self.handle(a, "where")?, self.handle(b, "where")?);
        let expect = Some((a.dtype(), a.shape().to_vec()));
        self.call("where", expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.where_)(t.instance, hc.0, ha.0, hb.0, out) }
        })
    }

    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk> {
        let h = self.handle(x, "slice")?;
        let raw = slices_to_raw(slices);
        let expect = Some((x.dtype(), slices.iter().map(|s| s.len).collect()));
        self.call("slice", expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.slice)(t.instance, h.0, raw.as_ptr(), raw.len() as u32, out) }
        })
    }

    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk> {
        let h = self.handle(x, "transpose")?;
        let raw: Vec<u32> = perm.iter().map(|&p| p as u32).collect();
        let shape: Option<Vec<usize>> = perm.iter().map(|&p| x.shape().get(p).copied()).collect();
        let expect = shape.map(|s| (x.dtype(), s));
        self.call("transpose", expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.transpose)(t.instance, h.0, raw.as_ptr(), raw.len() as u32, out) }
        })
    }

    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        let h = self.handle(x, "reshape")?;
        let s = shape_to_raw(shape);
        self.call("reshape", Some((x.dtype(), shape.to_vec())), |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.reshape)(t.instance, h.0, s.as_ptr(), s.len() as u32, out) }
        })
    }

    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        let h = self.handle(x, "broadcast_to")?;
        let s = shape_to_raw(shape);
        self.call(
            "broadcast_to",
            Some((x.dtype(), shape.to_vec())),
            |t, out| {
                // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
                unsafe { (t.broadcast_to)(t.instance, h.0, s.as_ptr(), s.len() as u32, out) }
            },
        )
    }

    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk> {
        let h = self.handle(x, op.name())?;
        let name = op_name(op.name());
        let raw: Vec<u32> = axes.iter().map(|&a| a as u32).collect();
        let expect = Some((op.result_dtype(x.dtype()), reduced_shape(x.shape(), axes)));
        self.call(op.name(), expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe {
                (t.reduce)(
                    t.instance,
                    h.0,
                    name.as_ptr(),
                    raw.as_ptr(),
                    raw.len() as u32,
                    out,
                )
            }
        })
    }

    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        let handles: Vec<abi::Handle> = parts
            .iter()
            .map(|p| self.handle(p, "concatenate").map(|h| h.0))
            .collect::<Result<_>>()?;
        let expect = parts.first().and_then(|p0| {
            let mut shape = p0.shape().to_vec();
            let total = parts
                .iter()
                .map(|p| p.shape().get(axis).copied())
                .sum::<Option<usize>>();
            *shape.get_mut(axis)? = total?;
            Some((p0.dtype(), shape))
        });
        self.call("concatenate", expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe {
                (t.concatenate)(
                    t.instance,
                    handles.as_ptr(),
                    handles.len() as u32,
                    axis as u32,
                    out,
                )
            }
        })
    }

    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let (ha, hb) = (self.handle(a, "matmul")?, self.handle(b, "matmul")?);
        let expect = match (a.shape(), b.shape()) {
            ([m, _], [_, n]) => Some((a.dtype(), vec![*m, *n])),
            _ => None,
        };
        self.call("matmul", expect, |t, out| {
            // SAFETY: pointers to locals that outlive the call; handles checked by `handle()`.
            unsafe { (t.matmul)(t.instance, ha.0, hb.0, out) }
        })
    }
}

//! Partitions of one schema concatenated on the device, two at a time (a balanced tree of
//! pairs, so each row is copied once per level): `_pair` writes eight output rows a
//! thread — fixed-width values, boolean bits and validity from the first partition's rows
//! then the second's — and string columns take `_offsets` (the second side's offsets moved
//! past the first side's bytes) and `_bytes` (both sides' bytes, one after the other).

use std::sync::Arc;

use arrow_schema::{DataType, SchemaRef};
use tessera_core::{Error, Result};

use super::batch::DeviceBatch;
use super::column::{fixed_width, DeviceArray, DeviceBytes, DeviceNulls};
use super::launch::{grid_for, plan_of};
use super::program::emit::{ctype, is_string, offset_ctype};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

/// Why a concatenation does not run natively.
pub type Refusal = String;

/// The concatenation kernels of one schema.
#[derive(Debug, Clone)]
pub struct NativeConcat {
    types: Vec<DataType>,
    body: String,
    hash: u64,
    name: String,
}

/// Whether the device concatenates columns of `t`.
fn covered(t: &DataType) -> bool {
    is_string(t) || *t == DataType::Boolean || (ctype(t).is_some() && fixed_width(t).is_some())
}

/// The kernels concatenating partitions of `schema`, or why not.
///
/// # Errors
/// The reason, naming the first column type the device does not concatenate.
pub fn native(schema: &SchemaRef) -> std::result::Result<NativeConcat, Refusal> {
    let name = tessera_cuda::codegen::names::NAME;
    let types: Vec<DataType> = schema
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    if let Some(t) = types.iter().find(|t| !covered(t)) {
        return Err(format!("concatenating a {t} column"));
    }
    // Inputs: per column, both sides' first buffer and bitmap (4 buffers); P: rows of each
    // side, then per column (offset A, bitmap offset A, has bitmap A, the same for B).
    let cols = types.len();
    let ins: String = (0..4 * cols)
        .map(|i| format!(", const u8* in{i}"))
        .collect();
    let mut outs = Vec::new();
    let mut init = String::new();
    let mut write = String::new();
    let mut fin = String::new();
    for (c, t) in types.iter().enumerate() {
        let (a, an, b, bn) = (4 * c, 4 * c + 1, 4 * c + 2, 4 * c + 3);
        let q = 2 + 6 * c;
        let valid = format!(
            "(first ? (P[{}] ? tsr_bit(in{an}, P[{}] + row) : 1) : (P[{}] ? tsr_bit(in{bn}, P[{}] + row) : 1))",
            q + 2,
            q + 1,
            q + 5,
            q + 4
        );
        init.push_str(&format!("u8 nb{c} = 0; "));
        write.push_str(&format!("            nb{c} |= (u8)({valid} << j);\n"));
        if is_string(t) {
            // Values come from `_offsets`/`_bytes`; `_pair` writes the validity alone.
            let o = outs.len();
            outs.push(format!(", u8* out{o}"));
            fin.push_str(&format!("        out{o}[qo] = nb{c};\n"));
            continue;
        }
        let (vo, no) = (outs.len(), outs.len() + 1);
        outs.push(format!(", u8* out{vo}"));
        outs.push(format!(", u8* out{no}"));
        if *t == DataType::Boolean {
            init.push_str(&format!("u8 bb{c} = 0; "));
            write.push_str(&format!(
                "            bb{c} |= (u8)((first ? tsr_bit(in{a}, P[{q}] + row) : tsr_bit(in{b}, P[{}] + row)) << j);\n",
                q + 3
            ));
            fin.push_str(&format!("        out{vo}[qo] = bb{c};\n"));
        } else {
            let ct = ctype(t).unwrap_or("u8");
            write.push_str(&format!(
                "            (({ct}*)out{vo})[r] = first ? ((const {ct}*)in{a})[P[{q}] + row] : ((const {ct}*)in{b})[P[{}] + row];\n",
                q + 3
            ));
        }
        fin.push_str(&format!("        out{no}[qo] = nb{c};\n"));
    }
    let outs: String = outs.concat();
    let body = format!(
        "extern \"C\" __global__ void {name}_pair(const u64* P{ins}{outs}) {{
    u64 ma = P[0], m = P[0] + P[1];
    u64 octets = (m + 7) >> 3;
    for (u64 qo = (u64)blockIdx.x * blockDim.x + threadIdx.x; qo < octets; qo += (u64)gridDim.x * blockDim.x) {{
        {init}
        for (u32 j = 0; j < 8; ++j) {{
            u64 r = (qo << 3) + j;
            if (r >= m) break;
            u8 first = r < ma ? 1 : 0;
            u64 row = first ? r : r - ma;
{write}        }}
{fin}    }}
}}
"
    );
    let (body, hash, name) = named(&(body + STRINGS), "tsrc");
    Ok(NativeConcat {
        types,
        body,
        hash,
        name,
    })
}

/// The string columns' kernels (the same for every schema; their offsets' width is a
/// parameter).
const STRINGS: &str = r#"
static __device__ __forceinline__ u64 @KERNEL@_at(const u8* offs, u64 wide, u64 i) {
    return wide ? (u64)((const i64*)offs)[i] : (u64)(i64)((const i32*)offs)[i];
}
extern "C" __global__ void @KERNEL@_offsets(const u64* P, const u8* in0, const u8* in1, u8* out0) {
    u64 ma = P[0], m = P[0] + P[1], oa = P[2], ob = P[3], wide = P[4];
    u64 a0 = @KERNEL@_at(in0, wide, oa), b0 = @KERNEL@_at(in1, wide, ob);
    u64 alen = @KERNEL@_at(in0, wide, oa + ma) - a0;
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r <= m; r += (u64)gridDim.x * blockDim.x) {
        u64 v = r <= ma ? @KERNEL@_at(in0, wide, oa + r) - a0 : alen + @KERNEL@_at(in1, wide, ob + r - ma) - b0;
        if (wide) ((i64*)out0)[r] = (i64)v; else ((i32*)out0)[r] = (i32)v;
    }
}
extern "C" __global__ void @KERNEL@_bytes(const u64* P, const u8* in0, const u8* in1, u8* out0) {
    u64 astart = P[0], alen = P[1], bstart = P[2], blen = P[3];
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < alen + blen; i += (u64)gridDim.x * blockDim.x)
        out0[i] = i < alen ? in0[astart + i] : in1[bstart + i - alen];
}
"#;

impl NativeConcat {
    fn pair_outputs(&self) -> usize {
        self.types
            .iter()
            .map(|t| if is_string(t) { 1 } else { 2 })
            .sum()
    }

    fn plan(&self, suffix: &str, params: Vec<u64>) -> KernelPlan {
        plan_of(
            (&self.body, self.hash, &self.name),
            &[
                ("_pair", 4 * self.types.len(), self.pair_outputs()),
                ("_offsets", 2, 1),
                ("_bytes", 2, 1),
            ],
            suffix,
            params,
        )
    }

    /// Its kernels with no run-time values (what the compile tests build).
    pub fn plans(&self) -> Vec<KernelPlan> {
        ["_pair", "_offsets", "_bytes"]
            .iter()
            .map(|s| self.plan(s, Vec::new()))
            .collect()
    }

    /// The hash of the kernel text.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// The columns of `a` then `b` (same schema, same device).
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] when the strings of a
/// 32-bit-offset column would pass 2^31 - 1 bytes.
fn pair<D: Device>(
    device: &D,
    c: &NativeConcat,
    a: (&[DeviceArray<D::Buf>], usize),
    b: (&[DeviceArray<D::Buf>], usize),
) -> Result<Vec<DeviceArray<D::Buf>>> {
    let (ma, mb) = (a.1, b.1);
    let m = ma + mb;
    let mut params = vec![ma as u64, mb as u64];
    let mut ins: Vec<&D::Buf> = Vec::new();
    for (ca, cb) in a.0.iter().zip(b.0) {
        for col in [ca, cb] {
            let first = col
                .buffers
                .first()
                .ok_or_else(|| Error::Internal("a column without buffers".into()))?;
            params.push(col.offset as u64);
            match &col.nulls {
                Some(n) => {
                    params.extend([n.offset as u64, 1]);
                }
                None => params.extend([0, 0]),
            }
            ins.push(&first.buf);
            ins.push(col.nulls.as_ref().map_or(&first.buf, |n| &n.bytes.buf));
        }
    }
    // `P` per column: A's offset, bitmap offset and whether it has one, then B's.
    let p = params;
    let octets = m.div_ceil(8);
    let mut sizes = Vec::new();
    for t in &c.types {
        if is_string(t) {
            sizes.push(octets);
        } else {
            sizes.push(fixed_width(t).map_or(octets, |w| m * w));
            sizes.push(octets);
        }
    }
    let written: Vec<Output> = sizes.iter().map(|&s| Output::Written(s)).collect();
    let outs = device.launch_grid(
        &c.plan("_pair", p),
        grid_for(octets as u64, device.sms()),
        &ins,
        &written,
    )?;
    let mut outs = outs.into_iter().zip(sizes).map(|(buf, len)| DeviceBytes {
        buf: Arc::new(buf),
        len,
    });
    let mut next = || {
        outs.next()
            .ok_or_else(|| Error::Internal("the concat kernel gave too few outputs".into()))
    };
    let mut columns = Vec::with_capacity(c.types.len());
    for ((t, ca), cb) in c.types.iter().zip(a.0).zip(b.0) {
        let nulls = |bytes| Some(DeviceNulls { bytes, offset: 0 });
        if is_string(t) {
            let validity = next()?;
            columns.push(strings(device, c, (ca, ma), (cb, mb), t, nulls(validity))?);
        } else {
            let values = next()?;
            let validity = next()?;
            columns.push(DeviceArray {
                data_type: ca.data_type.clone(),
                len: m,
                offset: 0,
                nulls: nulls(validity),
                buffers: vec![values],
                children: Vec::new(),
            });
        }
    }
    Ok(columns)
}

/// A string column of `a` then `b`.
fn strings<D: Device>(
    device: &D,
    c: &NativeConcat,
    (a, ma): (&DeviceArray<D::Buf>, usize),
    (b, mb): (&DeviceArray<D::Buf>, usize),
    t: &DataType,
    nulls: Option<DeviceNulls<D::Buf>>,
) -> Result<DeviceArray<D::Buf>> {
    let wide = offset_ctype(t) == "i64";
    let width = if wide { 8 } else { 4 };
    let m = ma + mb;
    // The byte ranges of each side, read from their offsets on the host (two words each).
    let range = |x: &DeviceArray<D::Buf>, rows: usize| -> Result<(u64, u64)> {
        let offs = &x.buffers[0];
        let bytes = device.download(&offs.buf, offs.len)?;
        let at = |i: usize| -> u64 {
            let s = &bytes[i * width..(i + 1) * width];
            if wide {
                i64::from_le_bytes(s.try_into().unwrap_or([0; 8])) as u64
            } else {
                i32::from_le_bytes(s.try_into().unwrap_or([0; 4])) as i64 as u64
            }
        };
        let start = at(x.offset);
        Ok((start, at(x.offset + rows) - start))
    };
    let ((astart, alen), (bstart, blen)) = (range(a, ma)?, range(b, mb)?);
    let total = alen + blen;
    if !wide && total > i32::MAX as u64 {
        return Err(Error::invalid(
            "concat",
            format!("the strings of a {t} column would hold {total} bytes, more than its 32-bit offsets address; cast it to LargeUtf8"),
        ));
    }
    let offsets = device
        .launch_grid(
            &c.plan(
                "_offsets",
                vec![
                    ma as u64,
                    mb as u64,
                    a.offset as u64,
                    b.offset as u64,
                    u64::from(wide),
                ],
            ),
            grid_for(m as u64 + 1, device.sms()),
            &[&a.buffers[0].buf, &b.buffers[0].buf],
            &[Output::Written((m + 1) * width)],
        )?
        .pop()
        .ok_or_else(|| Error::Internal("the offsets kernel gave no output".into()))?;
    let total = total as usize;
    let bytes = device
        .launch_grid(
            &c.plan("_bytes", vec![astart, alen, bstart, blen]),
            grid_for(total as u64, device.sms()),
            &[&a.buffers[1].buf, &b.buffers[1].buf],
            &[Output::Written(total)],
        )?
        .pop()
        .ok_or_else(|| Error::Internal("the bytes kernel gave no output".into()))?;
    Ok(DeviceArray {
        data_type: a.data_type.clone(),
        len: m,
        offset: 0,
        nulls,
        buffers: vec![
            DeviceBytes {
                buf: Arc::new(offsets),
                len: (m + 1) * width,
            },
            DeviceBytes {
                buf: Arc::new(bytes),
                len: total,
            },
        ],
        children: Vec::new(),
    })
}

/// The partitions `parts` (same schema, all on `device`) one after the other: rows and
/// columns.
///
/// # Errors
/// As the pairwise step: a failed launch or copy, or strings past 32-bit offsets.
pub fn run<D: Device>(
    device: &D,
    c: &NativeConcat,
    parts: &[&DeviceBatch<D::Buf>],
) -> Result<(usize, Vec<DeviceArray<D::Buf>>)> {
    let mut level: Vec<(Vec<DeviceArray<D::Buf>>, usize)> =
        parts.iter().map(|p| (p.columns.clone(), p.rows)).collect();
    if level.is_empty() {
        return Err(Error::Internal("concat of no partitions".into()));
    }
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut it = level.into_iter();
        while let Some((a, ma)) = it.next() {
            match it.next() {
                Some((b, mb)) => next.push((pair(device, c, (&a, ma), (&b, mb))?, ma + mb)),
                None => next.push((a, ma)),
            }
        }
        level = next;
    }
    let (columns, rows) = level
        .pop()
        .ok_or_else(|| Error::Internal("concat".into()))?;
    Ok((rows, columns))
}

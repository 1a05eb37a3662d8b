//! A stable sort of a partition on the device: each sort key becomes `u32` digits whose
//! unsigned order is the key's sort order (`_encode`), and the rows are sorted by those
//! digits least significant first with the stable binary radix passes of
//! [`super::scan::sort_by_key`], each digit read in the order the passes so far left
//! ([`super::scan::gather32`]). The row order found gathers every column.
//!
//! The digits of one key, most significant first: a null flag (nulls last, ascending or
//! descending, as the CPU backend orders them), then the value — integers with the sign
//! bit flipped, floats as their bits with the sign folded in (NaN above every number,
//! `-0.0` equal to `0.0`: both canonical first), booleans, dates, times, timestamps,
//! durations and decimals as their integers; descending keys have their value digits
//! inverted. A key of `w` bits takes `w` passes (a 64-bit key 64): correct and
//! deterministic, not yet the fastest sort a GPU can do. String keys run on the host.

use std::sync::Arc;

use arrow_schema::{DataType, SchemaRef};
use tessera_core::frame::SortKey;
use tessera_core::{Error, Result};

use super::batch::DeviceBatch;
use super::column::{fixed_width, DeviceArray};
use super::launch::{column_args, grid_for, plan_of, ColumnArgs};
use super::program::emit::ctype;
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

/// Why a sort does not run natively.
pub type Refusal = String;

/// One digit: the key it belongs to, whether it is that key's null flag, and its bits.
#[derive(Debug, Clone, Copy)]
struct Digit {
    key: usize,
    flag: bool,
    bits: u32,
}

/// A sort the device runs natively.
#[derive(Debug, Clone)]
pub struct NativeSort {
    keys: Vec<usize>,
    digits: Vec<Digit>,
    body: String,
    hash: u64,
    name: String,
}

/// Value bits of a key type, or `None` when the device does not sort it: a boolean's
/// one, every other fixed-width type's width.
fn width(t: &DataType) -> Option<u32> {
    if *t == DataType::Boolean {
        return Some(1);
    }
    fixed_width(t).map(|w| 8 * w as u32)
}

/// The sort as device kernels, or why it must run on the host.
///
/// # Errors
/// The reason, naming the first key the device does not sort.
pub fn native(schema: &SchemaRef, by: &[SortKey]) -> std::result::Result<NativeSort, Refusal> {
    let mut keys = Vec::new();
    let mut digits = Vec::new();
    let mut code = String::new();
    for (k, key) in by.iter().enumerate() {
        let i = schema
            .index_of(&key.column)
            .map_err(|_| format!("no column '{}'", key.column))?;
        let t = schema.field(i).data_type();
        let w = width(t).ok_or_else(|| format!("a sort key of type {t} ('{}')", key.column))?;
        keys.push(i);
        let c = ctype(t).unwrap_or("u8");
        let v = if *t == DataType::Boolean {
            format!("tsr_bit(in{}, C[{}] + row)", 3 * k, 3 * k)
        } else {
            format!("((const {c}*)in{})[C[{}] + row]", 3 * k, 3 * k)
        };
        let valid = format!(
            "(C[{}] ? tsr_bit(in{}, C[{}] + row) : 1)",
            3 * k + 2,
            3 * k + 2,
            3 * k + 1
        );
        // The value as an unsigned word of `w` bits (u128 for the widest) in sort order.
        let word = match t {
            DataType::Float32 => format!("(u64)tsr_f32_order({v})"),
            DataType::Float64 => format!("tsr_f64_order({v})"),
            DataType::Decimal128(..) => format!("((u128){v} ^ ((u128)1 << 127))"),
            t if t.is_unsigned_integer() || *t == DataType::Boolean => format!("(u64){v}"),
            _ if w == 64 => format!("((u64)(i64){v} ^ 0x8000000000000000ULL)"),
            // A narrower signed integer: its own `w` bits with their sign bit flipped.
            _ => format!(
                "(u64)((((u32)(i32){v}) & {:#x}u) ^ {:#x}u)",
                (1u64 << w) - 1,
                1u64 << (w - 1)
            ),
        };
        let wide = if w == 128 { "u128" } else { "u64" };
        code.push_str(&format!(
            "        {{ u8 ok = {valid}; {wide} w = ok ? ({wide}){word} : 0;\n"
        ));
        if key.descending {
            let mask = if w >= 64 {
                format!("({wide})~({wide})0")
            } else {
                format!("(((u64)1 << {w}) - 1)")
            };
            code.push_str(&format!("          if (ok) w = ~w & {mask};\n"));
        }
        // The flag digit, then the value's 32-bit digits from the most significant.
        let d = digits.len();
        code.push_str(&format!("          ((u32*)out{d})[row] = ok ? 0u : 1u;\n"));
        digits.push(Digit {
            key: k,
            flag: true,
            bits: 1,
        });
        let parts = w.div_ceil(32);
        for p in (0..parts).rev() {
            let d = digits.len();
            code.push_str(&format!(
                "          ((u32*)out{d})[row] = (u32)(w >> {});\n",
                32 * p
            ));
            digits.push(Digit {
                key: k,
                flag: false,
                bits: if parts == 1 { w } else { 32 },
            });
        }
        code.push_str("        }\n");
    }
    // The rows are gathered in the order found.
    super::program::gatherable(schema)?;
    let name = tessera_cuda::codegen::names::NAME;
    let ins: String = (0..3 * by.len())
        .map(|i| format!(", const u8* in{i}"))
        .collect();
    let outs: String = (0..digits.len()).map(|d| format!(", u8* out{d}")).collect();
    let body = format!(
        "extern \"C\" __global__ void {name}_encode(const u64* P{ins}{outs}) {{
    const u64* C = P + 1; u64 n = P[0];
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
{code}    }}
}}
"
    );
    let (body, hash, name) = named(&body, "tsro");
    Ok(NativeSort {
        keys,
        digits,
        body,
        hash,
        name,
    })
}

impl NativeSort {
    fn plan(&self, params: Vec<u64>) -> KernelPlan {
        plan_of(
            (&self.body, self.hash, &self.name),
            &[("_encode", 3 * self.keys.len(), self.digits.len())],
            "_encode",
            params,
        )
    }

    /// Its kernel with no run-time values (what the compile tests build).
    pub fn plans(&self) -> Vec<KernelPlan> {
        vec![self.plan(Vec::new())]
    }

    /// The hash of the kernel text.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// The row order of `b` sorted by `s` (`u32` row numbers).
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a partition of
/// `u32::MAX` rows or more.
pub fn order<D: Device>(
    device: &D,
    s: &NativeSort,
    b: &DeviceBatch<D::Buf>,
) -> Result<Arc<D::Buf>> {
    let n = b.rows;
    if n >= u32::MAX as usize {
        return Err(Error::invalid(
            "sort",
            format!("a partition of {n} rows; the device sorts up to 2^32 - 2 rows per partition (repartition it)"),
        ));
    }
    let ColumnArgs { params: tail, bufs } = column_args(b, s.keys.iter().copied())?;
    let mut params = vec![n as u64];
    params.extend(tail);
    let cols: Vec<&D::Buf> = bufs.iter().map(|x| x.as_ref()).collect();
    let mut digits: Vec<Option<D::Buf>> = device
        .launch_grid(
            &s.plan(params),
            grid_for(n as u64, device.sms()),
            &cols,
            &vec![Output::Written(n * 4); s.digits.len()],
        )?
        .into_iter()
        .map(Some)
        .collect();
    let mut perm = Arc::new(super::scan::iota(device, n)?);
    let mut first = true;
    for (d, digit) in s.digits.iter().enumerate().rev() {
        // A key without a bitmap has no nulls: its flag digit is all zeros.
        if digit.flag && b.columns[s.keys[digit.key]].nulls.is_none() {
            continue;
        }
        let digit_buf = digits[d]
            .take()
            .ok_or_else(|| Error::Internal("the encode kernel gave too few digits".into()))?;
        let keys = if first {
            Arc::new(digit_buf)
        } else {
            Arc::new(super::scan::gather32(device, &digit_buf, &perm, n)?)
        };
        first = false;
        perm = super::scan::sort_by_key(device, keys, perm, n, digit.bits)?.values;
    }
    Ok(perm)
}

/// `b` sorted by `s`: its columns gathered in the sorted order.
///
/// # Errors
/// As [`order`] and the gather.
pub fn run<D: Device>(
    device: &D,
    s: &NativeSort,
    b: &DeviceBatch<D::Buf>,
) -> Result<Vec<DeviceArray<D::Buf>>> {
    let perm = order(device, s, b)?;
    super::program::gather(device, b, &perm, b.rows)
}

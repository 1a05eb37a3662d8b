//! Whole strings gathered at selected rows on the device, in three launches of one fixed
//! kernel text: `_count` sums the selected strings' lengths per block (contiguous ranges
//! of output rows), the host folds the block sums into block bases (one word per block),
//! `_offsets` writes the new offsets with a block-wide scan per tile, and `_copy` copies
//! each string's bytes to its new place. The result is an Arrow string column with
//! offset 0; the caller attaches its validity.

use std::sync::{Arc, OnceLock};

use tessera_core::{Error, Result};

use super::column::{DeviceArray, DeviceBytes};
use super::launch::{grid_for, plan_of};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

const TEXT: &str = r#"
static __device__ __forceinline__ u64 @KERNEL@_at(const u8* offs, u64 wide, u64 i) {
    return wide ? (u64)((const i64*)offs)[i] : (u64)(i64)((const i32*)offs)[i];
}
extern "C" __global__ void @KERNEL@_count(const u64* P, const u8* offs, const u8* idx, u8* out0) {
    u64 n = P[0], base = P[1], wide = P[2];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u64 c = 0;
    for (u64 r = lo + threadIdx.x; r < hi; r += blockDim.x) {
        u32 i = ((const u32*)idx)[P[3] + r];
        if (i == 0xffffffffu) continue;
        u64 row = base + i;
        c += @KERNEL@_at(offs, wide, row + 1) - @KERNEL@_at(offs, wide, row);
    }
    __shared__ u64 s[256];
    u64 total = tsr_block_sum(s, c);
    if (threadIdx.x == 0) ((u64*)out0)[blockIdx.x] = total;
}
extern "C" __global__ void @KERNEL@_offsets(const u64* P, const u8* offs, const u8* idx, u8* out0) {
    u64 n = P[0], base = P[1], wide = P[2];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u64 at = P[4 + blockIdx.x];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (wide) ((i64*)out0)[0] = 0; else ((i32*)out0)[0] = 0;
    }
    __shared__ u64 s[256];
    for (u64 t0 = lo; t0 < hi; t0 += blockDim.x) {
        u64 r = t0 + threadIdx.x;
        u64 len = 0;
        if (r < hi && ((const u32*)idx)[P[3] + r] != 0xffffffffu) {
            u64 row = base + ((const u32*)idx)[P[3] + r];
            len = @KERNEL@_at(offs, wide, row + 1) - @KERNEL@_at(offs, wide, row);
        }
        u64 total;
        u64 incl = tsr_block_scan(s, len, &total);
        if (r < hi) {
            u64 end = at + incl;
            if (wide) ((i64*)out0)[r + 1] = (i64)end; else ((i32*)out0)[r + 1] = (i32)end;
        }
        at += total;
    }
}
extern "C" __global__ void @KERNEL@_copy(const u64* P, const u8* offs, const u8* vals, const u8* idx, const u8* fresh, u8* out0) {
    u64 n = P[0], base = P[1], wide = P[2];
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += (u64)gridDim.x * blockDim.x) {
        u32 i = ((const u32*)idx)[P[3] + r];
        if (i == 0xffffffffu) continue;
        u64 row = base + i;
        u64 from = @KERNEL@_at(offs, wide, row);
        u64 len = @KERNEL@_at(offs, wide, row + 1) - from;
        u64 to = @KERNEL@_at(fresh, wide, r);
        for (u64 i = 0; i < len; ++i) out0[to + i] = vals[from + i];
    }
}
"#;

/// The text named by its hash, and the name.
fn named_text() -> &'static (String, u64, String) {
    static T: OnceLock<(String, u64, String)> = OnceLock::new();
    T.get_or_init(|| named(TEXT, "tsrs"))
}

/// The plan launching entry `suffix` (first), with every entry listed.
fn plan(suffix: &str, params: Vec<u64>) -> KernelPlan {
    let (body, hash, name) = named_text();
    plan_of(
        (body, *hash, name),
        &[("_count", 2, 1), ("_offsets", 2, 1), ("_copy", 4, 1)],
        suffix,
        params,
    )
}

/// The string kernels' plans with no run-time values (what the compile tests build).
pub fn plans() -> Vec<KernelPlan> {
    ["_count", "_offsets", "_copy"]
        .iter()
        .map(|s| plan(s, Vec::new()))
        .collect()
}

/// The strings of `col` at the `m` row positions of `idx` (32-bit, relative to the
/// column's offset; `u32::MAX` gives an empty string, which the caller makes null),
/// without validity.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] when the gathered
/// strings of a 32-bit-offset column exceed 2^31 - 1 bytes.
pub fn gather<D: Device>(
    device: &D,
    col: &DeviceArray<D::Buf>,
    idx: &D::Buf,
    m: usize,
) -> Result<DeviceArray<D::Buf>> {
    gather_from(device, col, idx, 0, m)
}

/// [`gather`] at the positions `idx[start .. start + m]`.
///
/// # Errors
/// As [`gather`].
pub fn gather_from<D: Device>(
    device: &D,
    col: &DeviceArray<D::Buf>,
    idx: &D::Buf,
    start: usize,
    m: usize,
) -> Result<DeviceArray<D::Buf>> {
    let wide = super::program::emit::offset_ctype(&col.data_type) == "i64";
    let (Some(offs), Some(vals)) = (col.buffers.first(), col.buffers.get(1)) else {
        return Err(Error::Internal(format!(
            "a {} column without offsets and values",
            col.data_type
        )));
    };
    let params = vec![m as u64, col.offset as u64, u64::from(wide), start as u64];
    let grid = grid_for(m as u64, device.sms());
    let counts = device.launch_grid(
        &plan("_count", params.clone()),
        grid,
        &[&offs.buf, idx],
        &[Output::Written(grid as usize * 8)],
    )?;
    let bytes = device.download(&counts[0], grid as usize * 8)?;
    let mut bases = params.clone();
    let mut total = 0u64;
    for c in bytes.chunks_exact(8) {
        bases.push(total);
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        total = total
            .checked_add(u64::from_le_bytes(w))
            .ok_or_else(|| Error::Internal("gathered string bytes overflow u64".into()))?;
    }
    if !wide && total > i32::MAX as u64 {
        return Err(Error::invalid(
            "evaluate",
            format!(
                "the selected strings of a {} column hold {total} bytes, more than its 32-bit \
                 offsets address; cast it to LargeUtf8 or split the partition",
                col.data_type
            ),
        ));
    }
    let total = usize::try_from(total).map_err(|_| Error::Internal("string bytes".into()))?;
    let width = if wide { 8 } else { 4 };
    let offsets_len = (m + 1) * width;
    let fresh = device.launch_grid(
        &plan("_offsets", bases),
        grid,
        &[&offs.buf, idx],
        &[Output::Written(offsets_len)],
    )?;
    let fresh = Arc::new(
        fresh
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal("the offsets kernel gave no output".into()))?,
    );
    let values = device.launch_grid(
        &plan("_copy", params),
        grid,
        &[&offs.buf, &vals.buf, idx, &fresh],
        &[Output::Written(total)],
    )?;
    let values = values
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("the copy kernel gave no output".into()))?;
    Ok(DeviceArray {
        data_type: col.data_type.clone(),
        len: m,
        offset: 0,
        nulls: None,
        buffers: vec![
            DeviceBytes {
                buf: fresh,
                len: offsets_len,
            },
            DeviceBytes {
                buf: Arc::new(values),
                len: total,
            },
        ],
        children: Vec::new(),
    })
}

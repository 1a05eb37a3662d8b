//! Prefix sums and a stable sort by small integer keys on the device, in one fixed
//! kernel text: `_sum` and `_scan` give the exclusive prefix sums of a `u32` array
//! (block sums over contiguous ranges, folded on the host, then a block-wide scan per
//! tile), `_zeros` and `_split` one pass of a stable binary radix sort (the rows whose key
//! has a bit clear, in order, then those with it set, in order), `_gather32` a `u32`
//! array read at given positions, `_hist` a histogram (integer atomics), `_iota` the row
//! numbers.
//! Every result is the same on every run.

use std::sync::{Arc, OnceLock};

use tessera_core::{Error, Result};

use super::launch::{grid_for, le_words, plan_of};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

const TEXT: &str = r#"
extern "C" __global__ void @KERNEL@_sum(const u64* P, const u8* in0, u8* out0) {
    u64 n = P[0];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u64 c = 0;
    for (u64 r = lo + threadIdx.x; r < hi; r += blockDim.x) c += ((const u32*)in0)[r];
    __shared__ u64 s[256];
    u64 total = tsr_block_sum(s, c);
    if (threadIdx.x == 0) ((u64*)out0)[blockIdx.x] = total;
}
extern "C" __global__ void @KERNEL@_scan(const u64* P, const u8* in0, u8* out0) {
    u64 n = P[0];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u64 at = P[1 + blockIdx.x];
    __shared__ u64 s[256];
    for (u64 t0 = lo; t0 < hi; t0 += blockDim.x) {
        u64 r = t0 + threadIdx.x;
        u64 v = r < hi ? ((const u32*)in0)[r] : 0;
        u64 total;
        u64 incl = tsr_block_scan(s, v, &total);
        if (r < hi) ((u64*)out0)[r] = at + incl - v;
        at += total;
    }
}
extern "C" __global__ void @KERNEL@_zeros(const u64* P, const u8* in0, u8* out0) {
    u64 n = P[0]; u32 bit = (u32)P[1];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u32 c = 0;
    for (u64 r = lo + threadIdx.x; r < hi; r += blockDim.x) c += ((((const u32*)in0)[r] >> bit) & 1u) ? 0u : 1u;
    __shared__ u32 s[256];
    u32 total = tsr_block_sum(s, c);
    if (threadIdx.x == 0) ((u32*)out0)[blockIdx.x] = total;
}
extern "C" __global__ void @KERNEL@_split(const u64* P, const u8* in0, const u8* in1, u8* out0, u8* out1) {
    u64 n = P[0]; u32 bit = (u32)P[1]; u64 grid = P[2];
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;
    u64 zeros = P[3 + blockIdx.x], ones = P[3 + grid + blockIdx.x];
    __shared__ u32 s[256];
    for (u64 t0 = lo; t0 < hi; t0 += blockDim.x) {
        u64 r = t0 + threadIdx.x;
        u32 k = r < hi ? ((const u32*)in0)[r] : 0;
        u32 z = (r < hi && !((k >> bit) & 1u)) ? 1u : 0u;
        u32 tz;
        u64 before = tsr_block_scan(s, z, &tz) - z;
        if (r < hi) {
            u64 to = z ? zeros + before : ones + (threadIdx.x - before);
            ((u32*)out0)[to] = k;
            ((u32*)out1)[to] = ((const u32*)in1)[r];
        }
        u64 len = hi - t0 < blockDim.x ? hi - t0 : blockDim.x;
        zeros += tz;
        ones += len - tz;
    }
}
extern "C" __global__ void @KERNEL@_gather32(const u64* P, const u8* in0, const u8* in1, u8* out0) {
    u64 n = P[0];
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += (u64)gridDim.x * blockDim.x)
        ((u32*)out0)[r] = ((const u32*)in0)[((const u32*)in1)[r]];
}
extern "C" __global__ void @KERNEL@_hist(const u64* P, const u8* in0, u8* out0) {
    u64 n = P[0];
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += (u64)gridDim.x * blockDim.x)
        atomicAdd(&((u32*)out0)[((const u32*)in0)[r]], 1u);
}
extern "C" __global__ void @KERNEL@_iota(const u64* P, u8* out0) {
    u64 n = P[0];
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += (u64)gridDim.x * blockDim.x) ((u32*)out0)[r] = (u32)r;
}
"#;

fn named_text() -> &'static (String, u64, String) {
    static T: OnceLock<(String, u64, String)> = OnceLock::new();
    T.get_or_init(|| named(TEXT, "tsrx"))
}

/// Entries: suffix, inputs, outputs.
const ENTRIES: [(&str, usize, usize); 7] = [
    ("_hist", 1, 1),
    ("_sum", 1, 1),
    ("_scan", 1, 1),
    ("_zeros", 1, 1),
    ("_split", 2, 2),
    ("_gather32", 2, 1),
    ("_iota", 0, 1),
];

fn plan(suffix: &str, params: Vec<u64>) -> KernelPlan {
    let (body, hash, name) = named_text();
    plan_of((body, *hash, name), &ENTRIES, suffix, params)
}

/// The kernels with no run-time values (what the compile tests build).
pub fn plans() -> Vec<KernelPlan> {
    ENTRIES.iter().map(|e| plan(e.0, Vec::new())).collect()
}

fn one<B>(mut v: Vec<B>, what: &str) -> Result<B> {
    v.pop()
        .ok_or_else(|| Error::Internal(format!("the {what} kernel gave no output")))
}

/// The exclusive prefix sums (`u64`) of `n` `u32` values, and their total.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub fn exclusive<D: Device>(device: &D, values: &D::Buf, n: usize) -> Result<(D::Buf, u64)> {
    let grid = grid_for(n as u64, device.sms());
    let sums = one(
        device.launch_grid(
            &plan("_sum", vec![n as u64]),
            grid,
            &[values],
            &[Output::Written(grid as usize * 8)],
        )?,
        "sum",
    )?;
    let bytes = device.download(&sums, grid as usize * 8)?;
    let mut params = vec![n as u64];
    let mut total = 0u64;
    for c in bytes.chunks_exact(8) {
        params.push(total);
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        total += u64::from_le_bytes(w);
    }
    let out = one(
        device.launch_grid(
            &plan("_scan", params),
            grid,
            &[values],
            &[Output::Written(n * 8)],
        )?,
        "scan",
    )?;
    Ok((out, total))
}

/// `0, 1, ..., n - 1` as `u32`.
///
/// # Errors
/// [`Error::Device`] for a failed launch.
pub fn iota<D: Device>(device: &D, n: usize) -> Result<D::Buf> {
    one(
        device.launch_grid(
            &plan("_iota", vec![n as u64]),
            grid_for(n as u64, device.sms()),
            &[],
            &[Output::Written(n * 4)],
        )?,
        "iota",
    )
}

/// How many of the `n` `u32` values fall in each of `bins` (each value below `bins`).
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub fn histogram<D: Device>(
    device: &D,
    values: &D::Buf,
    n: usize,
    bins: usize,
) -> Result<Vec<u32>> {
    let counts = one(
        device.launch_grid(
            &plan("_hist", vec![n as u64]),
            grid_for(n as u64, device.sms()),
            &[values],
            &[Output::Filled(bins * 4, 0)],
        )?,
        "hist",
    )?;
    Ok(le_words(&device.download(&counts, bins * 4)?).collect())
}

/// `values[idx[i]]` for each of the `n` positions `idx` (`u32` each).
///
/// # Errors
/// [`Error::Device`] for a failed launch.
pub fn gather32<D: Device>(device: &D, values: &D::Buf, idx: &D::Buf, n: usize) -> Result<D::Buf> {
    one(
        device.launch_grid(
            &plan("_gather32", vec![n as u64]),
            grid_for(n as u64, device.sms()),
            &[values, idx],
            &[Output::Written(n * 4)],
        )?,
        "gather32",
    )
}

/// `keys` and `values` (`n` `u32` each) reordered stably by the low `bits` bits of the
/// keys: one binary radix pass per bit, least significant first.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub fn sort_by_key<D: Device>(
    device: &D,
    keys: Arc<D::Buf>,
    values: Arc<D::Buf>,
    n: usize,
    bits: u32,
) -> Result<Sorted<D::Buf>> {
    let grid = grid_for(n as u64, device.sms());
    let (mut keys, mut values) = (keys, values);
    for bit in 0..bits {
        let zeros = one(
            device.launch_grid(
                &plan("_zeros", vec![n as u64, u64::from(bit)]),
                grid,
                &[&keys],
                &[Output::Written(grid as usize * 4)],
            )?,
            "zeros",
        )?;
        let counts: Vec<u64> = le_words(&device.download(&zeros, grid as usize * 4)?)
            .map(u64::from)
            .collect();
        let total_zeros: u64 = counts.iter().sum();
        let mut params = vec![n as u64, u64::from(bit), u64::from(grid)];
        let mut at = 0u64;
        for c in &counts {
            params.push(at);
            at += c;
        }
        // The ones of block b start after every zero and the ones of blocks before it.
        let mut ones = total_zeros;
        let per = (n as u64).div_ceil(u64::from(grid));
        for (b, c) in counts.iter().enumerate() {
            params.push(ones);
            let lo = (b as u64 * per).min(n as u64);
            let hi = (lo + per).min(n as u64);
            ones += (hi - lo) - c;
        }
        let mut made = device.launch_grid(
            &plan("_split", params),
            grid,
            &[&keys, &values],
            &[Output::Written(n * 4), Output::Written(n * 4)],
        )?;
        values = Arc::new(one(made.split_off(1), "split")?);
        keys = Arc::new(one(made, "split")?);
    }
    Ok(Sorted { keys, values })
}

/// Keys and values after [`sort_by_key`].
pub struct Sorted<B> {
    /// The keys, in order.
    pub keys: Arc<B>,
    /// The values, moved with their keys.
    pub values: Arc<B>,
}

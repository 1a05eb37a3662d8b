//! What the backend needs of a device: buffers it can fill from and copy to the host, and
//! the launch of a generated kernel plan over them. [`super::Gpu`] is the real one (cudarc);
//! the tests implement it over host memory with the same kernel texts compiled as C++, so
//! the whole backend — placement, parameter packing, partial buffers, reshapes, the
//! fallbacks — runs the conformance suite on machines without a GPU.

use tessera_core::{DType, Result};

use crate::codegen::{KernelPlan, BLOCK};

/// An output buffer of [`Device::launch_grid`]: its length in bytes (at least one byte is
/// held) and how it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Uninitialised: the kernel writes every byte it is read at.
    Written(usize),
    /// Every byte set to the value before the kernel runs.
    Filled(usize, u8),
}

impl Output {
    /// Its length in bytes.
    pub fn len(self) -> usize {
        match self {
            Output::Written(n) | Output::Filled(n, _) => n,
        }
    }

    /// Whether it holds no bytes of data.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// One device of a [`super::CudaBackend`].
pub trait Device: Send + Sync + std::fmt::Debug + 'static {
    /// A buffer in the device's memory, holding bytes.
    type Buf: Send + Sync + 'static;

    /// Its multiprocessor count (how many blocks it runs at once, roughly).
    fn sms(&self) -> u32;

    /// Its memory in bytes, where known (what a `device.memory-limit` given as a share of
    /// the card is a share of). Optional: the default is `None`.
    fn capacity(&self) -> Option<u64> {
        None
    }

    /// The bytes this device lets the backend hold at once, where it sets a bound (a
    /// [`super::Tiered`] device's `device.memory-limit`; past it buffers spill). Optional:
    /// the default is `None`.
    fn memory_limit(&self) -> Option<u64> {
        None
    }

    /// A new buffer holding `bytes` (at least one byte long, even when `bytes` is empty).
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`] (out of memory, a failed copy).
    fn upload(&self, bytes: &[u8]) -> Result<Self::Buf>;

    /// The first `len` bytes of `buf`, on the host.
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`].
    fn download(&self, buf: &Self::Buf, len: usize) -> Result<Vec<u8>>;

    /// Runs `plan` over `inputs` (one buffer per input slot of its entry); returns a new
    /// output buffer of `out_bytes` bytes.
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`] for a failed allocation, compile or launch.
    fn run(&self, plan: &KernelPlan, inputs: &[&Self::Buf], out_bytes: usize) -> Result<Self::Buf>;

    /// A new buffer holding the first `len` bytes of each `(buffer, len)` in turn, copied
    /// on the device (how blocks stacked along their leading axis are joined).
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`] for a failed allocation or copy, or a length past a
    /// buffer's end.
    fn join(&self, parts: &[(&Self::Buf, usize)]) -> Result<Self::Buf>;

    /// Runs entry 0 of `plan` as `grid` blocks of [`BLOCK`] threads (fewer on host
    /// devices) with the arguments `P`, the `inputs` in order, then one fresh buffer per
    /// entry of `outputs`; returns those buffers. The kernels of the dataframe backend have
    /// this shape: they stride over their rows themselves and read `gridDim` and
    /// `blockDim`, so any grid and block size is correct. An output is either written
    /// whole by the kernel ([`Output::Written`]) or filled with a byte first and then
    /// updated in place, by atomics ([`Output::Filled`]: a hash table, accumulators).
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`] for a failed allocation, compile or launch.
    fn launch_grid(
        &self,
        plan: &KernelPlan,
        grid: u32,
        inputs: &[&Self::Buf],
        outputs: &[Output],
    ) -> Result<Vec<Self::Buf>>;

    /// The product `op(a) @ b` of C-order `dtype` matrices through the device's BLAS
    /// library, where it has one for `dtype`: `op(a)` is `a` (`m x k`) or, with
    /// `transpose_a`, `aᵀ` of `a` stored `k x m`; `b` is `k x n`; the result is `m x n`.
    /// `Ok(None)` when no library serves this product, and the backend launches its own
    /// kernel instead. Optional: the default is `Ok(None)`.
    ///
    /// # Errors
    /// [`tessera_core::Error::Device`] for a failed allocation or library call.
    fn blas_product(
        &self,
        dtype: DType,
        transpose_a: bool,
        (m, k, n): (usize, usize, usize),
        a: &Self::Buf,
        b: &Self::Buf,
    ) -> Result<Option<Self::Buf>> {
        let _ = (dtype, transpose_a, m, k, n, a, b);
        Ok(None)
    }
}

/// The blocks per output element for a reduction's first pass: enough to keep every SM
/// busy when there are few outputs, one when there are many.
pub fn parts_for(kept: u64, reduced: u64, sms: u32) -> u64 {
    let per_block = u64::from(BLOCK) * 16;
    let want = reduced.div_ceil(per_block).max(1);
    let room = (u64::from(sms) * 8).div_ceil(kept.max(1)).max(1);
    want.min(room).min(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_split_only_when_outputs_are_few() {
        assert_eq!(parts_for(1, 4_000_000, 132), 977);
        assert_eq!(parts_for(1_000_000, 4_000, 132), 1);
        assert_eq!(parts_for(1, 10, 132), 1);
        assert_eq!(parts_for(4, 4_000_000, 132), 264);
    }
}

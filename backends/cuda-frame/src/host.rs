//! The host fallback: a step the device does not run natively goes to the CPU frame
//! backend — its inputs copied to the host, the CPU kernel run, the results copied back to
//! the device of the first input. Each such call is recorded
//! ([`tessera_core::fallback::record`]: logged once, read by the conformance suite as
//! `fb`) and, under `dataframe.fallback = "error"`, refused with the reason instead.

use tessera_core::config::FallbackPolicy;
use tessera_core::frame::{DataFrameBackend, Partition};
use tessera_core::{Error, Result};
use tessera_cpu_frame::CpuFrameBackend;

use super::CudaFrameBackend;
use tessera_cuda::device::Device;

impl<D: Device> CudaFrameBackend<D> {
    /// Records the fallback of `op`, or refuses it under `dataframe.fallback = "error"`.
    pub(super) fn allow_fallback(&self, op: &str, why: &str) -> Result<()> {
        let policy = match self.policy {
            Some(p) => p,
            None => tessera_core::config::dataframe_fallback()?,
        };
        match policy {
            FallbackPolicy::Allow => {
                tessera_core::fallback::record(&self.name, op, why);
                Ok(())
            }
            FallbackPolicy::Error => Err(Error::FrameUnsupported {
                backend: self.name.clone(),
                op: format!(
                    "{op} on the device ({why}); dataframe.fallback = \"error\" refuses host \
                     fallbacks (set it to \"allow\" to run them)"
                ),
            }),
        }
    }

    /// `parts` on the host as CPU partitions, and the device of the first.
    fn to_host(&self, op: &str, parts: &[&Partition]) -> Result<(Vec<Partition>, usize)> {
        let mut device = None;
        let host = parts
            .iter()
            .map(|p| {
                let b = self.batch(p, op)?;
                device.get_or_insert(b.device);
                self.host.import_batch(self.download(b)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((host, device.unwrap_or_else(|| self.place())))
    }

    /// A CPU partition copied to `device`.
    fn back(&self, p: &Partition, device: usize) -> Result<Partition> {
        self.upload(&self.host.export_batch(p)?, device)
    }

    /// Runs `f` on host copies of `parts` with the CPU backend; its result comes back to
    /// the device of the first input.
    pub(super) fn on_host(
        &self,
        op: &str,
        why: &str,
        parts: &[&Partition],
        f: impl FnOnce(&CpuFrameBackend, &[Partition]) -> Result<Partition>,
    ) -> Result<Partition> {
        self.allow_fallback(op, why)?;
        let (host, device) = self.to_host(op, parts)?;
        self.back(&f(&self.host, &host)?, device)
    }

    /// [`Self::on_host`] for a step with several results.
    pub(super) fn on_host_many(
        &self,
        op: &str,
        why: &str,
        parts: &[&Partition],
        f: impl FnOnce(&CpuFrameBackend, &[Partition]) -> Result<Vec<Partition>>,
    ) -> Result<Vec<Partition>> {
        self.allow_fallback(op, why)?;
        let (host, device) = self.to_host(op, parts)?;
        f(&self.host, &host)?
            .iter()
            .map(|p| self.back(p, device))
            .collect()
    }
}

//! A [`Device`] over host memory that runs the generated kernels through the host shim:
//! the CUDA backend's own code — placement over several devices, parameter packing,
//! partial buffers, reshapes, the matmul kernels, joins on the device and the concatenate
//! fallback — runs on it unchanged, minus only the cudarc calls.

use std::sync::Arc;

use crate::codegen::KernelPlan;
use crate::device::{Device, Output};
use tessera_core::{Error, Result};

use super::shim::HostKernels;

/// One host "device" (several share one set of compiled kernels).
#[derive(Debug, Clone)]
pub struct HostDevice {
    kernels: Arc<HostKernels>,
}

impl HostDevice {
    /// A device running the kernels of `kernels` (devices may share one library).
    pub fn new(kernels: Arc<HostKernels>) -> HostDevice {
        HostDevice { kernels }
    }
}

impl Device for HostDevice {
    type Buf = Vec<u8>;

    fn sms(&self) -> u32 {
        4
    }

    fn upload(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let mut v = bytes.to_vec();
        v.resize(v.len().max(1), 0);
        Ok(v)
    }

    fn download(&self, buf: &Vec<u8>, len: usize) -> Result<Vec<u8>> {
        buf.get(..len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::Device {
                backend: "cuda-host".into(),
                op: "download".into(),
                detail: format!("{len} bytes asked of a buffer of {}", buf.len()),
            })
    }

    fn join(&self, parts: &[(&Vec<u8>, usize)]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for &(buf, len) in parts {
            out.extend_from_slice(&self.download(buf, len)?);
        }
        out.resize(out.len().max(1), 0);
        Ok(out)
    }

    fn launch_grid(
        &self,
        plan: &KernelPlan,
        grid: u32,
        inputs: &[&Vec<u8>],
        outputs: &[Output],
    ) -> Result<Vec<Vec<u8>>> {
        let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
        self.kernels
            .run_grid(plan, grid, &refs, outputs)
            .map_err(|detail| Error::Device {
                backend: "cuda-host".into(),
                op: "launch".into(),
                detail,
            })
    }

    fn run(&self, plan: &KernelPlan, inputs: &[&Vec<u8>], out_bytes: usize) -> Result<Vec<u8>> {
        let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
        self.kernels
            .run_bytes(plan, &refs, out_bytes)
            .map_err(|detail| Error::Device {
                backend: "cuda-host".into(),
                op: "run".into(),
                detail,
            })
    }
}

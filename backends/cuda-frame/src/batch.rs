//! [`DeviceBatch`]: a partition of the CUDA frame backend, the columns of one batch in one
//! device's memory. The operators (`program`, `groupby`, `join`, `sort`, `concat`) read and
//! build them; the backend (`mod.rs`) hands them out as partitions.

use std::any::Any;

use arrow_schema::SchemaRef;
use tessera_core::frame::PartitionData;

use super::column::DeviceArray;

/// A partition in one device's memory: the batch's schema and its columns.
pub struct DeviceBatch<B> {
    pub(super) schema: SchemaRef,
    pub(super) rows: usize,
    pub(super) columns: Vec<DeviceArray<B>>,
    pub(super) device: usize,
    pub(super) backend: String,
}

impl<B> std::fmt::Debug for DeviceBatch<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBatch({}:{}, {} rows x {} columns)",
            self.backend,
            self.device,
            self.rows,
            self.columns.len()
        )
    }
}

impl<B> DeviceBatch<B> {
    /// The device holding it.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Its columns, in schema order.
    pub fn columns(&self) -> &[DeviceArray<B>] {
        &self.columns
    }
}

impl<B: Send + Sync + 'static> PartitionData for DeviceBatch<B> {
    fn backend(&self) -> &str {
        &self.backend
    }
    fn num_rows(&self) -> usize {
        self.rows
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn nbytes(&self) -> usize {
        self.columns.iter().map(DeviceArray::nbytes).sum()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

//! # tessera-cuda-frame
//!
//! The `cuda` dataframe backend, over `tessera-cuda`'s devices, kernel generator and NVRTC:
//! partitions whose columns live in device memory in Arrow's
//! layout ([`mod@column`]); fused filter/projection programs ([`program`]), groupbys
//! ([`groupby`]), joins ([`join`]), sorts ([`sort`]), concatenation ([`mod@concat`]) and
//! hash partitioning as generated kernels; what they do not cover run on the host
//! through the CPU frame backend — recorded, logged, announced by `explain()` before the
//! plan runs, and refused instead under `dataframe.fallback = "error"` (`host.rs`).
//!
//! **Deterministic.** Every kernel that combines rows does so with integer atomics only
//! (counts, integer sums, min/max of integers, exact multi-word decimal sums: the same
//! result in any order) or in an order fixed by block scans over contiguous row ranges
//! (filters, group numbering, sorts, joins); float sums add each group's rows in row
//! order, as the CPU backend does: the same answer bits on every run, and the CPU's.
//!
//! **Why Arrow's layout on the device.** A batch goes to the device and comes back as a
//! copy of its buffers: no conversion per value on either side, the validity bitmap
//! included. A slice is a new offset over the same buffers. Kernels read columns as Arrow
//! defines them, so a column handed over by another engine needs no reshaping.
//!
//! **What runs natively.** Each module's `native` says, for a step's schema and
//! arguments, whether its kernels cover it, or why not (the reason a fallback records and
//! `explain()` shows). Not yet covered: medians,
//! quantiles and distinct counts, right and outer joins, string sort keys, range
//! partitioning, windows, decimal division and string functions that rewrite text.
//!
//! **Placement.** Partitions made from host data go to the devices in turn; a step runs
//! on the device of its first input, and inputs held by another device come over through
//! the host.

mod batch;
pub mod column;
pub mod concat;
pub mod groupby;
mod host;
pub mod host_devices;
pub mod join;
mod launch;
pub mod program;
pub mod scan;
pub mod sort;
pub mod strings;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{make_array, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, SchemaRef};
use tessera_core::frame::{
    downcast_partition, AggFunc, AggSpec, DataFrameBackend, FrameCapabilities, FrameProgram,
    JoinSpec, Partition, PlanStep, SortKey, StoredForms, WindowSpec,
};
use tessera_core::{Error, Result};
use tessera_cpu_frame::CpuFrameBackend;
use tessera_cuda::device::{Device, Gpu, Tiered};

use column::DeviceArray;

pub use batch::DeviceBatch;

/// The backend's registered name.
pub const NAME: &str = "cuda";

/// Why the steps without device kernels run on the host.
pub(crate) const NOT_BUILT: &str = "no device kernel yet; runs on the CPU frame backend \
     (copies both ways)";

/// The CUDA dataframe backend over a set of devices: every visible GPU ([`Gpu`]) in the
/// registered `cuda` backend; tests run it over host devices that execute the same kernel
/// texts.
#[derive(Debug)]
pub struct CudaFrameBackend<D: Device = Tiered<Gpu>> {
    name: String,
    devices: Vec<D>,
    next: AtomicUsize,
    host: CpuFrameBackend,
    /// Every distinct kernel text generated so far (programs, groupbys), by its hash.
    generated: Mutex<BTreeMap<u64, Vec<tessera_cuda::codegen::KernelPlan>>>,
    /// The fallback policy fixed for this backend, or `None` to read
    /// `dataframe.fallback` at each step.
    policy: Option<tessera_core::config::FallbackPolicy>,
}

impl CudaFrameBackend<Tiered<Gpu>> {
    /// Opens `count` GPUs as the `cuda` dataframe backend, their memory in tiers shared
    /// with the array backend ([`tessera_cuda::device::open_gpus`]).
    ///
    /// # Errors
    /// [`Error::Device`] when a device cannot be opened; a bad memory setting.
    pub fn open(count: usize) -> Result<CudaFrameBackend<Tiered<Gpu>>> {
        CudaFrameBackend::with_devices(NAME, tessera_cuda::device::open_gpus(count)?.devices())
    }
}

impl<D: Device> CudaFrameBackend<D> {
    /// The backend `name` over `devices` (at least one).
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty device list.
    pub fn with_devices(name: &str, devices: Vec<D>) -> Result<CudaFrameBackend<D>> {
        if devices.is_empty() {
            return Err(Error::invalid(
                name,
                "a device backend needs at least one device",
            ));
        }
        Ok(CudaFrameBackend {
            name: name.to_string(),
            devices,
            next: AtomicUsize::new(0),
            host: CpuFrameBackend::default(),
            generated: Mutex::default(),
            policy: None,
        })
    }

    /// This backend with its fallback policy fixed, whatever `dataframe.fallback` says
    /// (an application that must never leave the device, or a test).
    pub fn with_fallback_policy(
        mut self,
        policy: tessera_core::config::FallbackPolicy,
    ) -> CudaFrameBackend<D> {
        self.policy = Some(policy);
        self
    }

    /// The devices, in ordinal order.
    pub fn devices(&self) -> &[D] {
        &self.devices
    }

    /// Every distinct kernel this backend has generated so far (each program's three
    /// entries, then the string gather's): what a compile check or a warm-up of the
    /// kernel cache builds.
    pub fn generated_kernels(&self) -> Vec<tessera_cuda::codegen::KernelPlan> {
        let mut out: Vec<_> = self
            .generated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .flatten()
            .cloned()
            .collect();
        out.extend(strings::plans());
        out.extend(scan::plans());
        out
    }

    /// Keeps the kernels of a text generated for the first time (`generated_kernels`).
    fn remember(&self, hash: u64, plans: impl FnOnce() -> Vec<tessera_cuda::codegen::KernelPlan>) {
        self.generated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(hash)
            .or_insert_with(plans);
    }

    /// The partial aggregation of `b` on its device, when the generator covers it.
    fn device_partial(
        &self,
        b: &DeviceBatch<D::Buf>,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> std::result::Result<Result<Partition>, String> {
        let g = groupby::native(&b.schema, keys, aggs)?;
        self.remember(g.hash(), || g.plans());
        Ok(groupby::run(&self.devices[b.device], &g, b)
            .map(|s| self.wrap(g.schema().clone(), s.rows, s.columns, b.device)))
    }

    /// The final step of a groupby on the device, when every aggregation's result is its
    /// state (count, sum, min, max, first, last) and the keys sort there: the state's
    /// columns renamed (no copy), then sorted by the keys.
    fn device_finalize(
        &self,
        b: &DeviceBatch<D::Buf>,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> std::result::Result<Result<Partition>, String> {
        let finish = finalize_plan(&b.schema, keys, aggs)?;
        let columns = finish
            .picked
            .iter()
            .map(|&i| b.columns[i].clone())
            .collect();
        let renamed = self.wrap(finish.schema, b.rows, columns, b.device);
        Ok((|| {
            let done = match &finish.program {
                Some(p) => self.evaluate(&renamed, p)?,
                None => renamed,
            };
            if finish.by.is_empty() {
                Ok(done)
            } else {
                self.sort(&done, &finish.by)
            }
        })())
    }

    fn place(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.devices.len()
    }

    fn batch<'a>(&self, p: &'a Partition, op: &str) -> Result<&'a DeviceBatch<D::Buf>> {
        downcast_partition::<DeviceBatch<D::Buf>>(p, &self.name, op)
    }

    fn wrap(
        &self,
        schema: SchemaRef,
        rows: usize,
        columns: Vec<DeviceArray<D::Buf>>,
        device: usize,
    ) -> Partition {
        Arc::new(DeviceBatch {
            schema,
            rows,
            columns,
            device,
            backend: self.name.clone(),
        })
    }

    /// `batch` copied to device `device`, each column in its [`column::storage`] type.
    fn upload(&self, batch: &RecordBatch, device: usize) -> Result<Partition> {
        let columns = batch
            .columns()
            .iter()
            .map(|c| {
                let held = column::storage(c.data_type());
                let data = if held == *c.data_type() {
                    c.to_data()
                } else {
                    arrow_cast::cast(c, &held)
                        .map_err(|e| Error::arrow("import_batch", e))?
                        .to_data()
                };
                column::upload(&self.devices[device], &data)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.wrap(batch.schema(), batch.num_rows(), columns, device))
    }

    /// `b` copied to the host, each column cast back to its schema type where the device
    /// holds it in another.
    fn download(&self, b: &DeviceBatch<D::Buf>) -> Result<RecordBatch> {
        let columns = b
            .columns
            .iter()
            .zip(b.schema.fields())
            .map(|(c, f)| {
                let a = make_array(column::download(&self.devices[b.device], c)?);
                if a.data_type() == f.data_type() {
                    Ok(a)
                } else {
                    arrow_cast::cast(&a, f.data_type()).map_err(|e| Error::arrow("export_batch", e))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new_with_options(
            b.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(b.rows)),
        )
        .map_err(|e| Error::arrow("export_batch", e))
    }
}

impl<D: Device> DataFrameBackend for CudaFrameBackend<D> {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> FrameCapabilities {
        // Everything the CPU backend has: what the device lacks runs there, recorded.
        FrameCapabilities {
            windows: true,
            filter_joins: true,
            stored_forms: StoredForms {
                dictionary_keys: true,
                narrow_decimals: true,
                view_keys: false,
            },
            ..FrameCapabilities::default()
        }
    }

    fn memory_budget(&self) -> Option<u64> {
        self.devices.iter().filter_map(Device::memory_limit).min()
    }

    fn fallback_note(&self, step: PlanStep<'_>) -> Option<String> {
        let what = match step {
            PlanStep::Evaluate { schema, program } => {
                return program::native(schema, program)
                    .err()
                    .map(|why| format!("runs on the host: {why}"));
            }
            PlanStep::Aggregate { schema, keys, aggs } => {
                let g = match groupby::native(schema, keys, aggs) {
                    Ok(g) => g,
                    Err(why) => return Some(format!("the groupby runs on the host: {why}")),
                };
                let states = g.schema();
                let mut host = Vec::new();
                if let Err(why) = concat::native(states)
                    .and_then(|_| groupby::native_combine(states, keys, aggs).map(|_| ()))
                {
                    host.push(format!("combining the partial states ({why})"));
                }
                if let Err(why) = finalize_plan(states, keys, aggs) {
                    host.push(format!("the final step ({why})"));
                }
                return (!host.is_empty()).then(|| {
                    format!(
                        "the partial aggregation runs on the device; on the host: {}",
                        host.join("; ")
                    )
                });
            }
            PlanStep::Join { left, right, spec } => {
                let native = join::native(left, right, spec).and_then(|_| {
                    // A shuffle's partitioning hashes the keys on the device too.
                    groupby::native(left, &spec.left_on, &[]).map(|_| ())
                });
                return native
                    .err()
                    .map(|why| format!("the join runs on the host: {why}"));
            }
            PlanStep::Sort { schema, by, top } => {
                let native =
                    sort::native(schema, by).and_then(|_| concat::native(schema).map(|_| ()));
                return match (native, top) {
                    (Ok(()), true) => None,
                    (Ok(()), false) => Some(format!(
                        "each partition's sort runs on the device; the range partitioning \
                         between them runs on the host: {}",
                        NOT_BUILT
                    )),
                    (Err(why), _) => Some(format!("the sort runs on the host: {why}")),
                };
            }
            PlanStep::Repartition { schema } => {
                return concat::native(schema)
                    .err()
                    .map(|why| format!("moving rows between partitions runs on the host: {why}"));
            }
            PlanStep::Window(_) => "the window function",
        };
        Some(format!("{what} runs on the host: {}", NOT_BUILT))
    }

    fn import_batch(&self, batch: RecordBatch) -> Result<Partition> {
        self.upload(&batch, self.place())
    }

    fn export_batch(&self, part: &Partition) -> Result<RecordBatch> {
        self.download(self.batch(part, "export_batch")?)
    }

    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition> {
        let b = self.batch(part, "evaluate")?;
        match program::native(&b.schema, program) {
            Ok(plan) => {
                self.remember(plan.hash(), || plan.plans());
                let out = program::run(&self.devices[b.device], &plan, b)?;
                Ok(self.wrap(out.schema, out.rows, out.columns, b.device))
            }
            Err(why) => self.on_host("evaluate", &why, &[part], |h, p| h.evaluate(&p[0], program)),
        }
    }

    fn hash_partition(
        &self,
        part: &Partition,
        keys: &[String],
        n: usize,
    ) -> Result<Vec<Partition>> {
        let b = self.batch(part, "hash_partition")?;
        if n == 0 || n > u32::MAX as usize {
            return Err(Error::invalid(
                "hash_partition",
                format!("{n} outputs; give 1 to 2^32 - 1"),
            ));
        }
        // Whenever the keys hash on the device, the buckets are the device's: the two
        // sides of a shuffle join must agree on them whatever else their columns hold.
        match groupby::native(&b.schema, keys, &[]) {
            Ok(g) => {
                self.remember(g.hash(), || g.plans());
                let device = &self.devices[b.device];
                match program::gatherable(&b.schema) {
                    Ok(_) => Ok(groupby::partition(device, &g, b, n)?
                        .into_iter()
                        .map(|(rows, columns)| self.wrap(b.schema.clone(), rows, columns, b.device))
                        .collect()),
                    Err(why) => {
                        // The device's buckets, the rows moved on the host.
                        self.allow_fallback("hash_partition", &why)?;
                        let buckets = groupby::buckets(device, &g, b, n)?;
                        let batch = self.download(b)?;
                        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n];
                        for (r, &k) in buckets.iter().enumerate() {
                            rows[k as usize].push(r as u32);
                        }
                        rows.into_iter()
                            .map(|idx| {
                                let taken = arrow_select::take::take_record_batch(
                                    &batch,
                                    &arrow_array::UInt32Array::from(idx),
                                )
                                .map_err(|e| Error::arrow("hash_partition", e))?;
                                self.upload(&taken, b.device)
                            })
                            .collect()
                    }
                }
            }
            Err(why) => self.on_host_many("hash_partition", &why, &[part], |h, p| {
                h.hash_partition(&p[0], keys, n)
            }),
        }
    }

    fn range_partition(
        &self,
        part: &Partition,
        by: &[SortKey],
        bounds: &RecordBatch,
    ) -> Result<Vec<Partition>> {
        self.on_host_many("range_partition", NOT_BUILT, &[part], |h, p| {
            h.range_partition(&p[0], by, bounds)
        })
    }

    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let b = self.batch(part, "aggregate")?;
        match self.device_partial(b, keys, aggs) {
            Ok(done) => done,
            Err(why) => self.on_host("aggregate", &why, &[part], |h, p| {
                h.aggregate_partial(&p[0], keys, aggs)
            }),
        }
    }

    fn aggregate_partial_of(
        &self,
        part: &Partition,
        program: &FrameProgram,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        // Both on the device when both are covered; else one trip to the host for the
        // program and the aggregation together.
        let b = self.batch(part, "aggregate")?;
        let covered = program::native(&b.schema, program)
            .and_then(|p| groupby::native(p.schema(), keys, aggs).map(|_| ()));
        match covered {
            Ok(()) => self.aggregate_partial(&self.evaluate(part, program)?, keys, aggs),
            Err(why) => self.on_host("aggregate", &why, &[part], |h, p| {
                h.aggregate_partial_of(&p[0], program, keys, aggs)
            }),
        }
    }

    fn aggregate_combine(
        &self,
        parts: &[Partition],
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let refs: Vec<&Partition> = parts.iter().collect();
        let covered = match parts.first() {
            Some(first) => {
                let schema = first.schema();
                concat::native(&schema).and_then(|_| groupby::native_combine(&schema, keys, aggs))
            }
            None => Err("no partitions".to_string()),
        };
        match covered {
            Ok(g) => {
                // The states one after the other, then grouped again on the device.
                let all = self.concat(parts)?;
                let b = self.batch(&all, "aggregate")?;
                self.remember(g.hash(), || g.plans());
                let s = groupby::run(&self.devices[b.device], &g, b)?;
                Ok(self.wrap(g.schema().clone(), s.rows, s.columns, b.device))
            }
            Err(why) => self.on_host("aggregate", &why, &refs, |h, p| {
                h.aggregate_combine(p, keys, aggs)
            }),
        }
    }

    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let b = self.batch(state, "aggregate")?;
        match self.device_finalize(b, keys, aggs) {
            Ok(done) => done,
            Err(why) => self.on_host("aggregate", &why, &[state], |h, p| {
                h.aggregate_finalize(&p[0], keys, aggs)
            }),
        }
    }

    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let (l, r) = (self.batch(left, "join")?, self.batch(right, "join")?);
        match join::native(&l.schema, &r.schema, spec) {
            Ok(j) => {
                self.remember(j.hash(), || j.plans());
                let right_here;
                let r = if r.device == l.device {
                    r
                } else {
                    // The right side comes to the left's device through the host.
                    right_here = self.upload(&self.download(r)?, l.device)?;
                    self.batch(&right_here, "join")?
                };
                let out = join::run(&self.devices[l.device], &j, l, r)?;
                Ok(self.wrap(j.schema().clone(), out.rows, out.columns, l.device))
            }
            Err(why) => self.on_host("join", &why, &[left, right], |h, p| {
                h.join(&p[0], &p[1], spec)
            }),
        }
    }

    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition> {
        let b = self.batch(part, "sort")?;
        match sort::native(&b.schema, by) {
            Ok(s) => {
                self.remember(s.hash(), || s.plans());
                let columns = sort::run(&self.devices[b.device], &s, b)?;
                Ok(self.wrap(b.schema.clone(), b.rows, columns, b.device))
            }
            Err(why) => self.on_host("sort", &why, &[part], |h, p| h.sort(&p[0], by)),
        }
    }

    fn sort_limit(&self, part: &Partition, by: &[SortKey], n: usize) -> Result<Partition> {
        let b = self.batch(part, "sort")?;
        if sort::native(&b.schema, by).is_ok() {
            // The sort's first rows: the device sorts the whole partition for now.
            return self.slice(&self.sort(part, by)?, 0, n);
        }
        self.on_host("sort", NOT_BUILT, &[part], |h, p| {
            h.sort_limit(&p[0], by, n)
        })
    }

    fn concat(&self, parts: &[Partition]) -> Result<Partition> {
        let refs: Vec<&Partition> = parts.iter().collect();
        let batches = parts
            .iter()
            .map(|p| self.batch(p, "concat"))
            .collect::<Result<Vec<_>>>()?;
        let native = match batches.first() {
            Some(first)
                if batches
                    .iter()
                    .all(|b| b.schema.fields() == first.schema.fields()) =>
            {
                concat::native(&first.schema)
            }
            Some(_) => Err("partitions of different schemas".to_string()),
            None => Err("no partitions".to_string()),
        };
        match native {
            Ok(c) => {
                self.remember(c.hash(), || c.plans());
                let device = batches[0].device;
                // Partitions held elsewhere come to the first one's device through the host.
                let moved = batches
                    .iter()
                    .map(|b| {
                        if b.device == device {
                            Ok(None)
                        } else {
                            self.upload(&self.download(b)?, device).map(Some)
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                let here = batches
                    .iter()
                    .zip(&moved)
                    .map(|(b, m)| match m {
                        Some(p) => self.batch(p, "concat"),
                        None => Ok(*b),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let (rows, columns) = concat::run(&self.devices[device], &c, &here)?;
                Ok(self.wrap(batches[0].schema.clone(), rows, columns, device))
            }
            Err(why) => self.on_host("concat", &why, &refs, |h, p| h.concat(p)),
        }
    }

    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition> {
        let b = self.batch(part, "slice")?;
        let offset = offset.min(b.rows);
        let len = len.min(b.rows - offset);
        let columns = b.columns.iter().map(|c| c.slice(offset, len)).collect();
        Ok(self.wrap(b.schema.clone(), len, columns, b.device))
    }

    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition> {
        let b = self.batch(part, "take")?;
        let native = if indices.iter().any(|&i| i >= b.rows as u64) {
            // The CPU backend names the position that is out of range.
            Err("a position past the partition".to_string())
        } else {
            program::gatherable(&b.schema)
        };
        match native {
            Ok(()) => {
                let device = &self.devices[b.device];
                let bytes: Vec<u8> = indices
                    .iter()
                    .flat_map(|&i| (i as u32).to_le_bytes())
                    .collect();
                let idx = device.upload(&bytes)?;
                let columns = program::gather(device, b, &idx, indices.len())?;
                Ok(self.wrap(b.schema.clone(), indices.len(), columns, b.device))
            }
            Err(why) => self.on_host("take", &why, &[part], |h, p| h.take(&p[0], indices)),
        }
    }

    fn window(
        &self,
        part: &Partition,
        spec: &WindowSpec,
        carry: Option<&Partition>,
    ) -> Result<Partition> {
        let mut parts = vec![part];
        parts.extend(carry);
        self.on_host("window", NOT_BUILT, &parts, |h, p| {
            h.window(&p[0], spec, p.get(1))
        })
    }

    fn window_carry(&self, part: &Partition, spec: &WindowSpec) -> Result<Partition> {
        self.on_host("window", NOT_BUILT, &[part], |h, p| {
            h.window_carry(&p[0], spec)
        })
    }
}

/// The final step of a groupby as the device runs it.
struct Finish {
    /// The state columns taken, renamed: the keys, each result that is its state, and a
    /// mean's sum and count.
    schema: SchemaRef,
    /// Which state columns, in that order.
    picked: Vec<usize>,
    /// The means' division (`sum / count`, null for no value), when there are means.
    program: Option<FrameProgram>,
    /// The sort by the keys.
    by: Vec<SortKey>,
}

/// How the device finishes a groupby, or why it cannot.
fn finalize_plan(
    state: &SchemaRef,
    keys: &[String],
    aggs: &[AggSpec],
) -> std::result::Result<Finish, String> {
    use tessera_core::frame::expr::{col, lit, when, Expr, Literal};
    let mut fields = Vec::new();
    let mut picked = Vec::new();
    let mut take = |name: &str, as_name: &str| -> std::result::Result<DataType, String> {
        let i = state
            .index_of(name)
            .map_err(|_| format!("no state column '{name}'"))?;
        let t = state.field(i).data_type().clone();
        fields.push(arrow_schema::Field::new(as_name, t.clone(), true));
        picked.push(i);
        Ok(t)
    };
    let mut project: Vec<(String, Expr)> = Vec::new();
    let mut means = false;
    for k in keys {
        take(k, k)?;
        project.push((k.clone(), col(k.as_str())));
    }
    for a in aggs {
        let o = &a.output;
        let part = match a.func {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => "value",
            AggFunc::Mean => {
                // The CPU's `sum / count as f64`, null where the group had no value.
                let (sum, count) = (format!("{o}#sum"), format!("{o}#count"));
                if take(&sum, &sum)? != DataType::Float64 {
                    return Err(format!("finishing mean({}) of a decimal sum", a.column));
                }
                take(&count, &count)?;
                project.push((
                    o.clone(),
                    when(col(count.as_str()).gt(lit(0i64)))
                        .then(col(sum.as_str()) / col(count.as_str()).cast(DataType::Float64))
                        .otherwise(Expr::Literal(Literal::Null)),
                ));
                means = true;
                continue;
            }
            f => {
                return Err(format!(
                    "finishing {}({}) has no device kernel yet",
                    f.name(),
                    a.column
                ))
            }
        };
        take(&format!("{o}#{part}"), o)?;
        project.push((o.clone(), col(o.as_str())));
    }
    let schema: SchemaRef = Arc::new(arrow_schema::Schema::new(fields));
    let program = means.then(|| FrameProgram {
        steps: vec![tessera_core::frame::FrameStep::Project(project)],
    });
    let done = match &program {
        Some(p) => program::native(&schema, p)?.schema().clone(),
        None => schema.clone(),
    };
    let by: Vec<SortKey> = keys
        .iter()
        .map(|k| SortKey {
            column: k.clone(),
            descending: false,
        })
        .collect();
    if !by.is_empty() {
        sort::native(&done, &by)?;
    }
    Ok(Finish {
        schema,
        picked,
        program,
        by,
    })
}

/// Why the `cuda` dataframe backend is unavailable: the probe's reason, pointing at the
/// dataframe backend's variable where it suggests another backend.
pub fn unavailable_reason(probe_reason: &str) -> String {
    probe_reason.replace("TESSERA_ARRAY_BACKEND", "TESSERA_DATAFRAME_BACKEND")
}

fn make() -> std::result::Result<tessera_core::frame::FrameBackendRef, String> {
    let d = tessera_cuda::ready().map_err(|r| unavailable_reason(&r))?;
    CudaFrameBackend::open(d.count)
        .map(|b| Arc::new(b) as tessera_core::frame::FrameBackendRef)
        .map_err(|e| e.to_string())
}

tessera_core::inventory::submit! {
    tessera_core::registry::DataFrameBackendFactory::new("cuda", make)
}

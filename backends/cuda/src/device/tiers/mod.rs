//! Device memory in three tiers: a device holds at most `device.memory-limit`; past it the
//! least recently used buffers move to host memory, and past `device.host-limit` from there
//! to spill files under `spill-dir`; a kernel that reads a moved buffer brings it back
//! first. This is dask-cuda's device → host → disk spilling, done per buffer under the
//! backends rather than per task above them, so the array and dataframe backends (and
//! anything else written against [`Device`]) get it without a change.
//!
//! [`Tiered`] wraps any [`Device`] and is one itself. Its buffers are handles into one
//! [`Tiers`] ledger shared by the devices of a backend. Before a launch, the launch's
//! inputs are brought onto the device and *pinned* — a buffer a running kernel reads is
//! never moved — and room is made for its outputs by moving other buffers out, oldest use
//! first. A launch whose inputs and outputs cannot fit even with every unpinned buffer
//! moved waits for running kernels to finish when some are pinned, and is refused with the
//! sizes when none are (a kernel's working set must fit on the device: split the data into
//! more chunks or partitions). An allocation the device itself refuses (other processes,
//! fragmentation) moves every unpinned buffer off the device and is tried once more.
//!
//! On a GPU a launch returns once the kernel is queued: the pin covers the queueing, and a
//! later move of the buffer is ordered after the kernel by the buffer's stream events
//! (`GpuBuf`): its copy to the host waits for the kernel, and its memory returns to the
//! pool only after every queued use. A device's charge is what the ledger handed out,
//! each buffer its requested length; the pool's rounding adds at most its granularity per
//! buffer.
//!
//! Reading a buffer back to the host (`download`) does not bring it onto the device: a
//! spilled result is copied out of host memory or its spill file directly. Spill files are
//! the process's shared mechanism (`tessera_runtime::spill`): removed when their buffer
//! drops, whether the plan finished or failed. Every move is a span in a running profile
//! (`spill to host`, `spill to disk`, `unspill from host`, `unspill from disk`).

mod ledger;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use tessera_core::{DType, Error, Result};
use tessera_runtime::spill::SpillFile;

use super::memory::{Device, Output};
use crate::codegen::KernelPlan;
use ledger::{Entry, Ledger, Place};
pub use ledger::{TierMoves, TierUsage};

/// The bounds of the tiers.
#[derive(Debug, Clone, Default)]
pub struct TierLimits {
    /// Bytes each device may hold (`None`: no bound but the device's own).
    pub device: Option<u64>,
    /// Bytes spilled buffers may hold in host memory together (`None`: no bound).
    pub host: Option<u64>,
    /// Where spill files go (`None`: nowhere; a move that needs disk is an error).
    pub spill_dir: Option<PathBuf>,
}

/// What a set of tiered devices shares: the ledger and a signal for buffers unpinned or
/// freed.
struct Shared<B> {
    ledger: Mutex<Ledger<B>>,
    freed: Condvar,
}

impl<B> Shared<B> {
    fn lock(&self) -> MutexGuard<'_, Ledger<B>> {
        // The ledger is updated in whole steps; a panic elsewhere leaves it consistent.
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The devices of one backend and the ledger of their buffers across the three tiers.
pub struct Tiers<D: Device> {
    name: String,
    devices: Vec<D>,
    device_limit: Vec<u64>,
    host_limit: u64,
    spill_dir: Option<PathBuf>,
    shared: Arc<Shared<D::Buf>>,
}

impl<D: Device> std::fmt::Debug for Tiers<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiers")
            .field("name", &self.name)
            .field("device_limit", &self.device_limit)
            .field("host_limit", &self.host_limit)
            .finish()
    }
}

/// A buffer of a [`Tiered`] device: a handle to its bytes wherever they are. Dropping it
/// frees them (the device memory, the host copy or the spill file's share).
pub struct TieredBuf<B> {
    id: u64,
    len: u64,
    shared: Arc<Shared<B>>,
}

impl<B> Drop for TieredBuf<B> {
    fn drop(&mut self) {
        let gone = {
            let mut l = self.shared.lock();
            l.remove(self.id)
        };
        self.shared.freed.notify_all();
        // The entry (device memory, a host copy, a spill file's share) is dropped here,
        // after the ledger is unlocked.
        drop(gone);
    }
}

impl<B> std::fmt::Debug for TieredBuf<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TieredBuf(#{}, {} bytes)", self.id, self.len)
    }
}

impl<B> TieredBuf<B> {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no bytes (never: every buffer holds at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One device of a [`Tiers`] set, itself a [`Device`] whose buffers may spill.
pub struct Tiered<D: Device> {
    tiers: Arc<Tiers<D>>,
    ordinal: usize,
}

impl<D: Device> std::fmt::Debug for Tiered<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tiered({}:{})", self.tiers.name, self.ordinal)
    }
}

/// Whether a device error is an allocation the device refused.
fn out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Device { detail, .. }
        if detail.to_ascii_lowercase().contains("out of memory")
            || detail.contains("OUT_OF_MEMORY"))
}

/// The name of a plan's kernel, for errors.
fn kernel(plan: &KernelPlan) -> &str {
    plan.entries.first().map_or("a kernel", |e| e.name.as_str())
}

/// What making room found.
enum Room {
    /// The request fits now.
    Fits,
    /// It fits once running kernels unpin their buffers.
    Wait,
}

impl<D: Device> Tiers<D> {
    /// `devices` as one set under `limits`, named `name` in errors and profiles.
    pub fn new(name: &str, devices: Vec<D>, limits: TierLimits) -> Arc<Tiers<D>> {
        let device_limit = vec![limits.device.unwrap_or(u64::MAX); devices.len()];
        Tiers::with_limits(name, devices, device_limit, limits)
    }

    fn with_limits(
        name: &str,
        devices: Vec<D>,
        device_limit: Vec<u64>,
        limits: TierLimits,
    ) -> Arc<Tiers<D>> {
        let n = devices.len();
        Arc::new(Tiers {
            name: name.to_string(),
            devices,
            device_limit,
            host_limit: limits.host.unwrap_or(u64::MAX),
            spill_dir: limits.spill_dir,
            shared: Arc::new(Shared {
                ledger: Mutex::new(Ledger::new(n)),
                freed: Condvar::new(),
            }),
        })
    }

    /// `devices` under the configured limits: `device.memory-limit` of each device's
    /// capacity, `device.host-limit`, `spill-dir`.
    ///
    /// # Errors
    /// A bad value of one of those keys.
    pub fn configured(name: &str, devices: Vec<D>) -> Result<Arc<Tiers<D>>> {
        let share = tessera_core::config::device_memory_limit()?;
        let device_limit = devices
            .iter()
            .map(|d| share.bytes_of(d.capacity()).unwrap_or(u64::MAX))
            .collect();
        let limits = TierLimits {
            device: None,
            host: tessera_core::config::device_host_limit()?,
            spill_dir: tessera_core::config::spill_dir()?,
        };
        Ok(Tiers::with_limits(name, devices, device_limit, limits))
    }

    /// One [`Tiered`] device per device of the set, in ordinal order.
    pub fn devices(self: &Arc<Self>) -> Vec<Tiered<D>> {
        (0..self.devices.len())
            .map(|ordinal| Tiered {
                tiers: self.clone(),
                ordinal,
            })
            .collect()
    }

    /// The byte limit of device `ordinal` (`u64::MAX`: none).
    pub fn device_limit(&self, ordinal: usize) -> u64 {
        self.device_limit.get(ordinal).copied().unwrap_or(u64::MAX)
    }

    /// The byte limit of the host tier (`u64::MAX`: none).
    pub fn host_limit(&self) -> u64 {
        self.host_limit
    }

    /// What each tier holds now.
    pub fn usage(&self) -> TierUsage {
        self.shared.lock().usage()
    }

    /// The moves between tiers so far.
    pub fn moves(&self) -> TierMoves {
        self.shared.lock().moves
    }

    /// Puts buffer `id` in `place` ([`Ledger::relocate`]: charges and counts the move,
    /// timed from `start`) and records the move as a span of the running profile.
    fn relocate(&self, l: &mut Ledger<D::Buf>, id: u64, place: Place<D::Buf>, start: Instant) {
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if let Some((device, len, kind)) = l.relocate(id, place, ns) {
            self.span(device, kind, start, len);
        }
    }

    fn span(&self, device: usize, kind: &'static str, start: Instant, bytes: u64) {
        tessera_observe::profile::side_span(
            &format!("{}:{device} memory", self.name),
            tessera_observe::TaskTiming {
                kind,
                start,
                bytes_in: bytes,
                bytes_out: bytes,
                held_bytes: None,
            },
        );
    }

    fn no_spill_dir(&self, len: u64) -> Error {
        Error::Device {
            backend: self.name.clone(),
            op: "spill".into(),
            detail: format!(
                "{len} bytes must leave device memory (over device.memory-limit) and host \
                 memory (over device.host-limit), but spill-dir is `none`: set spill-dir, or \
                 raise device.host-limit"
            ),
        }
    }

    /// `bytes` in a spill file.
    fn to_disk(&self, bytes: &[u8]) -> Result<SpillFile> {
        let dir = self
            .spill_dir
            .as_deref()
            .ok_or_else(|| self.no_spill_dir(bytes.len() as u64))?;
        SpillFile::write(dir, bytes.len() as u64, |w| {
            w.write_all(bytes)
                .map_err(|e| Error::io(std::path::Path::new(dir), e))
        })
    }

    /// Moves the host buffer `id` to disk.
    fn host_to_disk(&self, l: &mut Ledger<D::Buf>, id: u64) -> Result<()> {
        let start = Instant::now();
        let Some(Entry {
            place: Place::Host(bytes),
            ..
        }) = l.entries.get(&id)
        else {
            return Ok(());
        };
        let file = self.to_disk(bytes)?;
        self.relocate(l, id, Place::Disk(Arc::new(file)), start);
        Ok(())
    }

    /// Where `len` bytes leaving a device go: host memory when the host tier has room for
    /// them once its oldest buffers (but `keep`, about to go back onto a device) went to
    /// disk; disk when they alone exceed it.
    fn host_has_room(&self, l: &mut Ledger<D::Buf>, len: u64, keep: &[u64]) -> Result<bool> {
        if len > self.host_limit {
            return Ok(false);
        }
        let mut oldest = l
            .host_by_age()
            .into_iter()
            .filter(|(id, _)| !keep.contains(id));
        while l.host_used + len > self.host_limit {
            match oldest.next() {
                Some((id, _)) => self.host_to_disk(l, id)?,
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Moves the device buffer `id` off its device: to host memory, or to disk when the
    /// host tier cannot take it (moving no buffer of `keep` there to make room).
    fn spill(&self, l: &mut Ledger<D::Buf>, id: u64, keep: &[u64]) -> Result<()> {
        let start = Instant::now();
        let Some(Entry {
            place: Place::Device(buf),
            len,
            device,
            ..
        }) = l.entries.get(&id)
        else {
            return Ok(());
        };
        let (buf, len, device) = (buf.clone(), *len, *device);
        let bytes = self.devices[device].download(&buf, len as usize)?;
        drop(buf);
        let place = if self.host_has_room(l, len, keep)? {
            Place::Host(bytes)
        } else {
            Place::Disk(Arc::new(self.to_disk(&bytes)?))
        };
        // The device buffer is freed here (its last handle).
        self.relocate(l, id, place, start);
        Ok(())
    }

    /// Bytes a launch on `device` reading `ids` and writing `out` more bytes still needs
    /// on the device.
    fn needed(&self, l: &Ledger<D::Buf>, device: usize, ids: &[u64], out: u64) -> Result<u64> {
        let mut need = out;
        for id in ids {
            let e = l.entries.get(id).ok_or_else(|| {
                Error::Internal(format!("{}: a freed buffer was read", self.name))
            })?;
            if e.device != device {
                return Err(Error::Internal(format!(
                    "{}: a buffer of device {} was given to a launch on device {device}",
                    self.name, e.device
                )));
            }
            if !matches!(e.place, Place::Device(_)) {
                need += e.len;
            }
        }
        Ok(need)
    }

    /// Moves buffers off `device`, oldest use first and never `keep` or a pinned one,
    /// until `need` more bytes fit under its limit.
    ///
    /// # Errors
    /// The request cannot fit even with every unpinned buffer moved and no kernel running.
    fn make_room(
        &self,
        l: &mut Ledger<D::Buf>,
        (device, op): (usize, &str),
        need: u64,
        keep: &[u64],
    ) -> Result<Room> {
        let limit = self.device_limit[device];
        let fits = |l: &Ledger<D::Buf>| l.device_used[device].saturating_add(need) <= limit;
        if fits(l) {
            return Ok(Room::Fits);
        }
        let evictable = l.evictable_on(device, keep);
        let movable: u64 = evictable.iter().map(|&(_, len)| len).sum();
        if (l.device_used[device] - movable).saturating_add(need) > limit {
            if l.pinned_on(device) > 0 {
                return Ok(Room::Wait);
            }
            let kept = l.device_used[device] - movable;
            return Err(Error::Device {
                backend: self.name.clone(),
                op: op.to_string(),
                detail: format!(
                    "needs {need} bytes more at once on device {device} besides the {kept} \
                     bytes of its inputs already there, over device.memory-limit ({limit} \
                     bytes): split the data into more chunks or partitions, or raise \
                     device.memory-limit"
                ),
            });
        }
        for (id, _) in evictable {
            if fits(l) {
                break;
            }
            self.spill(l, id, keep)?;
        }
        Ok(Room::Fits)
    }

    /// Brings `ids` onto `device`, pins them and reserves `out` bytes for the outputs;
    /// returns the inputs' device buffers in order.
    fn acquire(
        &self,
        (device, op): (usize, &str),
        ids: &[u64],
        out: u64,
    ) -> Result<Vec<Arc<D::Buf>>> {
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut l = self.shared.lock();
        loop {
            let need = self.needed(&l, device, &distinct, out)?;
            match self.make_room(&mut l, (device, op), need, &distinct)? {
                Room::Fits => break,
                Room::Wait => {
                    l = self.shared.freed.wait(l).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
        for &id in &distinct {
            self.unspill(&mut l, id)?;
        }
        let tick = l.tick();
        for id in &distinct {
            if let Some(e) = l.entries.get_mut(id) {
                e.pins += 1;
                e.tick = tick;
            }
        }
        l.device_used[device] += out;
        Ok(ids
            .iter()
            .filter_map(|id| match &l.entries.get(id)?.place {
                Place::Device(b) => Some(b.clone()),
                _ => None,
            })
            .collect())
    }

    /// Brings a spilled buffer back onto its device (room already made).
    fn unspill(&self, l: &mut Ledger<D::Buf>, id: u64) -> Result<()> {
        let start = Instant::now();
        let Some(e) = l.entries.get(&id) else {
            return Ok(());
        };
        let device = self
            .devices
            .get(e.device)
            .ok_or_else(|| Error::Internal(format!("{}: a buffer of no device", self.name)))?;
        let buf = match &e.place {
            Place::Device(_) => return Ok(()),
            Place::Host(bytes) => device.upload(bytes)?,
            Place::Disk(file) => device.upload(&file.read_to_vec()?)?,
        };
        self.relocate(l, id, Place::Device(Arc::new(buf)), start);
        Ok(())
    }

    /// Unpins `ids` and gives back what of the `out` bytes reserved `made` does not hold;
    /// adds `made` to the ledger on `device`.
    fn release(
        &self,
        device: usize,
        ids: &[u64],
        out: u64,
        made: Vec<(D::Buf, u64)>,
    ) -> Vec<TieredBuf<D::Buf>> {
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut l = self.shared.lock();
        for id in &distinct {
            if let Some(e) = l.entries.get_mut(id) {
                e.pins -= 1;
            }
        }
        l.device_used[device] -= out;
        let bufs = made
            .into_iter()
            .map(|(buf, len)| {
                l.device_used[device] += len;
                TieredBuf {
                    id: l.insert_on_device(device, buf, len),
                    len,
                    shared: self.shared.clone(),
                }
            })
            .collect();
        drop(l);
        self.shared.freed.notify_all();
        bufs
    }

    /// Moves every unpinned buffer off `device` (after an allocation it refused).
    fn spill_all(&self, device: usize) -> Result<()> {
        let mut l = self.shared.lock();
        l.moves.retries += 1;
        for (id, _) in l.evictable_on(device, &[]) {
            self.spill(&mut l, id, &[])?;
        }
        Ok(())
    }

    /// Runs `f` on `device` over `inputs` brought there and pinned, with `outs` bytes
    /// reserved for what it makes (one entry per output); an allocation the device refuses
    /// moves every unpinned buffer off and runs `f` once more.
    fn launch(
        &self,
        (device, op): (usize, &str),
        inputs: &[&TieredBuf<D::Buf>],
        outs: &[u64],
        f: impl Fn(&[&D::Buf]) -> Result<Vec<D::Buf>>,
    ) -> Result<Vec<TieredBuf<D::Buf>>> {
        for b in inputs {
            if !Arc::ptr_eq(&b.shared, &self.shared) {
                return Err(Error::Internal(format!(
                    "{}: a buffer of another device set was given to a launch",
                    self.name
                )));
            }
        }
        let ids: Vec<u64> = inputs.iter().map(|b| b.id).collect();
        let out: u64 = outs.iter().sum();
        let held = self.acquire((device, op), &ids, out)?;
        // Unpins and unreserves if `f` panics (a release below disarms it).
        struct Unpin<'a, D: Device> {
            tiers: &'a Tiers<D>,
            device: usize,
            ids: &'a [u64],
            out: u64,
            armed: bool,
        }
        impl<D: Device> Drop for Unpin<'_, D> {
            fn drop(&mut self) {
                if self.armed {
                    self.tiers
                        .release(self.device, self.ids, self.out, Vec::new());
                }
            }
        }
        let mut guard = Unpin {
            tiers: self,
            device,
            ids: &ids,
            out,
            armed: true,
        };
        let refs: Vec<&D::Buf> = held.iter().map(|b| b.as_ref()).collect();
        let made = match f(&refs) {
            Err(e) if out_of_memory(&e) => self.spill_all(device).and_then(|()| f(&refs)),
            r => r,
        };
        drop(refs);
        drop(held);
        guard.armed = false;
        match made {
            Ok(bufs) => {
                let sized = bufs.into_iter().zip(outs.iter().copied()).collect();
                Ok(self.release(device, &ids, out, sized))
            }
            Err(e) => {
                self.release(device, &ids, out, Vec::new());
                Err(e)
            }
        }
    }

    /// The first `len` bytes of `buf`, from wherever it is (a spilled buffer is read where
    /// it lies, not brought back onto the device).
    fn download(&self, buf: &TieredBuf<D::Buf>, len: usize) -> Result<Vec<u8>> {
        let too_long = || Error::Device {
            backend: self.name.clone(),
            op: "download".into(),
            detail: format!("{len} bytes asked of a buffer of {}", buf.len),
        };
        if len as u64 > buf.len {
            return Err(too_long());
        }
        let (device_buf, device) = {
            let mut l = self.shared.lock();
            let e = l.entries.get_mut(&buf.id).ok_or_else(|| {
                Error::Internal(format!("{}: a freed buffer was read", self.name))
            })?;
            match &e.place {
                Place::Host(bytes) => return Ok(bytes[..len].to_vec()),
                Place::Disk(file) => {
                    let file = file.clone();
                    drop(l);
                    let mut bytes = file.read_to_vec()?;
                    bytes.truncate(len);
                    return Ok(bytes);
                }
                Place::Device(b) => {
                    e.pins += 1;
                    (b.clone(), e.device)
                }
            }
        };
        let r = self.devices[device].download(&device_buf, len);
        drop(device_buf);
        self.release(device, &[buf.id], 0, Vec::new());
        r
    }
}

impl<D: Device> Tiered<D> {
    /// The set this device belongs to (its limits, usage and moves).
    pub fn tiers(&self) -> &Arc<Tiers<D>> {
        &self.tiers
    }

    fn inner(&self) -> &D {
        &self.tiers.devices[self.ordinal]
    }

    fn one(mut bufs: Vec<TieredBuf<D::Buf>>, op: &str) -> Result<TieredBuf<D::Buf>> {
        bufs.pop()
            .ok_or_else(|| Error::Internal(format!("{op} made no buffer")))
    }
}

impl<D: Device> Device for Tiered<D> {
    type Buf = TieredBuf<D::Buf>;

    fn sms(&self) -> u32 {
        self.inner().sms()
    }

    fn capacity(&self) -> Option<u64> {
        self.inner().capacity()
    }

    fn memory_limit(&self) -> Option<u64> {
        let limit = self.tiers.device_limit(self.ordinal);
        (limit != u64::MAX).then_some(limit)
    }

    fn upload(&self, bytes: &[u8]) -> Result<Self::Buf> {
        let len = bytes.len().max(1) as u64;
        let made = self
            .tiers
            .launch((self.ordinal, "upload"), &[], &[len], |_| {
                Ok(vec![self.inner().upload(bytes)?])
            })?;
        Tiered::<D>::one(made, "upload")
    }

    fn download(&self, buf: &Self::Buf, len: usize) -> Result<Vec<u8>> {
        self.tiers.download(buf, len)
    }

    fn run(&self, plan: &KernelPlan, inputs: &[&Self::Buf], out_bytes: usize) -> Result<Self::Buf> {
        let made = self.tiers.launch(
            (self.ordinal, kernel(plan)),
            inputs,
            &[out_bytes.max(1) as u64],
            |bufs| Ok(vec![self.inner().run(plan, bufs, out_bytes)?]),
        )?;
        Tiered::<D>::one(made, "run")
    }

    fn join(&self, parts: &[(&Self::Buf, usize)]) -> Result<Self::Buf> {
        let inputs: Vec<&Self::Buf> = parts.iter().map(|&(b, _)| b).collect();
        let lens: Vec<usize> = parts.iter().map(|&(_, n)| n).collect();
        let total = lens.iter().sum::<usize>().max(1) as u64;
        let made = self
            .tiers
            .launch((self.ordinal, "join"), &inputs, &[total], |bufs| {
                let runs: Vec<(&D::Buf, usize)> =
                    bufs.iter().copied().zip(lens.iter().copied()).collect();
                Ok(vec![self.inner().join(&runs)?])
            })?;
        Tiered::<D>::one(made, "join")
    }

    fn launch_grid(
        &self,
        plan: &KernelPlan,
        grid: u32,
        inputs: &[&Self::Buf],
        outputs: &[Output],
    ) -> Result<Vec<Self::Buf>> {
        let outs: Vec<u64> = outputs.iter().map(|o| o.len().max(1) as u64).collect();
        self.tiers
            .launch((self.ordinal, kernel(plan)), inputs, &outs, |bufs| {
                self.inner().launch_grid(plan, grid, bufs, outputs)
            })
    }

    fn blas_product(
        &self,
        dtype: DType,
        transpose_a: bool,
        (m, k, n): (usize, usize, usize),
        a: &Self::Buf,
        b: &Self::Buf,
    ) -> Result<Option<Self::Buf>> {
        let bytes = m
            .checked_mul(n)
            .and_then(|e| e.checked_mul(dtype.size()))
            .ok_or_else(|| Error::shape("matmul", format!("{m} x {n} overflows usize")))?;
        let made = self.tiers.launch(
            (self.ordinal, "matmul"),
            &[a, b],
            &[bytes.max(1) as u64],
            |bufs| {
                Ok(self
                    .inner()
                    .blas_product(dtype, transpose_a, (m, k, n), bufs[0], bufs[1])?
                    .into_iter()
                    .collect())
            },
        )?;
        Ok(made.into_iter().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device of plain memory that only stores bytes (no kernels): the ledger's moves
    /// without the shim.
    #[derive(Debug)]
    struct Memory;

    impl Device for Memory {
        type Buf = Vec<u8>;
        fn sms(&self) -> u32 {
            1
        }
        fn upload(&self, bytes: &[u8]) -> Result<Vec<u8>> {
            let mut v = bytes.to_vec();
            v.resize(v.len().max(1), 0);
            Ok(v)
        }
        fn download(&self, buf: &Vec<u8>, len: usize) -> Result<Vec<u8>> {
            Ok(buf[..len].to_vec())
        }
        fn run(&self, _: &KernelPlan, _: &[&Vec<u8>], _: usize) -> Result<Vec<u8>> {
            Err(Error::Internal("no kernels".into()))
        }
        fn join(&self, parts: &[(&Vec<u8>, usize)]) -> Result<Vec<u8>> {
            let mut out: Vec<u8> = parts.iter().flat_map(|(b, n)| b[..*n].to_vec()).collect();
            out.resize(out.len().max(1), 0);
            Ok(out)
        }
        fn launch_grid(
            &self,
            _: &KernelPlan,
            _: u32,
            _: &[&Vec<u8>],
            _: &[Output],
        ) -> Result<Vec<Vec<u8>>> {
            Err(Error::Internal("no kernels".into()))
        }
    }

    fn spill_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tessera-tiers-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn empty(dir: &std::path::Path) -> bool {
        std::fs::read_dir(dir).unwrap().next().is_none()
    }

    fn bytes(seed: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn buffers_move_down_the_tiers_oldest_first_and_come_back_intact() {
        let dir = spill_dir("lru");
        let tiers = Tiers::new(
            "mem",
            vec![Memory],
            TierLimits {
                device: Some(300),
                host: Some(250),
                spill_dir: Some(dir.clone()),
            },
        );
        let dev = tiers.devices().remove(0);
        let data: Vec<Vec<u8>> = (0..6).map(|i| bytes(i, 100)).collect();
        let bufs: Vec<_> = data.iter().map(|d| dev.upload(d).unwrap()).collect();
        // Six buffers of 100 bytes: three on the device (the newest), two in host memory,
        // the oldest on disk.
        let u = tiers.usage();
        assert_eq!((u.device[0], u.host, u.disk), (300, 200, 100), "{u:?}");
        assert_eq!(u.total(), 600, "every byte held is charged once");
        assert!(!empty(&dir), "the oldest went to a spill file");
        let m = tiers.moves();
        assert_eq!(m.device_to_host, (3, 300));
        assert_eq!(m.to_disk, (1, 100), "host memory was full at the fourth");
        // A spilled buffer reads back from where it is, without moving.
        assert_eq!(dev.download(&bufs[0], 100).unwrap(), data[0]);
        assert_eq!(dev.download(&bufs[1], 40).unwrap(), data[1][..40]);
        assert_eq!(tiers.usage(), u);
        // A join reads two spilled buffers: both come back (room made by moving the
        // oldest on the device), and the result is theirs.
        let j = dev.join(&[(&bufs[0], 50), (&bufs[1], 50)]).unwrap();
        let mut want = data[0][..50].to_vec();
        want.extend_from_slice(&data[1][..50]);
        assert_eq!(dev.download(&j, 100).unwrap(), want);
        let m = tiers.moves();
        assert_eq!(m.disk_to_device.0, 1);
        assert_eq!(m.host_to_device.0, 1);
        let u = tiers.usage();
        assert!(u.device[0] <= 300 && u.host <= 250, "{u:?}");
        assert_eq!(u.total(), 700);
        for (b, d) in bufs.iter().zip(&data) {
            assert_eq!(&dev.download(b, 100).unwrap(), d);
        }
        drop((bufs, j));
        assert_eq!(tiers.usage().total(), 0);
        assert!(empty(&dir), "no spill file outlives its buffer");
    }

    #[test]
    fn without_host_room_buffers_go_straight_to_disk_and_without_disk_it_is_an_error() {
        let dir = spill_dir("disk");
        let tiers = Tiers::new(
            "mem",
            vec![Memory],
            TierLimits {
                device: Some(100),
                host: Some(0),
                spill_dir: Some(dir.clone()),
            },
        );
        let dev = tiers.devices().remove(0);
        let a = dev.upload(&bytes(1, 100)).unwrap();
        let b = dev.upload(&bytes(2, 100)).unwrap();
        let u = tiers.usage();
        assert_eq!((u.device[0], u.host, u.disk), (100, 0, 100));
        assert_eq!(tiers.moves().device_to_host.0, 0);
        drop((a, b));
        assert!(empty(&dir));

        let nowhere = Tiers::new(
            "mem",
            vec![Memory],
            TierLimits {
                device: Some(100),
                host: Some(50),
                spill_dir: None,
            },
        );
        let dev = nowhere.devices().remove(0);
        let _a = dev.upload(&bytes(1, 100)).unwrap();
        let e = dev.upload(&bytes(2, 100)).unwrap_err().to_string();
        assert!(e.contains("spill-dir is `none`"), "{e}");
        assert_eq!(
            nowhere.usage().total(),
            100,
            "the failed upload left nothing"
        );
    }

    #[test]
    fn a_working_set_over_the_limit_is_refused_with_its_size() {
        let tiers = Tiers::new(
            "mem",
            vec![Memory],
            TierLimits {
                device: Some(100),
                host: None,
                spill_dir: None,
            },
        );
        let dev = tiers.devices().remove(0);
        let a = dev.upload(&bytes(1, 80)).unwrap();
        let b = dev.upload(&bytes(2, 80)).unwrap();
        assert_eq!(tiers.usage().host, 80, "a moved to host memory");
        let e = dev.join(&[(&a, 80), (&b, 80)]).unwrap_err().to_string();
        assert!(
            e.contains("needs") && e.contains("device.memory-limit (100 bytes)"),
            "{e}"
        );
        let e = dev.upload(&bytes(3, 101)).unwrap_err().to_string();
        assert!(e.contains("needs 101 bytes"), "{e}");
        // Both still read back.
        assert_eq!(dev.download(&a, 80).unwrap(), bytes(1, 80));
        assert_eq!(dev.download(&b, 80).unwrap(), bytes(2, 80));
    }

    /// A device that refuses allocations past a real capacity (200 bytes) below the
    /// configured limit.
    #[derive(Debug, Default)]
    struct Small(Arc<std::sync::atomic::AtomicU64>);

    /// Bytes that give their charge back to their device when dropped.
    struct Counted(Vec<u8>, u64, Arc<std::sync::atomic::AtomicU64>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.2
                .fetch_sub(self.1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl Device for Small {
        type Buf = Counted;
        fn sms(&self) -> u32 {
            1
        }
        fn upload(&self, bytes: &[u8]) -> Result<Counted> {
            use std::sync::atomic::Ordering::SeqCst;
            let n = bytes.len().max(1) as u64;
            if self.0.fetch_add(n, SeqCst) + n > 200 {
                self.0.fetch_sub(n, SeqCst);
                return Err(Error::Device {
                    backend: "small".into(),
                    op: "alloc".into(),
                    detail: "DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")".into(),
                });
            }
            Ok(Counted(bytes.to_vec(), n, self.0.clone()))
        }
        fn download(&self, buf: &Counted, len: usize) -> Result<Vec<u8>> {
            Ok(buf.0[..len].to_vec())
        }
        fn run(&self, _: &KernelPlan, _: &[&Counted], _: usize) -> Result<Counted> {
            Err(Error::Internal("no kernels".into()))
        }
        fn join(&self, _: &[(&Counted, usize)]) -> Result<Counted> {
            Err(Error::Internal("no joins".into()))
        }
        fn launch_grid(
            &self,
            _: &KernelPlan,
            _: u32,
            _: &[&Counted],
            _: &[Output],
        ) -> Result<Vec<Counted>> {
            Err(Error::Internal("no kernels".into()))
        }
    }

    /// The device refuses an allocation the ledger allowed (its limit is above the real
    /// room): the refusal moves the unpinned buffers off and the retry succeeds.
    #[test]
    fn an_allocation_the_device_refuses_spills_and_retries_once() {
        let tiers = Tiers::new(
            "small",
            vec![Small::default()],
            TierLimits {
                device: Some(1000),
                host: None,
                spill_dir: None,
            },
        );
        let dev = tiers.devices().remove(0);
        let a = dev.upload(&bytes(1, 150)).unwrap();
        let b = dev.upload(&bytes(2, 100)).unwrap();
        assert_eq!(tiers.moves().retries, 1);
        let u = tiers.usage();
        assert_eq!((u.device[0], u.host), (100, 150), "{u:?}");
        assert_eq!(dev.download(&a, 150).unwrap(), bytes(1, 150));
        assert_eq!(dev.download(&b, 100).unwrap(), bytes(2, 100));
        // A request the device cannot hold even empty fails after its one retry.
        let e = dev.upload(&bytes(3, 300)).unwrap_err().to_string();
        assert!(e.contains("out of memory"), "{e}");
        assert_eq!(tiers.moves().retries, 2);
    }
}

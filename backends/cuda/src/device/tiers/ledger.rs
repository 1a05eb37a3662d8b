//! The ledger of a set of tiered devices: where every buffer lives (a device, host memory
//! or a spill file), how many bytes each tier holds, which buffers a running kernel reads
//! (pinned: never moved), and the order in which the others were last used.
//!
//! It is plain bookkeeping under one lock: the moves themselves (a download, a spill file
//! write, an upload) are done by [`super`] with the ledger locked, so that the bytes each
//! tier is charged with always equal what it holds.

use std::collections::HashMap;
use std::sync::Arc;

use tessera_runtime::spill::SpillFile;

/// Where a buffer's bytes are.
pub(super) enum Place<B> {
    /// In its device's memory.
    Device(Arc<B>),
    /// In host memory, spilled from the device.
    Host(Vec<u8>),
    /// In a spill file, spilled from host memory.
    Disk(Arc<SpillFile>),
}

/// The tier a place is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tier {
    Device,
    Host,
    Disk,
}

impl<B> Place<B> {
    fn tier(&self) -> Tier {
        match self {
            Place::Device(_) => Tier::Device,
            Place::Host(_) => Tier::Host,
            Place::Disk(_) => Tier::Disk,
        }
    }
}

/// One buffer of the ledger.
pub(super) struct Entry<B> {
    /// Its length in bytes (at least one).
    pub len: u64,
    /// The device it belongs to (where it comes back when a kernel reads it).
    pub device: usize,
    pub place: Place<B>,
    /// Kernels and copies reading it right now.
    pub pins: u32,
    /// When it was last used (a counter: larger is more recent).
    pub tick: u64,
}

/// Bytes held in each tier, as the ledger charges them (each buffer its length, at least
/// one byte).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TierUsage {
    /// Bytes each device holds, in ordinal order.
    pub device: Vec<u64>,
    /// Bytes of spilled buffers in host memory.
    pub host: u64,
    /// Bytes of spilled buffers in spill files (before compression).
    pub disk: u64,
    /// Buffers alive.
    pub buffers: usize,
}

impl TierUsage {
    /// Bytes in all three tiers together.
    pub fn total(&self) -> u64 {
        self.device.iter().sum::<u64>() + self.host + self.disk
    }
}

/// Moves between tiers so far (counts and bytes), for tests and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TierMoves {
    /// Buffers moved from a device to host memory, and their bytes.
    pub device_to_host: (u64, u64),
    /// Buffers moved from host memory (or straight from a device) to disk, and their bytes.
    pub to_disk: (u64, u64),
    /// Buffers read back from host memory onto their device, and their bytes.
    pub host_to_device: (u64, u64),
    /// Buffers read back from disk onto their device, and their bytes.
    pub disk_to_device: (u64, u64),
    /// Device allocations that failed, spilled every unpinned buffer and were retried.
    pub retries: u64,
    /// Nanoseconds spent moving buffers down (device to host, host or device to disk).
    pub spill_ns: u64,
    /// Nanoseconds spent bringing buffers back onto their device.
    pub unspill_ns: u64,
}

/// Every buffer of a set of devices and the bytes each tier holds.
pub(super) struct Ledger<B> {
    pub entries: HashMap<u64, Entry<B>>,
    next_id: u64,
    clock: u64,
    pub device_used: Vec<u64>,
    pub host_used: u64,
    pub disk_used: u64,
    pub moves: TierMoves,
}

impl<B> Ledger<B> {
    pub fn new(devices: usize) -> Ledger<B> {
        Ledger {
            entries: HashMap::new(),
            next_id: 0,
            clock: 0,
            device_used: vec![0; devices],
            host_used: 0,
            disk_used: 0,
            moves: TierMoves::default(),
        }
    }

    /// The next tick of the use clock.
    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Adds a buffer that lives on `device` (its bytes already charged there); returns its
    /// id.
    pub fn insert_on_device(&mut self, device: usize, buf: B, len: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let tick = self.tick();
        self.entries.insert(
            id,
            Entry {
                len,
                device,
                place: Place::Device(Arc::new(buf)),
                pins: 0,
                tick,
            },
        );
        id
    }

    /// Puts buffer `id` in `place`: its charge leaves the tier it was in for the new one,
    /// and the move is counted (`ns` of its time). The old place (a device buffer, a host
    /// copy, a spill file's share) is released here. Returns the buffer's device, length
    /// and the move's name for the profile, or `None` for an unknown buffer.
    pub fn relocate(
        &mut self,
        id: u64,
        place: Place<B>,
        ns: u64,
    ) -> Option<(usize, u64, &'static str)> {
        let e = self.entries.get_mut(&id)?;
        let (device, len) = (e.device, e.len);
        let old = std::mem::replace(&mut e.place, place);
        let (from, to) = (old.tier(), e.place.tier());
        *self.used(from, device) -= len;
        *self.used(to, device) += len;
        let m = &mut self.moves;
        let (counter, time, name) = match (from, to) {
            (_, Tier::Disk) => (&mut m.to_disk, &mut m.spill_ns, "spill to disk"),
            (Tier::Host, Tier::Device) => (
                &mut m.host_to_device,
                &mut m.unspill_ns,
                "unspill from host",
            ),
            (Tier::Disk, Tier::Device) => (
                &mut m.disk_to_device,
                &mut m.unspill_ns,
                "unspill from disk",
            ),
            _ => (&mut m.device_to_host, &mut m.spill_ns, "spill to host"),
        };
        counter.0 += 1;
        counter.1 += len;
        *time = time.saturating_add(ns);
        Some((device, len, name))
    }

    /// The bytes charged to `tier` (on `device` for the device tier).
    fn used(&mut self, tier: Tier, device: usize) -> &mut u64 {
        match tier {
            Tier::Device => &mut self.device_used[device],
            Tier::Host => &mut self.host_used,
            Tier::Disk => &mut self.disk_used,
        }
    }

    /// Removes a buffer and uncharges its tier; the caller drops the entry (a spill file's
    /// removal) after unlocking.
    pub fn remove(&mut self, id: u64) -> Option<Entry<B>> {
        let e = self.entries.remove(&id)?;
        *self.used(e.place.tier(), e.device) -= e.len;
        Some(e)
    }

    /// Bytes pinned on `device`.
    pub fn pinned_on(&self, device: usize) -> u64 {
        self.entries
            .values()
            .filter(|e| e.device == device && e.pins > 0 && matches!(e.place, Place::Device(_)))
            .map(|e| e.len)
            .sum()
    }

    /// The buffers on `device` that may be moved off it, least recently used first,
    /// leaving out `keep`.
    pub fn evictable_on(&self, device: usize, keep: &[u64]) -> Vec<(u64, u64)> {
        self.by_age(|id, e| {
            e.device == device
                && e.pins == 0
                && matches!(e.place, Place::Device(_))
                && !keep.contains(&id)
        })
    }

    /// The buffers in host memory, least recently used first.
    pub fn host_by_age(&self) -> Vec<(u64, u64)> {
        self.by_age(|_, e| matches!(e.place, Place::Host(_)))
    }

    /// `(id, len)` of the buffers `pick` takes, least recently used first.
    fn by_age(&self, pick: impl Fn(u64, &Entry<B>) -> bool) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64, u64)> = self
            .entries
            .iter()
            .filter(|(&id, e)| pick(id, e))
            .map(|(&id, e)| (e.tick, id, e.len))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, id, len)| (id, len)).collect()
    }

    /// What each tier holds now.
    pub fn usage(&self) -> TierUsage {
        TierUsage {
            device: self.device_used.clone(),
            host: self.host_used,
            disk: self.disk_used,
            buffers: self.entries.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_order_is_least_recently_used_and_skips_pins() {
        let mut l: Ledger<Vec<u8>> = Ledger::new(2);
        let a = l.insert_on_device(0, vec![0; 4], 4);
        let b = l.insert_on_device(0, vec![0; 8], 8);
        let c = l.insert_on_device(1, vec![0; 2], 2);
        l.device_used = vec![12, 2];
        assert_eq!(l.evictable_on(0, &[]), vec![(a, 4), (b, 8)]);
        let t = l.tick();
        l.entries.get_mut(&a).unwrap().tick = t;
        assert_eq!(l.evictable_on(0, &[]), vec![(b, 8), (a, 4)], "a used last");
        l.entries.get_mut(&b).unwrap().pins = 1;
        assert_eq!(l.evictable_on(0, &[]), vec![(a, 4)], "b is pinned");
        assert_eq!(l.pinned_on(0), 8);
        assert_eq!(l.evictable_on(0, &[a]), vec![], "a is kept");
        assert_eq!(l.evictable_on(1, &[]), vec![(c, 2)]);
        assert_eq!(
            l.relocate(a, Place::Host(vec![0; 4]), 7),
            Some((0, 4, "spill to host"))
        );
        assert_eq!((l.usage().device[0], l.usage().host), (8, 4));
        assert_eq!((l.moves.device_to_host, l.moves.spill_ns), ((1, 4), 7));
        assert_eq!(
            l.relocate(a, Place::Device(Arc::new(vec![0; 4])), 3),
            Some((0, 4, "unspill from host"))
        );
        assert_eq!((l.moves.host_to_device, l.moves.unspill_ns), ((1, 4), 3));
        l.remove(b);
        assert_eq!(l.usage().device, vec![4, 2]);
        assert_eq!(l.usage().total(), 6);
        assert_eq!(l.usage().buffers, 2);
    }
}

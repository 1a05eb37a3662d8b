//! A plan's projected memory ([`Node::memory`]): what `memory-limit` is checked against
//! before anything runs.

use super::Node;

/// A plan's projected memory, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryProjection {
    /// Held at once while the plan runs (streamed stages hold one partition per worker;
    /// sorts, joins and repartitions hold their whole inputs).
    pub held: u64,
    /// The output, all partitions.
    pub output: u64,
    /// The largest output partition.
    pub largest: u64,
}

impl Node {
    /// The largest input of a repartition or window in the plan (they hold it whole,
    /// with no spilling), if there is one. A sort is not among them: within a spill
    /// budget it keeps its partitions and ranges within the budget (`exec/external_sort.rs`).
    pub fn held_whole(&self) -> Option<u64> {
        let own = match self {
            Node::Repartition { input, .. } | Node::Window { input, .. } => {
                Some(input.memory(1).output)
            }
            _ => None,
        };
        self.inputs()
            .into_iter()
            .filter_map(|i| i.held_whole())
            .chain(own)
            .max()
    }

    /// The largest partition any stage of the plan produces (a task holds it whole).
    pub fn largest_partition(&self, workers: u64) -> u64 {
        self.inputs()
            .into_iter()
            .map(|i| i.largest_partition(workers))
            .chain([self.memory(workers).largest])
            .max()
            .unwrap_or(0)
    }

    /// For a scan, the bytes each partition it reads is estimated to take in memory: what
    /// the format reports for all columns, scaled by the columns read (unknown: 0). Empty
    /// for any other node.
    pub(crate) fn scan_partition_bytes(&self) -> Vec<u64> {
        let Node::Scan {
            source,
            projection,
            selected,
            ..
        } = self
        else {
            return Vec::new();
        };
        let all: Vec<usize> = (0..source.partitions()).collect();
        let ids = selected.as_deref().unwrap_or(&all);
        let cols = source.schema().fields().len().max(1) as u64;
        let read = projection.as_ref().map_or(cols, |p| p.len() as u64);
        ids.iter()
            .map(|&i| source.partition_bytes(i).unwrap_or(0).saturating_mul(read) / cols)
            .collect()
    }

    /// What computing this node holds in memory, by a simple and documented model:
    /// partitions already in memory count whole; a scan, a fused program and a user
    /// function per partition stream (one partition per worker at a time; a program's
    /// output scales with its number of columns); an aggregation
    /// adds its partials (estimated as its largest input partition, and so its output);
    /// a sort, a repartition, a window and a join materialise their whole inputs. `workers` is the
    /// scheduler's thread count. Unknown sizes count as zero.
    pub fn memory(&self, workers: u64) -> MemoryProjection {
        let stream = |input: &MemoryProjection| MemoryProjection {
            held: input.held,
            output: input.output,
            largest: input.largest,
        };
        match self {
            Node::Partitions { parts, .. } => {
                let sizes = parts.iter().map(|p| p.nbytes() as u64);
                let output = sizes.clone().fold(0u64, u64::saturating_add);
                MemoryProjection {
                    held: output,
                    output,
                    largest: sizes.max().unwrap_or(0),
                }
            }
            Node::Scan { .. } => {
                let sizes = self.scan_partition_bytes();
                let largest = sizes.iter().copied().max().unwrap_or(0);
                MemoryProjection {
                    held: largest.saturating_mul(workers),
                    output: sizes.iter().copied().fold(0u64, u64::saturating_add),
                    largest,
                }
            }
            Node::Map { input, schema, .. } => {
                // A program keeps at most its input's rows; its width scales the bytes.
                let i = input.memory(workers);
                let (to, from) = (
                    schema.fields().len() as u64,
                    input.schema().fields().len().max(1) as u64,
                );
                let scale = |b: u64| b.saturating_mul(to) / from;
                MemoryProjection {
                    held: i
                        .held
                        .saturating_add(scale(i.largest).saturating_mul(workers)),
                    output: scale(i.output),
                    largest: scale(i.largest),
                }
            }
            Node::MapPartitions { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. } => stream(&input.memory(workers)),
            Node::TopK { input, .. } => {
                // Streams, keeping one partition's top rows per worker and the winners.
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.largest),
                    output: i.largest.min(i.output),
                    largest: i.largest.min(i.output),
                }
            }
            Node::Aggregate { input, .. } => {
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.largest),
                    output: i.largest,
                    largest: i.largest,
                }
            }
            Node::Sort { input, .. }
            | Node::Repartition { input, .. }
            | Node::Window { input, .. } => {
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.output),
                    output: i.output,
                    largest: i.largest,
                }
            }
            Node::Concat { inputs, .. } => {
                // The inputs stream one after the other.
                let all: Vec<MemoryProjection> = inputs.iter().map(|i| i.memory(workers)).collect();
                MemoryProjection {
                    held: all.iter().map(|m| m.held).max().unwrap_or(0),
                    output: all.iter().map(|m| m.output).fold(0u64, u64::saturating_add),
                    largest: all.iter().map(|m| m.largest).max().unwrap_or(0),
                }
            }
            Node::Join { left, right, .. } => {
                let (l, r) = (left.memory(workers), right.memory(workers));
                let output = l.output.saturating_add(r.output);
                MemoryProjection {
                    held: l.held.saturating_add(r.held).saturating_add(output),
                    output,
                    largest: l.largest.saturating_add(r.largest),
                }
            }
        }
    }
}

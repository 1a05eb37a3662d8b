//! `explain()`: a lowered plan in words — task counts by kind, fused programs and their
//! sources, pushed-down slices, mirrored block reductions, and one example program.

use std::collections::{BTreeMap, HashMap};

use super::plan::{Plan, TaskOp};
use crate::graph::BlockFn;
use crate::program::{Node as PNode, Program};

impl Plan {
    /// What `memory-limit` makes of the plan: nothing, spilled results, or a refusal.
    fn explain_spill(&self) -> String {
        use super::scheduler::{budget, planned_threads, Outputs};
        let threads = match planned_threads() {
            Ok(t) => t,
            Err(_) => return String::new(),
        };
        let in_memory = budget(self, threads, Outputs::InMemory);
        match (in_memory, budget(self, threads, Outputs::Spillable)) {
            (Ok(b), _) if b.spill.is_none() => String::new(),
            (_, Ok(b)) => match b.spill {
                Some((dir, keep)) => format!(
                    "over memory-limit: compute() is refused; persist() runs on {} worker(s), keeps {} of results in memory and spills the rest to {} (LZ4), where later plans read them back\n",
                    b.threads,
                    crate::chunks::format_bytes(keep),
                    dir.display()
                ),
                None => String::new(),
            },
            (_, Err(e)) => format!("over memory-limit, refused before running: {e}\n"),
        }
    }

    /// Under a distributed scheduler: the ranks, and the bytes each sends and receives by
    /// the owner rule (from the tasks' projected output sizes).
    fn explain_distributed(&self) -> String {
        let Ok(Some(cluster)) = tessera_runtime::cluster::current() else {
            return String::new();
        };
        let size = cluster.size();
        let traffic = super::distributed::projected_traffic(self, size);
        let fmt = crate::chunks::format_bytes;
        let mut s = format!(
            "distributed over {} ({}): tasks placed by the owner rule; projected traffic per rank:\n",
            cluster.describe(),
            if size == 1 { "no traffic" } else { "chunk bytes sent once to each rank that reads them" }
        );
        for (r, (sent, received)) in traffic.iter().enumerate() {
            s.push_str(&format!(
                "  rank {r}: sends {}, receives {}\n",
                fmt(*sent),
                fmt(*received)
            ));
        }
        let all_reduced = self.tasks.iter().filter(|t| t.replicated).count();
        if all_reduced > 0 {
            s.push_str(&format!(
                "  all-reduce: {all_reduced} reduction block(s) folded on each rank first, then each rank's partial sent to every rank that needs the result\n"
            ));
        }
        s
    }

    /// A human-readable description of the plan.
    pub fn explain(&self) -> String {
        let mut programs = 0;
        let mut sources = 0;
        let mut stored = 0;
        let mut other: HashMap<&'static str, usize> = HashMap::new();
        let mut example: Option<&Program> = None;
        // Per source / sink description: blocks, and the source's note for plans.
        let mut reads: BTreeMap<String, (usize, Option<String>)> = BTreeMap::new();
        let mut writes: BTreeMap<String, usize> = BTreeMap::new();
        for t in &self.tasks {
            if let Some(p) = t.op.program() {
                programs += 1;
                if p.is_source() {
                    sources += 1;
                }
                // The first program in plan order is a chunk program of the deepest
                // fused stage (the reduction tree comes after it).
                if example.is_none() {
                    example = Some(p);
                }
            }
            match &t.op {
                TaskOp::Program(_) => {}
                TaskOp::Stored(_) => stored += 1,
                TaskOp::Assemble { .. } => *other.entry("assemble (rechunk)").or_default() += 1,
                TaskOp::ReshapeGather { .. } => *other.entry("reshape gather").or_default() += 1,
                TaskOp::MatmulSum => *other.entry("matmul").or_default() += 1,
                TaskOp::MatmulProgram { .. } => {
                    *other.entry("matmul streaming a fused operand").or_default() += 1
                }
                TaskOp::Sketch { program: Some(_) } => {
                    *other
                        .entry("range sketch streaming a fused block")
                        .or_default() += 1
                }
                TaskOp::Sketch { program: None } => *other.entry("range sketch").or_default() += 1,
                TaskOp::Rows { .. } => *other.entry("range sketch parts").or_default() += 1,
                TaskOp::Sum => *other.entry("sum of partial products").or_default() += 1,
                TaskOp::Moments { .. } => {
                    *other
                        .entry("one-pass block moments (sum and M2) of a fused block")
                        .or_default() += 1
                }
                TaskOp::MapBlocks {
                    f: BlockFn::Lane { name, .. },
                    ..
                } => *other.entry(*name).or_default() += 1,
                TaskOp::MapBlocks { .. } => *other.entry("map_blocks").or_default() += 1,
                TaskOp::Transfer { .. } => {
                    *other.entry("backend transfer (via host)").or_default() += 1
                }
                TaskOp::Read { source, .. } => {
                    reads
                        .entry(source.describe())
                        .or_insert_with(|| (0, source.plan_note()))
                        .0 += 1
                }
                TaskOp::Write { sink, .. } => *writes.entry(sink.describe()).or_default() += 1,
            }
        }
        let peak: u64 = self.tasks.iter().map(|t| t.out_bytes).max().unwrap_or(0);
        let mut s = format!(
            "plan: {} tasks ({} fused programs, {} of them pure generators reading no stored data; {} stored chunks",
            self.tasks.len(),
            programs,
            sources,
            stored
        );
        for (k, v) in &other {
            s.push_str(&format!("; {v} {k}"));
        }
        s.push_str(")\n");
        for (what, (blocks, note)) in &reads {
            s.push_str(&format!("reads {blocks} block(s) of {what}\n"));
            if let Some(note) = note {
                s.push_str(&format!("  note: {note}\n"));
            }
        }
        for (what, blocks) in &writes {
            s.push_str(&format!("writes {blocks} block(s) to {what}\n"));
        }
        s.push_str(&format!(
            "largest task output: {}\n",
            crate::chunks::format_bytes(peak)
        ));
        match super::scheduler::planned_threads() {
            Ok(threads) => {
                let p = super::scheduler::project(self, threads);
                s.push_str(&format!(
                    "projected peak memory: {} on {} worker(s) (results {}, largest task with its inputs {}; compare memory-limit)\n",
                    crate::chunks::format_bytes(p.projected),
                    p.threads,
                    crate::chunks::format_bytes(p.outputs),
                    crate::chunks::format_bytes(p.worst)
                ));
            }
            Err(e) => s.push_str(&format!("projected peak memory: unknown ({e})\n")),
        }
        s.push_str(&self.explain_spill());
        s.push_str(&self.explain_distributed());
        let spilled = self
            .tasks
            .iter()
            .filter(|t| matches!(t.op, TaskOp::Stored(crate::stored::Held::Spilled(_))))
            .count();
        if spilled > 0 {
            s.push_str(&format!(
                "{spilled} of the {stored} stored chunks were spilled to disk: their tasks read them back (unspill)\n"
            ));
        }
        if let Some(p) = example {
            s.push_str("fused chunk program (first of its stage):\n");
            for line in p.describe().lines() {
                s.push_str("  ");
                s.push_str(line);
                s.push('\n');
            }
        }
        let pushed = self.tasks.iter().find_map(|t| {
            t.op.program()?.nodes.iter().find_map(|n| match n {
                PNode::Random { map, .. } if map.axes.iter().any(|a| a.step.abs() > 1) => {
                    Some(map.axes.iter().map(|a| a.step).collect::<Vec<_>>())
                }
                _ => None,
            })
        });
        if let Some(steps) = pushed {
            s.push_str(&format!("slice pushed into random source: steps {steps:?}, only kept elements are generated\n"));
        }
        let mut notes: Vec<String> = Vec::new();
        for t in &self.tasks {
            let mut add = |n: String| {
                let line = format!("backend '{}': {n}", t.backend.name());
                if !notes.contains(&line) {
                    notes.push(line);
                }
            };
            if let Some(p) = t.op.program() {
                t.backend.plan_notes(p).into_iter().for_each(&mut add);
            }
            // Primitives called outside programs, where a backend may fall back.
            let primitive = match &t.op {
                TaskOp::Assemble { .. } => Some("concatenate"),
                TaskOp::MatmulSum | TaskOp::MatmulProgram { .. } => Some("matmul"),
                _ => None,
            };
            if let Some(n) = primitive.and_then(|op| t.backend.primitive_note(op)) {
                add(n);
            }
        }
        for n in notes {
            s.push_str(&n);
            s.push('\n');
        }
        if self.mirrored > 0 {
            s.push_str(&format!(
                "mirror symmetry: the reduced array is unchanged by swapping two of its reduced axes (as x + x.T is by a transpose), so {} block reductions below the diagonal reuse the task of their mirror block above it\n",
                self.mirrored
            ));
        }
        s
    }
}

//! [`DataFrame::explain`]: the optimized plan in words, with what the executor will do
//! about memory and, across ranks, traffic (both asked of `crate::exec::run`, which makes
//! those decisions when the plan runs).

use crate::api::dataframe::DataFrame;
use crate::error::Result;
use crate::exec::run;

impl DataFrame {
    /// The optimized plan in words: fused stages, pushed-down projections and predicates,
    /// the algorithms of blocking nodes, and under `scheduler = "mpi"` the bytes each rank
    /// is projected to send and receive (see the `traffic` module for the model).
    ///
    /// # Errors
    /// A plan the optimizer rejects, or a cluster that cannot open.
    pub fn explain(&self) -> Result<String> {
        let node = self.optimized()?;
        let memory = run::memory_note(&node, &self.backend)?;
        let traffic = run::traffic_note(&node, &self.backend)?;
        let notes = node.fallback_notes(self.backend.as_ref());
        let fallbacks = if notes.is_empty() {
            String::new()
        } else {
            let mut s = format!(
                "fallbacks: backend '{}' runs {} step{} of this plan another way:\n",
                self.backend.name(),
                notes.len(),
                if notes.len() == 1 { "" } else { "s" }
            );
            for n in &notes {
                s.push_str(&format!("  {n}\n"));
            }
            s
        };
        Ok(format!(
            "dataframe on backend '{}'\n{}{fallbacks}{memory}{traffic}",
            self.backend.name(),
            node.explain()
        ))
    }

    /// Under `scheduler = "mpi"`, the bytes each rank is projected to send and receive to
    /// compute this frame on every rank, `(sent, received)` per rank, by the model
    /// `explain()` prints; `None` outside a distributed run.
    ///
    /// # Errors
    /// A plan the optimizer rejects, or a cluster that cannot open.
    pub fn projected_traffic(&self) -> Result<Option<Vec<(u64, u64)>>> {
        if tessera_runtime::cluster::current()?.is_none() {
            return Ok(None);
        }
        run::projected_traffic(&*self.optimized()?, &self.backend)
    }
}

//! The shapes of a rule and the walkers the rules share: a [`NodeRule`] rewrites one
//! node, a [`PlanRule`] a whole plan, [`TopDown`] applies node rules from the root down;
//! every rule's output is checked to keep the plan's schema ([`same_schema`]).

use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::plan::Node;

/// What a [`NodeRule`] made of a node.
pub(crate) enum Rewritten {
    /// The node to run every rule on again, from the first (it may be of another kind).
    Again(Arc<Node>),
    /// The node the next rule sees.
    Next(Arc<Node>),
}

/// A rewrite of one plan node, not of its inputs (the driver walks to them).
pub(crate) trait NodeRule: Sync {
    /// The rule's name, for errors.
    fn name(&self) -> &'static str;

    /// The node rewritten, or `None` when the rule does not apply to it.
    ///
    /// # Errors
    /// A rewritten node that does not type (the rule's bug, reported rather than run).
    fn rewrite(&self, node: &Arc<Node>) -> Result<Option<Rewritten>>;
}

/// A rewrite of a whole plan.
pub(crate) trait PlanRule: Sync {
    /// The rule's name, for errors.
    fn name(&self) -> &'static str;

    /// The plan rewritten.
    ///
    /// # Errors
    /// A rewritten node that does not type.
    fn rewrite(&self, plan: &Arc<Node>) -> Result<Arc<Node>>;
}

/// Node rules applied at every node from the root down (see the module docs).
pub(crate) struct TopDown {
    /// What the pass is called in errors.
    pub name: &'static str,
    /// The rules, in order.
    pub rules: &'static [&'static dyn NodeRule],
}

impl TopDown {
    fn visit(&self, node: &Arc<Node>) -> Result<Arc<Node>> {
        let mut node = node.clone();
        let mut i = 0;
        while let Some(rule) = self.rules.get(i) {
            let Some(rewritten) = rule.rewrite(&node)? else {
                i += 1;
                continue;
            };
            let (next, from) = match rewritten {
                Rewritten::Again(n) => (n, 0),
                Rewritten::Next(n) => (n, i + 1),
            };
            same_schema(rule.name(), &node.schema(), &next.schema())?;
            node = next;
            i = from;
        }
        map_inputs(&node, |input| self.visit(input))
    }
}

/// `node` with `f` applied to each of its inputs; `node` itself, not rebuilt, when `f`
/// returned every input unchanged (a subtree no rule touched).
///
/// # Errors
/// `f`'s; a rebuilt node that does not type.
pub(crate) fn map_inputs(
    node: &Arc<Node>,
    f: impl FnMut(&Arc<Node>) -> Result<Arc<Node>>,
) -> Result<Arc<Node>> {
    let inputs = node.inputs();
    let visited = inputs.iter().copied().map(f).collect::<Result<Vec<_>>>()?;
    if visited.iter().zip(&inputs).all(|(v, i)| Arc::ptr_eq(v, i)) {
        return Ok(node.clone());
    }
    node.with_inputs(visited)
}

impl PlanRule for TopDown {
    fn name(&self) -> &'static str {
        self.name
    }

    fn rewrite(&self, plan: &Arc<Node>) -> Result<Arc<Node>> {
        self.visit(plan)
    }
}

/// How many steps `program` starts with that are filters (what a rule may move below the
/// node under it).
pub(crate) fn leading_filters(program: &crate::backend::FrameProgram) -> usize {
    program
        .steps
        .iter()
        .take_while(|s| matches!(s, crate::backend::FrameStep::Filter(_)))
        .count()
}

/// Checks that rule `rule` kept a schema: the same column names, types and order.
pub(crate) fn same_schema(rule: &str, before: &SchemaRef, after: &SchemaRef) -> Result<()> {
    let shape = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect::<Vec<_>>()
    };
    if shape(before) == shape(after) {
        return Ok(());
    }
    let list = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Error::Internal(format!(
        "the optimizer rule '{rule}' changed a plan's output from [{}] to [{}]",
        list(before),
        list(after)
    )))
}

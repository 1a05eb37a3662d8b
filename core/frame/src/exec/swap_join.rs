//! A broadcast join whose small side is the left one, turned around so that the small
//! side is the one hashed.
//!
//! [`DataFrameBackend::prepare_broadcast`] builds the hash table of a join's *right* side
//! once, and [`DataFrameBackend::join`] probes it with the left. When the left side is the
//! small one (an inner join of a filtered dimension table with a fact table, as in TPC-H
//! Q3: customers ⋈ lineitem), joining it whole against every partition of the right would
//! build a table of each large partition and probe it with the whole small side: every
//! partition hashes both sides. Swapping the sides of the join instead builds the small
//! side's table once and streams the large side through it, as the right-broadcast path
//! does; a projection then puts the columns back in the order and under the names of the
//! join as written.
//!
//! The swap applies to inner joins and right joins (which become left joins). It is not
//! made when a key column shared by both sides (same name, kept once) is floating point:
//! `-0.0` and `0.0`, equal as keys, would come from the other side. Row order within an
//! output partition follows the large side, which `merge` does not promise otherwise.

use arrow_schema::{DataType, Schema};

use crate::backend::{FrameProgram, FrameStep, JoinSpec, JoinType};
use crate::expr::Expr;

/// A side of a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The left side.
    Left,
    /// The right side.
    Right,
}

/// The turned-around join and the projection that restores the output's layout.
#[derive(Debug, Clone)]
pub(crate) struct Swapped {
    /// The join with `left` and `right` exchanged: call it as `join(right, left)`.
    pub spec: JoinSpec,
    /// Renames and reorders the swapped join's columns to those of the original.
    pub restore: FrameProgram,
}

/// The swapped form of `spec` over `left` and `right`, or `None` where the join type, a
/// floating-point shared key or an ambiguous column name rules it out.
pub(crate) fn swapped(spec: &JoinSpec, left: &Schema, right: &Schema) -> Option<Swapped> {
    let how = match spec.how {
        JoinType::Inner => JoinType::Inner,
        JoinType::Right => JoinType::Left,
        _ => return None,
    };
    let shared = spec.shared_keys();
    let float =
        |t: &DataType| matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64);
    if shared.iter().any(|k| {
        left.field_with_name(k)
            .map_or(true, |f| float(f.data_type()))
    }) {
        return None;
    }
    let turned = JoinSpec {
        left_on: spec.right_on.clone(),
        right_on: spec.left_on.clone(),
        how,
        suffixes: (spec.suffixes.1.clone(), spec.suffixes.0.clone()),
        algorithm: spec.algorithm,
    };
    let original = spec.output_schema(left, right).ok()?;
    let output = turned.output_schema(right, left).ok()?;
    // The swapped output's columns by origin: right's fields, then left's unshared ones.
    let is_shared = |n: &String| shared.contains(&n);
    let mut from_right = Vec::new();
    let mut from_left = Vec::new();
    let names = output.fields().iter().map(|f| f.name());
    let mut names = names.into_iter();
    for f in right.fields() {
        from_right.push((f.name().clone(), names.next()?.clone()));
    }
    for f in left.fields() {
        if !is_shared(f.name()) {
            from_left.push((f.name().clone(), names.next()?.clone()));
        }
    }
    // Every name in the swapped output must be unique for a column reference to be one.
    let mut seen = std::collections::HashSet::new();
    if !output.fields().iter().all(|f| seen.insert(f.name())) {
        return None;
    }
    let lookup = |side: &[(String, String)], name: &String| {
        side.iter()
            .find(|(source, _)| source == name)
            .map(|(_, out)| out.clone())
    };
    // The original output: left's fields (a shared key from the swapped right side), then
    // right's unshared fields.
    let mut sources = Vec::with_capacity(original.fields().len());
    for f in left.fields() {
        sources.push(if is_shared(f.name()) {
            lookup(&from_right, f.name())?
        } else {
            lookup(&from_left, f.name())?
        });
    }
    for f in right.fields() {
        if !is_shared(f.name()) {
            sources.push(lookup(&from_right, f.name())?);
        }
    }
    let restore = FrameProgram {
        steps: vec![FrameStep::Project(
            original
                .fields()
                .iter()
                .zip(sources)
                .map(|(f, source)| (f.name().clone(), Expr::Column(source)))
                .collect(),
        )],
    };
    Some(Swapped {
        spec: turned,
        restore,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::JoinAlgorithm;
    use arrow_schema::Field;

    fn schema(cols: &[(&str, DataType)]) -> Schema {
        Schema::new(
            cols.iter()
                .map(|(n, t)| Field::new(*n, t.clone(), true))
                .collect::<Vec<_>>(),
        )
    }

    fn spec(l: &[&str], r: &[&str], how: JoinType) -> JoinSpec {
        JoinSpec {
            left_on: l.iter().map(|s| s.to_string()).collect(),
            right_on: r.iter().map(|s| s.to_string()).collect(),
            how,
            suffixes: ("_x".into(), "_y".into()),
            algorithm: JoinAlgorithm::Hash,
        }
    }

    fn projected(s: &Swapped) -> Vec<(String, String)> {
        let FrameStep::Project(list) = &s.restore.steps[0] else {
            panic!("a projection");
        };
        list.iter()
            .map(|(n, e)| match e {
                Expr::Column(c) => (n.clone(), c.clone()),
                other => panic!("a column reference, got {other}"),
            })
            .collect()
    }

    #[test]
    fn restores_names_suffixes_and_shared_keys() {
        let l = schema(&[
            ("k", DataType::Int64),
            ("v", DataType::Int64),
            ("a", DataType::Utf8),
        ]);
        let r = schema(&[
            ("v", DataType::Float64),
            ("k", DataType::Int64),
            ("b", DataType::Utf8),
        ]);
        let s = swapped(&spec(&["k"], &["k"], JoinType::Inner), &l, &r).expect("swappable");
        assert_eq!(s.spec.left_on, vec!["k"]);
        assert_eq!(s.spec.suffixes, ("_y".to_string(), "_x".to_string()));
        // The original output is k, v_x, a, v_y, b; the swapped one v_y, k, b, v_x, a.
        assert_eq!(
            projected(&s),
            vec![
                ("k".into(), "k".into()),
                ("v_x".into(), "v_x".into()),
                ("a".into(), "a".into()),
                ("v_y".into(), "v_y".into()),
                ("b".into(), "b".into()),
            ]
        );
    }

    #[test]
    fn differently_named_keys_keep_both_columns() {
        let l = schema(&[("c_key", DataType::Int64), ("name", DataType::Utf8)]);
        let r = schema(&[("o_cust", DataType::Int64), ("price", DataType::Int64)]);
        let s =
            swapped(&spec(&["c_key"], &["o_cust"], JoinType::Right), &l, &r).expect("swappable");
        assert_eq!(s.spec.how, JoinType::Left);
        assert_eq!(s.spec.left_on, vec!["o_cust"]);
        let names: Vec<String> = projected(&s).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec!["c_key", "name", "o_cust", "price"]);
    }

    #[test]
    fn outer_semi_and_float_shared_keys_are_not_swapped() {
        let l = schema(&[("k", DataType::Float64)]);
        let r = schema(&[("k", DataType::Float64)]);
        assert!(swapped(&spec(&["k"], &["k"], JoinType::Inner), &l, &r).is_none());
        let l = schema(&[("k", DataType::Int64)]);
        let r = schema(&[("k", DataType::Int64)]);
        for how in [
            JoinType::Left,
            JoinType::Outer,
            JoinType::Semi,
            JoinType::Anti,
        ] {
            assert!(swapped(&spec(&["k"], &["k"], how), &l, &r).is_none());
        }
    }
}

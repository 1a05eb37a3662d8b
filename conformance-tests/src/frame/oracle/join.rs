//! Joins by their definition: every pair of rows whose keys are equal and not null, then
//! the rows a preserving join keeps unmatched with nulls on the other side. Output columns
//! follow the protocol's `JoinSpec`: the left columns, then the right columns that are
//! not keys of the same name (a shared key coalesced for right and outer joins), clashing
//! names suffixed.

use tessera_core::frame::{JoinSpec, JoinType};

use super::expr::order;
use super::value::{Cell, Column, Table};

/// Whether row `i` of `l` and row `j` of `r` match on the keys.
fn matches(l: &[&Column], r: &[&Column], i: usize, j: usize) -> bool {
    l.iter()
        .zip(r)
        .all(|(a, b)| match (&a.cells[i], &b.cells[j]) {
            (Some(x), Some(y)) => order(x, y).is_ok_and(|o| o.is_eq()),
            _ => false,
        })
}

/// `left` joined with `right` as `spec` says (semi and anti joins keep left rows only).
///
/// # Errors
/// An unknown key column.
pub fn join(left: &Table, right: &Table, spec: &JoinSpec) -> Result<Table, String> {
    let lk: Vec<&Column> = spec
        .left_on
        .iter()
        .map(|k| left.column(k))
        .collect::<Result<_, _>>()?;
    let rk: Vec<&Column> = spec
        .right_on
        .iter()
        .map(|k| right.column(k))
        .collect::<Result<_, _>>()?;
    // Pairs of row numbers; `None` on the side a preserving join fills with nulls.
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let mut right_used = vec![false; right.rows];
    for i in 0..left.rows {
        let hits: Vec<usize> = (0..right.rows)
            .filter(|&j| matches(&lk, &rk, i, j))
            .collect();
        match spec.how {
            JoinType::Semi => {
                if !hits.is_empty() {
                    pairs.push((Some(i), None));
                }
                continue;
            }
            JoinType::Anti => {
                if hits.is_empty() {
                    pairs.push((Some(i), None));
                }
                continue;
            }
            _ => {}
        }
        for &j in &hits {
            right_used[j] = true;
            pairs.push((Some(i), Some(j)));
        }
        if hits.is_empty() && matches!(spec.how, JoinType::Left | JoinType::Outer) {
            pairs.push((Some(i), None));
        }
    }
    if matches!(spec.how, JoinType::Right | JoinType::Outer) {
        for (j, used) in right_used.iter().enumerate() {
            if !used {
                pairs.push((None, Some(j)));
            }
        }
    }
    let shared = |name: &str| {
        spec.left_on
            .iter()
            .zip(&spec.right_on)
            .any(|(a, b)| a == b && b == name)
    };
    let pick = |c: &Column, row: Option<usize>| -> Cell { row.and_then(|r| c.cells[r].clone()) };
    let mut columns = Vec::new();
    for c in &left.columns {
        let clash = !shared(&c.name) && right.columns.iter().any(|r| r.name == c.name);
        let semi = matches!(spec.how, JoinType::Semi | JoinType::Anti);
        let name = if clash && !semi {
            format!("{}{}", c.name, spec.suffixes.0)
        } else {
            c.name.clone()
        };
        let other = right
            .columns
            .iter()
            .find(|r| r.name == c.name && shared(&c.name));
        let cells = pairs
            .iter()
            .map(|&(i, j)| match (i, other) {
                (None, Some(rc)) => pick(rc, j),
                _ => pick(c, i),
            })
            .collect();
        columns.push(Column {
            name,
            ty: c.ty,
            cells,
        });
    }
    if !matches!(spec.how, JoinType::Semi | JoinType::Anti) {
        for c in right.columns.iter().filter(|c| !shared(&c.name)) {
            let clash = left.columns.iter().any(|l| l.name == c.name);
            let name = if clash {
                format!("{}{}", c.name, spec.suffixes.1)
            } else {
                c.name.clone()
            };
            columns.push(Column {
                name,
                ty: c.ty,
                cells: pairs.iter().map(|&(_, j)| pick(c, j)).collect(),
            });
        }
    }
    Ok(Table {
        rows: pairs.len(),
        columns,
    })
}

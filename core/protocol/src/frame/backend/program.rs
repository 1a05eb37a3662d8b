//! Fused programs: the filters and projections a backend runs on a partition in one pass
//! ([`FrameProgram`]), and the schema a program gives its input.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::frame::expr::Expr;

/// One step of a fused per-partition program.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameStep {
    /// Keep the rows where the boolean expression is true (null counts as false).
    Filter(Expr),
    /// Replace the columns by these named expressions, in this order.
    Project(Vec<(String, Expr)>),
}

/// Filters and projections run in order in one pass over a partition. Core fuses every
/// chain of `filter`/`select`/`with_column`/`rename`/`drop` into one program, so a backend
/// sees each partition once per chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FrameProgram {
    /// The steps, in order.
    pub steps: Vec<FrameStep>,
}

/// The schema a program produces over `input`, checking every expression.
pub fn program_schema(input: &SchemaRef, program: &FrameProgram) -> Result<SchemaRef> {
    let mut schema = input.clone();
    for step in &program.steps {
        match step {
            FrameStep::Filter(e) => {
                let t = e.data_type(&schema)?;
                if t != arrow_schema::DataType::Boolean {
                    return Err(Error::invalid(
                        "filter",
                        format!("the predicate {e} is {t}; it must be Boolean"),
                    ));
                }
            }
            FrameStep::Project(list) => {
                let mut seen = BTreeSet::new();
                let mut fields = Vec::with_capacity(list.len());
                for (name, e) in list {
                    if !seen.insert(name.as_str()) {
                        return Err(Error::invalid(
                            "select",
                            format!("column '{name}' appears twice in the output"),
                        ));
                    }
                    let t = e.data_type(&schema)?;
                    let nullable = match e {
                        Expr::Column(c) => {
                            schema.field_with_name(c).map_or(true, |f| f.is_nullable())
                        }
                        _ => true,
                    };
                    fields.push(Field::new(name, t, nullable));
                }
                schema = Arc::new(Schema::new(fields));
            }
        }
    }
    Ok(schema)
}

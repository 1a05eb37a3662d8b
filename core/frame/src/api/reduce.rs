//! Whole-frame aggregations: one row, one column per aggregated column (`agg`, `sum`,
//! `mean`, …, `quantile`), and [`DataFrame::reduce`], one value.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_schema::{Field, Schema};

use crate::api::dataframe::DataFrame;
use crate::api::display::Value;
use crate::backend::{AggFunc, AggSpec, Quantile};
use crate::error::{Error, Result};
use crate::plan::{GroupStrategy, Node};

/// Output names for `(column, func)` pairs: the column name, or `column_func` when the
/// column is aggregated more than once.
pub(crate) fn named_aggs(aggs: &[(&str, AggFunc)]) -> Vec<AggSpec> {
    aggs.iter()
        .map(|(c, f)| {
            let repeated = aggs.iter().filter(|(c2, _)| c2 == c).count() > 1;
            let out = if repeated {
                format!("{c}_{}", f.name())
            } else {
                c.to_string()
            };
            AggSpec::new(*c, *f, out)
        })
        .collect()
}

impl DataFrame {
    /// Whole-frame aggregation: one row, one column per `(column, func)`, named
    /// `column` (or `column_func` when a column is aggregated more than once).
    pub fn agg(&self, aggs: &[(&str, AggFunc)]) -> Result<DataFrame> {
        self.aggregate(Vec::new(), named_aggs(aggs), None)
    }

    pub(crate) fn aggregate(
        &self,
        keys: Vec<String>,
        aggs: Vec<AggSpec>,
        strategy: Option<GroupStrategy>,
    ) -> Result<DataFrame> {
        let input = self.schema();
        let mut fields: Vec<Field> = Vec::new();
        for k in &keys {
            let f = input
                .field_with_name(k)
                .map_err(|_| Error::invalid("groupby", format!("no key column '{k}'")))?;
            fields.push(Field::new(k, f.data_type().clone(), true));
        }
        if aggs.is_empty() {
            return Err(Error::invalid("agg", "no aggregations given"));
        }
        let mut names = BTreeSet::new();
        for a in &aggs {
            a.check_arity()?;
            let mut read = Vec::new();
            for c in a.inputs() {
                read.push(input.field_with_name(c).map_err(|_| {
                    Error::invalid(
                        "agg",
                        format!("no column '{c}'; columns: {}", self.columns().join(", ")),
                    )
                })?);
            }
            for (c, f) in a.inputs().zip(&read) {
                if !a.func.accepts(f.data_type()) {
                    return Err(Error::invalid(
                        "agg",
                        format!(
                            "{} does not apply to column '{c}' of type {}",
                            a.func.name(),
                            f.data_type()
                        ),
                    ));
                }
            }
            let f = read[0];
            if self.backend.capabilities().lacks(a.func) {
                return Err(Error::invalid(
                    "agg",
                    format!(
                        "dataframe backend '{}' does not support {} (declared in its capabilities)",
                        self.backend.name(),
                        a.func.name()
                    ),
                ));
            }
            if keys.contains(&a.output) || !names.insert(a.output.clone()) {
                return Err(Error::invalid(
                    "agg",
                    format!(
                        "output column '{}' appears twice; name it differently",
                        a.output
                    ),
                ));
            }
            fields.push(Field::new(
                &a.output,
                a.func.output_type(f.data_type()),
                true,
            ));
        }
        Ok(self.derive(Node::Aggregate {
            input: self.node.clone(),
            keys,
            aggs,
            strategy,
            schema: Arc::new(Schema::new(fields)),
        }))
    }

    fn numeric_agg(&self, func: AggFunc) -> Result<DataFrame> {
        let cols: Vec<String> = self
            .schema()
            .fields()
            .iter()
            .filter(|f| func.accepts(f.data_type()))
            .map(|f| f.name().clone())
            .collect();
        let aggs: Vec<(&str, AggFunc)> = cols.iter().map(|c| (c.as_str(), func)).collect();
        self.agg(&aggs)
    }

    /// Sum of every numeric column (one row).
    pub fn sum(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Sum)
    }

    /// Mean of every numeric column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Mean)
    }

    /// Minimum of every orderable column.
    pub fn min(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Min)
    }

    /// Maximum of every orderable column.
    pub fn max(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Max)
    }

    /// Non-null count of every column.
    pub fn count(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Count)
    }

    /// Sample standard deviation of every numeric column.
    pub fn std(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Std)
    }

    /// Sample variance of every numeric column.
    pub fn var(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Var)
    }

    /// Sample skewness of every numeric column, as pandas' `skew()`.
    pub fn skew(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Skew)
    }

    /// Sample excess kurtosis of every numeric column, as pandas' `kurt()`.
    pub fn kurt(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Kurt)
    }

    /// Distinct non-null values of every column.
    pub fn nunique(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::NUnique)
    }

    /// Median of every numeric column (exact; NaN and nulls skipped, as pandas does).
    pub fn median(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Median)
    }

    /// The `q` quantile of every numeric column (one row): exact, interpolated linearly
    /// between the nearest values as pandas' `quantile(q)`; NaN and nulls skipped.
    ///
    /// # Errors
    /// `q` outside `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Quantile(Quantile::new(q)?))
    }

    /// The `q` quantile of every numeric column estimated from a t-digest
    /// ([`AggFunc::ApproxQuantile`]): constant memory per column, rank error typically
    /// under 0.5%.
    ///
    /// # Errors
    /// `q` outside `[0, 1]`.
    pub fn approx_quantile(&self, q: f64) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::ApproxQuantile(Quantile::new(q)?))
    }

    /// One reduction of one column, computed: `df.reduce("fare", AggFunc::Mean)`.
    pub fn reduce(&self, column: &str, func: AggFunc) -> Result<Value> {
        self.agg(&[(column, func)])?.compute()?.value(column, 0)
    }
}

//! The oracle's data: plain values in rows, its own small type system, and the two
//! crossings to Arrow (reading a batch's cells, building a batch of the oracle's answer).
//!
//! Reading and building use Arrow's array types only as containers (no compute kernel):
//! every value the oracle reasons about is a Rust `i64`, `f64`, `bool` or `String` here.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, ListArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

/// The types the oracle knows (those the suite's columns and results take).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// The type of a bare null literal.
    Null,
    /// Boolean.
    Bool,
    /// 32-bit integer.
    Int32,
    /// 64-bit integer.
    Int64,
    /// 64-bit float.
    Float64,
    /// UTF-8 text.
    Utf8,
    /// Days since 1970-01-01.
    Date32,
    /// Microseconds since 1970-01-01T00:00:00, no zone.
    TimestampUs,
    /// A list of UTF-8 texts (what `split` gives).
    ListUtf8,
    /// A categorical: UTF-8 texts held as a dictionary with 32-bit codes (the values are
    /// the texts; the codes are the backend's business).
    Categorical,
    /// An exact decimal of this precision and scale (values are unscaled integers).
    Decimal(u8, i8),
}

impl Ty {
    /// The oracle's type for an Arrow type, or why it has none.
    ///
    /// # Errors
    /// A text naming the type the oracle does not model.
    pub fn of(t: &DataType) -> Result<Ty, String> {
        Ok(match t {
            DataType::Null => Ty::Null,
            DataType::Boolean => Ty::Bool,
            DataType::Int32 => Ty::Int32,
            DataType::Int64 => Ty::Int64,
            DataType::Float64 => Ty::Float64,
            DataType::Utf8 => Ty::Utf8,
            DataType::Date32 => Ty::Date32,
            DataType::Timestamp(TimeUnit::Microsecond, None) => Ty::TimestampUs,
            DataType::List(f) if f.data_type() == &DataType::Utf8 => Ty::ListUtf8,
            DataType::Decimal128(p, s) => Ty::Decimal(*p, *s),
            DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                Ty::Categorical
            }
            other => return Err(format!("the frame oracle does not model {other}")),
        })
    }

    /// The Arrow type.
    pub fn data_type(self) -> DataType {
        match self {
            Ty::Null => DataType::Null,
            Ty::Bool => DataType::Boolean,
            Ty::Int32 => DataType::Int32,
            Ty::Int64 => DataType::Int64,
            Ty::Float64 => DataType::Float64,
            Ty::Utf8 => DataType::Utf8,
            Ty::Date32 => DataType::Date32,
            Ty::TimestampUs => DataType::Timestamp(TimeUnit::Microsecond, None),
            Ty::ListUtf8 => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            Ty::Decimal(p, s) => DataType::Decimal128(p, s),
            Ty::Categorical => tessera_core::frame::categorical_type(),
        }
    }

    /// Integers of either width.
    pub fn is_int(self) -> bool {
        matches!(self, Ty::Int32 | Ty::Int64)
    }

    /// Integers and floats.
    pub fn is_numeric(self) -> bool {
        self.is_int() || self == Ty::Float64
    }
}

/// One non-null value. Integers of both widths are `Int`; dates and timestamps are their
/// counts (the column's [`Ty`] says which).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Boolean.
    Bool(bool),
    /// An integer, a date's days or a timestamp's microseconds.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text.
    Str(String),
    /// A list of texts (null items allowed).
    List(Vec<Option<String>>),
    /// A decimal's unscaled value (its column's [`Ty::Decimal`] says the scale).
    Dec(i128),
}

impl Value {
    /// The integer inside, if any.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number inside as a float (integers converted).
    pub fn float(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(x) => Some(*x),
            _ => None,
        }
    }

    /// The boolean inside, if any.
    pub fn bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The text inside, if any.
    pub fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A cell: `None` is null.
pub type Cell = Option<Value>;

/// A named column of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Its cells, one per row.
    pub cells: Vec<Cell>,
}

/// A table: columns of equal length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// The number of rows (kept apart so that a table of no columns has rows too).
    pub rows: usize,
}

impl Table {
    /// The column named `name`.
    ///
    /// # Errors
    /// A text listing the columns that exist.
    pub fn column(&self, name: &str) -> Result<&Column, String> {
        self.columns.iter().find(|c| c.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
            format!("no column '{name}' (columns: {})", names.join(", "))
        })
    }

    /// The rows at `idx`, in that order (repeats allowed).
    pub fn take(&self, idx: &[usize]) -> Table {
        Table {
            columns: self
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    ty: c.ty,
                    cells: idx.iter().map(|&i| c.cells[i].clone()).collect(),
                })
                .collect(),
            rows: idx.len(),
        }
    }

    /// The rows of `parts` one after another (the first part's columns).
    pub fn concat(parts: &[Table]) -> Table {
        let Some(first) = parts.first() else {
            return Table::default();
        };
        let mut out = Table {
            columns: first
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    ty: c.ty,
                    cells: Vec::new(),
                })
                .collect(),
            rows: 0,
        };
        for p in parts {
            for (o, c) in out.columns.iter_mut().zip(&p.columns) {
                o.cells.extend(c.cells.iter().cloned());
            }
            out.rows += p.rows;
        }
        out
    }

    /// The table's cells read from a batch.
    ///
    /// # Errors
    /// A column of a type the oracle does not model.
    pub fn from_batch(b: &RecordBatch) -> Result<Table, String> {
        let schema = b.schema();
        let columns = schema
            .fields()
            .iter()
            .zip(b.columns())
            .map(|(f, a)| {
                Ok(Column {
                    name: f.name().clone(),
                    ty: Ty::of(f.data_type())?,
                    cells: read(a)?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Table {
            columns,
            rows: b.num_rows(),
        })
    }

    /// The table as a batch.
    ///
    /// # Errors
    /// A cell that does not hold a value of its column's type.
    pub fn to_batch(&self) -> Result<RecordBatch, String> {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(&c.name, c.ty.data_type(), true))
            .collect();
        let arrays = self
            .columns
            .iter()
            .map(|c| build(c.ty, &c.cells).map_err(|e| format!("column '{}': {e}", c.name)))
            .collect::<Result<Vec<_>, String>>()?;
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(self.rows));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(|e| e.to_string())
    }
}

macro_rules! cells {
    ($a:expr, $ty:ty, $wrap:expr) => {{
        let a = $a
            .as_any()
            .downcast_ref::<$ty>()
            .ok_or_else(|| format!("a column says {} but is not", $a.data_type()))?;
        (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| $wrap(a.value(i))))
            .collect()
    }};
}

/// The cells of an array.
///
/// # Errors
/// A type the oracle does not model.
pub fn read(a: &ArrayRef) -> Result<Vec<Cell>, String> {
    Ok(match Ty::of(a.data_type())? {
        Ty::Null => vec![None; a.len()],
        Ty::Bool => cells!(a, BooleanArray, Value::Bool),
        Ty::Int32 => cells!(a, Int32Array, |v: i32| Value::Int(i64::from(v))),
        Ty::Int64 => cells!(a, Int64Array, Value::Int),
        Ty::Float64 => cells!(a, Float64Array, Value::Float),
        Ty::Utf8 => cells!(a, StringArray, |v: &str| Value::Str(v.to_string())),
        Ty::Date32 => cells!(a, Date32Array, |v: i32| Value::Int(i64::from(v))),
        Ty::TimestampUs => cells!(a, TimestampMicrosecondArray, Value::Int),
        Ty::Decimal(..) => cells!(a, Decimal128Array, Value::Dec),
        Ty::Categorical => {
            use arrow_array::cast::AsArray;
            let d = a.as_dictionary::<arrow_array::types::Int32Type>();
            let texts = d
                .downcast_dict::<StringArray>()
                .ok_or("a categorical whose values are not Utf8")?;
            texts
                .into_iter()
                .map(|v| v.map(|s| Value::Str(s.to_string())))
                .collect()
        }
        Ty::ListUtf8 => {
            let l = a
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or("a list column is not a ListArray")?;
            (0..l.len())
                .map(|i| {
                    if l.is_null(i) {
                        return Ok(None);
                    }
                    let items = read(&l.value(i))?;
                    Ok(Some(Value::List(
                        items
                            .into_iter()
                            .map(|c| c.and_then(|v| v.str().map(str::to_string)))
                            .collect(),
                    )))
                })
                .collect::<Result<_, String>>()?
        }
    })
}

fn wrong(ty: Ty, v: &Value) -> String {
    format!("a {ty:?} column holds {v:?}")
}

/// An array of type `ty` holding `cells`.
///
/// # Errors
/// A cell whose value is not of `ty` (an Int32 out of range included).
pub fn build(ty: Ty, cells: &[Cell]) -> Result<ArrayRef, String> {
    fn each<T>(
        cells: &[Cell],
        ty: Ty,
        f: impl Fn(&Value) -> Option<T>,
    ) -> Result<Vec<Option<T>>, String> {
        cells
            .iter()
            .map(|c| match c {
                None => Ok(None),
                Some(v) => f(v).map(Some).ok_or_else(|| wrong(ty, v)),
            })
            .collect()
    }
    Ok(match ty {
        Ty::Null => arrow_array::new_null_array(&DataType::Null, cells.len()),
        Ty::Bool => Arc::new(BooleanArray::from(each(cells, ty, Value::bool)?)),
        Ty::Int32 => Arc::new(Int32Array::from(each(cells, ty, |v| {
            v.int().and_then(|i| i32::try_from(i).ok())
        })?)),
        Ty::Int64 => Arc::new(Int64Array::from(each(cells, ty, Value::int)?)),
        Ty::Float64 => Arc::new(Float64Array::from(each(cells, ty, |v| match v {
            Value::Float(x) => Some(*x),
            _ => None,
        })?)),
        Ty::Categorical => {
            let texts = each(cells, ty, |v| v.str().map(str::to_string))?;
            Arc::new(
                texts
                    .iter()
                    .map(Option::as_deref)
                    .collect::<arrow_array::DictionaryArray<arrow_array::types::Int32Type>>(),
            )
        }
        Ty::Utf8 => Arc::new(StringArray::from(each(cells, ty, |v| {
            v.str().map(str::to_string)
        })?)),
        Ty::Date32 => Arc::new(Date32Array::from(each(cells, ty, |v| {
            v.int().and_then(|i| i32::try_from(i).ok())
        })?)),
        Ty::TimestampUs => Arc::new(TimestampMicrosecondArray::from(each(
            cells,
            ty,
            Value::int,
        )?)),
        Ty::Decimal(p, s) => Arc::new(
            Decimal128Array::from(each(cells, ty, |v| match v {
                Value::Dec(d) => Some(*d),
                _ => None,
            })?)
            .with_precision_and_scale(p, s)
            .map_err(|e| e.to_string())?,
        ),
        Ty::ListUtf8 => {
            let lists = each(cells, ty, |v| match v {
                Value::List(items) => Some(items.clone()),
                _ => None,
            })?;
            let mut b = ListBuilder::new(StringBuilder::new());
            for l in lists {
                match l {
                    None => b.append(false),
                    Some(items) => {
                        for it in items {
                            b.values().append_option(it);
                        }
                        b.append(true);
                    }
                }
            }
            Arc::new(b.finish())
        }
    })
}

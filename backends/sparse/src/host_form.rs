//! The sparse host forms of a whole array: COO (any rank), CSR (2-d), and Arrow for
//! interchange — and the way back to a chunked array on the sparse backend.
//!
//! [`Coo`] holds every explicit entry's global coordinates (sorted in C order) and value,
//! plus the fill; [`Csr`] is the 2-d row-compressed form (`indptr`, `indices`, `data`, as in
//! SciPy). [`Coo::to_record_batch`] gives an Arrow batch with one `UInt64` column per axis
//! (`dim_0`, `dim_1`, ...) and a `value` column, the shape and fill in the schema metadata.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{Field, Schema};
use tessera_array::Array;
use tessera_core::chunks::c_strides;
use tessera_core::host::arrow::arrow_type;
use tessera_core::{BackendRef, ChunkSpec, DType, Error, HostArray, Result, Scalar};

use crate::chunk::{same_scalar, to_vec, vec1, with_type, SparseChunk};
use crate::structure::{decode, encode};

/// Every explicit entry of an array, with global coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Coo {
    /// The array's shape.
    pub shape: Vec<usize>,
    /// The value of every element not listed.
    pub fill: Scalar,
    /// One coordinate vector per axis, entries sorted in C order.
    pub coords: Vec<Vec<u64>>,
    /// The entries' values (1-d, the array's dtype).
    pub values: HostArray,
}

/// A 2-d array in compressed sparse row form (fill 0 implied when built from a [`Coo`]
/// with fill 0; the fill is kept either way).
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    /// `[rows, cols]`.
    pub shape: [usize; 2],
    /// The value of every element not listed.
    pub fill: Scalar,
    /// Row `r`'s entries are `indptr[r]..indptr[r + 1]`.
    pub indptr: Vec<u64>,
    /// Column of each entry.
    pub indices: Vec<u64>,
    /// Value of each entry.
    pub data: HostArray,
}

fn flat_of(coords: &[Vec<u64>], strides: &[usize], k: usize) -> u64 {
    coords
        .iter()
        .zip(strides)
        .map(|(c, &s)| c[k] * s as u64)
        .sum()
}

impl Coo {
    /// Builds and checks a COO form from triplet-style columns (any order; duplicate
    /// coordinates are an error naming the first one).
    pub fn new(
        shape: &[usize],
        fill: Scalar,
        coords: Vec<Vec<u64>>,
        values: HostArray,
    ) -> Result<Coo> {
        let n = values.len();
        if coords.len() != shape.len()
            || coords.iter().any(|c| c.len() != n)
            || values.shape().len() != 1
        {
            return Err(Error::shape(
                "sparse coo",
                format!(
                    "need {} coordinate columns of {n} entries and 1-d values for shape {shape:?}",
                    shape.len()
                ),
            ));
        }
        if values.dtype() != fill.dtype() {
            return Err(Error::dtype(
                "sparse coo",
                values.dtype(),
                format!("values must have the fill's dtype {}", fill.dtype()),
            ));
        }
        for (a, c) in coords.iter().enumerate() {
            if let Some(&bad) = c.iter().find(|&&v| v >= shape[a] as u64) {
                return Err(Error::invalid(
                    "sparse coo",
                    format!("coordinate {bad} on axis {a} is out of range for shape {shape:?}"),
                ));
            }
        }
        let strides = c_strides(shape);
        let mut order: Vec<(u64, usize)> =
            (0..n).map(|k| (flat_of(&coords, &strides, k), k)).collect();
        order.sort_unstable();
        if let Some(w) = order.windows(2).find(|w| w[0].0 == w[1].0) {
            let mut c = vec![0; shape.len()];
            decode(w[0].0, &strides, &mut c);
            return Err(Error::invalid(
                "sparse coo",
                format!("duplicate entry at {c:?}; combine duplicates before building the array"),
            ));
        }
        let coords = coords
            .iter()
            .map(|col| order.iter().map(|&(_, k)| col[k]).collect())
            .collect();
        let values = with_type!(values.dtype(), T => {
            let v = to_vec::<T>(&values);
            vec1(order.iter().map(|&(_, k)| v[k]).collect::<Vec<T>>())
        });
        Ok(Coo {
            shape: shape.to_vec(),
            fill,
            coords,
            values,
        })
    }

    /// Number of explicit entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The CSR form of a 2-d COO.
    pub fn to_csr(&self) -> Result<Csr> {
        let [rows, cols] = <[usize; 2]>::try_from(self.shape.as_slice())
            .map_err(|_| Error::shape("to_csr", format!("CSR needs 2-d, got {:?}", self.shape)))?;
        let mut indptr = vec![0u64; rows + 1];
        for &r in &self.coords[0] {
            indptr[r as usize + 1] += 1;
        }
        for r in 0..rows {
            indptr[r + 1] += indptr[r];
        }
        Ok(Csr {
            shape: [rows, cols],
            fill: self.fill,
            indptr,
            indices: self.coords[1].clone(),
            data: self.values.clone(),
        })
    }

    /// An Arrow batch: `dim_0..dim_{n-1}` (`UInt64`) and `value`; shape and fill in the
    /// schema metadata (`tessera.shape`, `tessera.fill`).
    pub fn to_record_batch(&self) -> Result<RecordBatch> {
        let mut fields = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (a, c) in self.coords.iter().enumerate() {
            fields.push(Field::new(
                format!("dim_{a}"),
                arrow_schema::DataType::UInt64,
                false,
            ));
            columns.push(Arc::new(UInt64Array::from(c.clone())));
        }
        fields.push(Field::new("value", arrow_type(self.values.dtype()), false));
        columns.push(host_to_arrow(&self.values));
        let meta = HashMap::from([
            ("tessera.shape".to_string(), format!("{:?}", self.shape)),
            ("tessera.fill".to_string(), format!("{:?}", self.fill)),
        ]);
        RecordBatch::try_new(Arc::new(Schema::new(fields).with_metadata(meta)), columns)
            .map_err(|e| Error::Internal(format!("building the Arrow batch: {e}")))
    }

    /// Reads a batch written by [`Coo::to_record_batch`] (or any batch with `dim_*`
    /// `UInt64` columns and a `value` column), given the shape and fill.
    pub fn from_record_batch(batch: &RecordBatch, shape: &[usize], fill: Scalar) -> Result<Coo> {
        let mut coords = Vec::new();
        for a in 0..shape.len() {
            let col = batch
                .column_by_name(&format!("dim_{a}"))
                .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
                .ok_or_else(|| {
                    Error::invalid("from_record_batch", format!("no UInt64 column 'dim_{a}'"))
                })?;
            coords.push(col.values().to_vec());
        }
        let value = batch
            .column_by_name("value")
            .ok_or_else(|| Error::invalid("from_record_batch", "no 'value' column"))?;
        let values = arrow_to_host(value.as_ref(), fill.dtype())?;
        Coo::new(shape, fill, coords, values)
    }
}

fn host_to_arrow(h: &HostArray) -> ArrayRef {
    use arrow_array::*;
    match h {
        HostArray::Bool(a) => Arc::new(BooleanArray::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::I8(a) => Arc::new(Int8Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::I16(a) => Arc::new(Int16Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::I32(a) => Arc::new(Int32Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::I64(a) => Arc::new(Int64Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::U8(a) => Arc::new(UInt8Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::U16(a) => Arc::new(UInt16Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::U32(a) => Arc::new(UInt32Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::U64(a) => Arc::new(UInt64Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::F32(a) => Arc::new(Float32Array::from(a.iter().copied().collect::<Vec<_>>())),
        HostArray::F64(a) => Arc::new(Float64Array::from(a.iter().copied().collect::<Vec<_>>())),
    }
}

fn arrow_to_host(a: &dyn arrow_array::Array, dtype: DType) -> Result<HostArray> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    if *a.data_type() != arrow_type(dtype) || a.null_count() > 0 {
        return Err(Error::dtype(
            "from_record_batch",
            dtype,
            format!(
                "'value' column is {} with {} nulls; expected non-null {}",
                a.data_type(),
                a.null_count(),
                arrow_type(dtype)
            ),
        ));
    }
    Ok(match dtype {
        DType::Bool => vec1(a.as_boolean().values().iter().collect::<Vec<_>>()),
        DType::I8 => vec1(a.as_primitive::<Int8Type>().values().to_vec()),
        DType::I16 => vec1(a.as_primitive::<Int16Type>().values().to_vec()),
        DType::I32 => vec1(a.as_primitive::<Int32Type>().values().to_vec()),
        DType::I64 => vec1(a.as_primitive::<Int64Type>().values().to_vec()),
        DType::U8 => vec1(a.as_primitive::<UInt8Type>().values().to_vec()),
        DType::U16 => vec1(a.as_primitive::<UInt16Type>().values().to_vec()),
        DType::U32 => vec1(a.as_primitive::<UInt32Type>().values().to_vec()),
        DType::U64 => vec1(a.as_primitive::<UInt64Type>().values().to_vec()),
        DType::F32 => vec1(a.as_primitive::<Float32Type>().values().to_vec()),
        DType::F64 => vec1(a.as_primitive::<Float64Type>().values().to_vec()),
    })
}

impl Csr {
    /// The COO form.
    pub fn to_coo(&self) -> Result<Coo> {
        let rows: Vec<u64> = (0..self.shape[0])
            .flat_map(|r| {
                let n = self.indptr[r + 1] - self.indptr[r];
                std::iter::repeat_n(r as u64, n as usize)
            })
            .collect();
        Coo::new(
            &self.shape,
            self.fill,
            vec![rows, self.indices.clone()],
            self.data.clone(),
        )
    }
}

/// Computes `array` (on the sparse backend) into its COO form without densifying.
pub fn to_coo(array: &Array) -> Result<Coo> {
    if array.backend_name() != crate::NAME {
        return Err(Error::invalid(
            "to_coo",
            format!(
                "the array is on '{}'; move it with to_backend(\"sparse\") first",
                array.backend_name()
            ),
        ));
    }
    let shape = array.shape().to_vec();
    let grid = array.chunks().clone();
    let chunks = array.compute_chunks()?;
    let strides = c_strides(&shape);
    let mut fill: Option<Scalar> = None;
    let mut entries: Vec<(u64, usize, usize)> = Vec::new();
    let mut parts = Vec::new();
    for (n, (chunk, block)) in chunks.iter().zip(grid.blocks()).enumerate() {
        let s = crate::downcast(chunk, "to_coo")?;
        match fill {
            None => fill = Some(s.fill),
            Some(f) if same_scalar(f, s.fill) => {}
            Some(f) => {
                return Err(Error::invalid(
                    "to_coo",
                    format!("chunks have different fill values ({f:?} and {:?}); one COO form needs one fill", s.fill),
                ))
            }
        }
        let origin: Vec<usize> = block
            .iter()
            .enumerate()
            .map(|(a, &i)| grid.offsets(a)[i])
            .collect();
        let local = c_strides(&s.shape);
        let mut c = vec![0; shape.len()];
        for (k, &flat) in s.idx.iter().enumerate() {
            decode(flat, &local, &mut c);
            for (ci, o) in c.iter_mut().zip(&origin) {
                *ci += o;
            }
            entries.push((encode(&c, &strides), n, k));
        }
        parts.push(s);
    }
    let fill = fill.unwrap_or(Scalar::zero(array.dtype()));
    entries.sort_unstable();
    let mut coords = vec![Vec::with_capacity(entries.len()); shape.len()];
    let mut c = vec![0; shape.len()];
    for &(flat, _, _) in &entries {
        decode(flat, &strides, &mut c);
        for (col, &v) in coords.iter_mut().zip(&c) {
            col.push(v as u64);
        }
    }
    let values = with_type!(array.dtype(), T => {
        let per: Vec<Vec<T>> = parts.iter().map(|p| to_vec::<T>(&p.vals)).collect();
        vec1(entries.iter().map(|&(_, n, k)| per[n][k]).collect::<Vec<T>>())
    });
    Ok(Coo {
        shape,
        fill,
        coords,
        values,
    })
}

/// A chunked array on the sparse backend from a COO form.
pub fn from_coo(backend: &BackendRef, coo: &Coo, chunks: impl Into<ChunkSpec>) -> Result<Array> {
    let dtype = coo.values.dtype();
    let grid = chunks.into().resolve(
        &coo.shape,
        dtype.size(),
        tessera_core::config::chunk_size_bytes()?,
    )?;
    let nblocks = grid.count();
    let gstrides = c_strides(&grid.grid());
    let mut per: Vec<Vec<(u64, usize)>> = vec![Vec::new(); nblocks];
    let mut c = vec![0usize; coo.shape.len()];
    let mut b = vec![0usize; coo.shape.len()];
    for k in 0..coo.nnz() {
        for (a, col) in coo.coords.iter().enumerate() {
            let v = col[k] as usize;
            let offs = grid.offsets(a);
            let i = offs.partition_point(|&o| o <= v) - 1;
            b[a] = i;
            c[a] = v - offs[i];
        }
        let block = encode(&b, &gstrides) as usize;
        let bs = grid.block_shape(&b);
        per[block].push((encode(&c, &c_strides(bs.as_slice())), k));
    }
    let parts = grid
        .blocks()
        .zip(per)
        .map(|(blk, entries)| {
            let bs = grid.block_shape(&blk);
            let proto = SparseChunk {
                shape: bs.as_slice().to_vec(),
                fill: coo.fill,
                idx: Vec::new(),
                vals: coo.values.clone(),
            };
            Arc::new(proto.permuted(bs.as_slice(), entries).prune()) as tessera_core::Chunk
        })
        .collect();
    Array::from_chunks(parts, grid, backend.clone())
}

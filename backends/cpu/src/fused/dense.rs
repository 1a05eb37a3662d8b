//! Dense output ranges of a program, for consumers that take a program's output tile by
//! tile in float form (the streamed matmul and sketch in `crate::stream`).

use tessera_core::program::{Linear, Node, Program};
use tessera_core::random::RandomSpec;
use tessera_core::{DType, Error, HostArray, Result};

use super::reads::leaf_maps;
use super::sinks::Sink;
use super::tile::{flat_run, reads_flat, runs_for, spans, Buf};
use super::{run_range, tile_len, validate};

/// A float type a program's dense output can be read back as.
pub(crate) trait FloatOut: Sized + Copy {
    /// Zero, to size a buffer.
    const ZERO: Self;
    /// The tile's values when it holds this type.
    fn from_buf(b: Buf) -> Option<Vec<Self>>;
    /// The elements of `runs` of a float random source, straight into `out`.
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [Self]);
}
impl FloatOut for f64 {
    const ZERO: f64 = 0.0;
    fn from_buf(b: Buf) -> Option<Vec<f64>> {
        match b {
            Buf::F64(v) => Some(v),
            _ => None,
        }
    }
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [f64]) {
        spec.sample_runs_into(runs, out);
    }
}
impl FloatOut for f32 {
    const ZERO: f32 = 0.0;
    fn from_buf(b: Buf) -> Option<Vec<f32>> {
        match b {
            Buf::F32(v) => Some(v),
            _ => None,
        }
    }
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [f32]) {
        // f32 specs produce f32 values widened exactly, so the narrowing is exact.
        for (o, v) in out.iter_mut().zip(spec.sample_runs(runs)) {
            *o = v as f32;
        }
    }
}

/// A program with one dense float output, checked against its inputs once and then run
/// over any range of its elements (the streaming matmul's bands of rows).
pub(crate) struct DenseRanges<'a> {
    program: &'a Program,
    inputs: &'a [&'a HostArray],
    lins: Vec<Option<Linear>>,
    /// The source when the program is nothing but a float random source (a random
    /// matrix): its values are generated straight into the caller's buffer. With it,
    /// whether it reads in C order ([`reads_flat`]): then any range is one run.
    generator: Option<(&'a RandomSpec, Linear, bool)>,
}

impl<'a> DenseRanges<'a> {
    /// Checks `program` against `inputs` and that its one output is dense.
    pub(crate) fn new(program: &'a Program, inputs: &'a [&'a HostArray]) -> Result<Self> {
        validate(program, inputs)?;
        if program.outputs.len() != 1 || program.outputs[0].reduce.is_some() {
            return Err(Error::Internal(
                "a streamed operand program must have one dense output".into(),
            ));
        }
        let lins = leaf_maps(program);
        let output = program.outputs[0].node;
        let generator = match (&program.nodes[output], &lins[output]) {
            (Node::Random { spec, .. }, Some(lin))
                if matches!(program.dtypes[output], DType::F64 | DType::F32) =>
            {
                Some((spec, lin.clone(), reads_flat(&program.shape, [lin])))
            }
            _ => None,
        };
        Ok(DenseRanges {
            program,
            inputs,
            lins,
            generator,
        })
    }

    /// Output elements `lo..hi` (C order) into `out`, replacing its contents.
    pub(crate) fn fill<T: FloatOut>(&self, lo: usize, hi: usize, out: &mut Vec<T>) -> Result<()> {
        if let Some((spec, lin, flat)) = &self.generator {
            out.resize(hi - lo, T::ZERO);
            let shape = &self.program.shape;
            if *flat {
                // The whole range is one run of the source.
                let runs = flat_run(shape, lo, hi - lo);
                T::generate(spec, &spans(lin, &runs), out);
                return Ok(());
            }
            // Tile by tile, as `run_range` would, but into `out` without a copy.
            let tile = tile_len(shape);
            let mut start = lo;
            while start < hi {
                let len = tile.min(hi - start);
                let runs = runs_for(shape, start, len);
                T::generate(
                    spec,
                    &spans(lin, &runs),
                    &mut out[start - lo..start - lo + len],
                );
                start += len;
            }
            return Ok(());
        }
        let mut sinks = vec![Sink::Dense {
            dtype: self.program.output_dtype(0),
            data: Vec::new(),
        }];
        run_range(self.program, self.inputs, &self.lins, lo, hi, &mut sinks)?;
        out.clear();
        if let Some(Sink::Dense { data, .. }) = sinks.pop() {
            for tile in data {
                let v = T::from_buf(tile).ok_or_else(|| {
                    Error::Internal("a streamed operand's tiles have another dtype".into())
                })?;
                out.extend(v);
            }
        }
        Ok(())
    }
}

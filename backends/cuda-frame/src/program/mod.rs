//! A fused filter/projection program on the device: one kernel text per program
//! structure, with three entries that share the row's statements (`emit.rs`):
//!
//! 1. `_count`: each block counts the rows its contiguous range keeps;
//! 2. `_select`: with the blocks' exclusive prefix sums (folded on the host from the
//!    counts, one word per block), each block writes the positions of its kept rows in
//!    order — a block-wide scan per tile of rows — so the result keeps the input's order
//!    and is the same on every run;
//! 3. `_project`: each thread takes eight output rows, evaluates every output column at
//!    the selected row and writes the values, the Arrow validity byte and, for booleans,
//!    the value byte of those eight rows (no atomics, no second packing pass).
//!
//! A program without a filter runs `_project` alone over every row. An output that is an
//! input column unchanged by an unfiltered program is that column itself (no copy, any
//! type). The text depends only on the program's structure and the types it reads;
//! column offsets, row counts, literals and block offsets travel in `P`.

pub(crate) mod emit;

use std::sync::Arc;

use arrow_schema::{DataType, SchemaRef};
use tessera_core::frame::{program_schema, FrameProgram, FrameStep};
use tessera_core::{Error, Result};

use super::column::{DeviceArray, DeviceBytes, DeviceNulls};
use super::launch::{column_args, grid_for, launch_checked, placeholder, plan_of, ColumnArgs};
use crate::batch::DeviceBatch;
use emit::{ctype, Emitter, Refusal, Val};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

/// One output column of a program.
#[derive(Debug, Clone)]
enum Out {
    /// Input column `i`, unchanged.
    Pass(usize),
    /// Kernel output `k`.
    Kernel(usize),
    /// Input string column `i` gathered at the selected rows, its validity being kernel
    /// output `k`.
    Strings(usize, usize),
}

/// What `_project` writes for one output.
#[derive(Debug, Clone)]
enum KernelOut {
    /// Values (a buffer of fixed-width values, or of bits for booleans) and validity.
    Value(Val, DataType),
    /// The validity of a gathered string column alone.
    Validity(Val),
}

impl KernelOut {
    fn buffers(&self) -> usize {
        match self {
            KernelOut::Value(..) => 2,
            KernelOut::Validity(_) => 1,
        }
    }
}

/// A program the device runs natively: its kernel text and what its launches need.
#[derive(Debug, Clone)]
pub struct NativeProgram {
    schema: SchemaRef,
    body: String,
    hash: u64,
    name: String,
    /// Input columns the kernels read, by slot.
    reads: Vec<usize>,
    literals: Vec<u64>,
    filtered: bool,
    outputs: Vec<Out>,
    /// The kernel outputs' types (`None` for a string validity), in order.
    kernel_types: Vec<Option<DataType>>,
    /// The errors a row can raise, by code - 1 (each launch then has an `err` word).
    checks: Vec<String>,
}

/// Where a column of the current step comes from.
#[derive(Debug, Clone)]
enum Slot {
    Input(usize),
    Value(Val),
}

/// The program as device kernels, or why it must run on the host.
///
/// # Errors
/// The reason, naming the first expression or type the kernel generator does not cover.
pub fn native(
    input: &SchemaRef,
    program: &FrameProgram,
) -> std::result::Result<NativeProgram, Refusal> {
    let out_schema = program_schema(input, program).map_err(|e| e.to_string())?;
    let mut e = Emitter::new();
    let mut env: Vec<(String, Slot)> = input
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name().clone(), Slot::Input(i)))
        .collect();
    let mut schema: SchemaRef = input.clone();
    let mut filtered = false;
    for (k, step) in program.steps.iter().enumerate() {
        let mut lookup = |em: &mut Emitter, name: &str| -> std::result::Result<Val, Refusal> {
            let slot = env
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| format!("no column '{name}'"))?;
            match slot {
                Slot::Input(i) => em.read(i, input.field(i).data_type()),
                Slot::Value(v) => Ok(v),
            }
        };
        match step {
            FrameStep::Filter(pred) => {
                let p = e.expr(pred, &schema, &mut lookup)?;
                let p = e.cast(p, &DataType::Boolean)?;
                e.lines.push(format!("keep &= (u8)({} & {});", p.o, p.v));
                filtered = true;
            }
            FrameStep::Project(list) => {
                let mut next = Vec::with_capacity(list.len());
                for (name, x) in list {
                    let slot = match x {
                        tessera_core::frame::expr::Expr::Column(c) => env
                            .iter()
                            .find(|(n, _)| n == c)
                            .map(|(_, s)| s.clone())
                            .ok_or_else(|| format!("no column '{c}'"))?,
                        _ => Slot::Value(e.expr(x, &schema, &mut lookup)?),
                    };
                    next.push((name.clone(), slot));
                }
                env = next;
            }
        }
        schema = program_schema(
            input,
            &FrameProgram {
                steps: program.steps[..=k].to_vec(),
            },
        )
        .map_err(|err| err.to_string())?;
    }
    let mut outputs = Vec::with_capacity(env.len());
    let mut kernel_outs: Vec<KernelOut> = Vec::new();
    for ((_, slot), field) in env.iter().zip(out_schema.fields()) {
        let t = field.data_type();
        let val = match slot {
            Slot::Input(i) if !filtered => {
                outputs.push(Out::Pass(*i));
                continue;
            }
            Slot::Input(i) if emit::is_string(t) => {
                let v = e.read(*i, t)?;
                outputs.push(Out::Strings(*i, kernel_outs.len()));
                kernel_outs.push(KernelOut::Validity(v));
                continue;
            }
            Slot::Input(i) => e.read(*i, input.field(*i).data_type())?,
            Slot::Value(v) => v.clone(),
        };
        if ctype(t).is_none() || val.v.is_empty() {
            return Err(format!("a {t} output column"));
        }
        let val = e.cast(val, t)?;
        outputs.push(Out::Kernel(kernel_outs.len()));
        kernel_outs.push(KernelOut::Value(val, t.clone()));
    }
    let body = text(&e, &kernel_outs);
    let (body, hash, name) = named(&body, "tsrf");
    Ok(NativeProgram {
        schema: out_schema,
        body,
        hash,
        name,
        reads: e.reads,
        checks: e.checks,
        literals: e.literals,
        filtered,
        outputs,
        kernel_types: kernel_outs
            .into_iter()
            .map(|k| match k {
                KernelOut::Value(_, t) => Some(t),
                KernelOut::Validity(_) => None,
            })
            .collect(),
    })
}

/// The kernel text: the three entries around the row's statements.
fn text(e: &Emitter, outs: &[KernelOut]) -> String {
    let name = tessera_cuda::codegen::names::NAME;
    let ins: String = (0..=3 * e.reads.len())
        .map(|i| format!(", const u8* in{i}"))
        .collect();
    let idx = format!("in{}", 3 * e.reads.len());
    let lit_base = 3 + 3 * e.reads.len();
    let off_base = lit_base + e.literals.len();
    // The word the rows' errors are flagged in, when a row can raise one.
    let err = if e.checks.is_empty() { "" } else { ", u8* err" };
    let head = format!("const u64* C = P + 3; const u64* L = P + {lit_base}; (void)C; (void)L;");
    let row: String = e.lines.iter().map(|l| format!("        {l}\n")).collect();
    let range = "u64 n = P[0]; u64 per = (n + gridDim.x - 1) / gridDim.x; \
                 u64 lo = (u64)blockIdx.x * per; u64 hi = lo + per < n ? lo + per : n;";
    let mut s = String::new();
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_count(const u64* P{ins}, u8* out0{err}) {{\n    {head}\n    {range}\n    u32 c = 0;\n    for (u64 row = lo + threadIdx.x; row < hi; row += blockDim.x) {{\n        u8 keep = 1;\n{row}        c += keep;\n    }}\n    __shared__ u32 s[256];\n    u32 total = tsr_block_sum(s, c);\n    if (threadIdx.x == 0) ((u32*)out0)[blockIdx.x] = total;\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_select(const u64* P{ins}, u8* out0{err}) {{\n    {head}\n    {range}\n    u64 base = P[{off_base} + blockIdx.x];\n    __shared__ u32 s[256];\n    for (u64 t0 = lo; t0 < hi; t0 += blockDim.x) {{\n        u64 row = t0 + threadIdx.x;\n        u8 keep = 0;\n        if (row < hi) {{\n        keep = 1;\n{row}        }}\n        u32 total;\n        u32 incl = tsr_block_scan(s, (u32)keep, &total);\n        if (keep) ((u32*)out0)[base + incl - 1] = (u32)row;\n        base += total;\n    }}\n}}\n"
    ));
    let outs_args: String = (0..outs.iter().map(KernelOut::buffers).sum::<usize>())
        .map(|k| format!(", u8* out{k}"))
        .collect();
    let mut init = String::new();
    let mut write = String::new();
    let mut fin = String::new();
    let mut next = 0;
    for (k, out) in outs.iter().enumerate() {
        init.push_str(&format!("u8 nb{k} = 0; "));
        let (v, t) = match out {
            KernelOut::Validity(v) => {
                write.push_str(&format!(
                    "        nb{k} |= (u8)((({} & 1) & (none ^ 1)) << j);\n",
                    v.o
                ));
                fin.push_str(&format!("        out{next}[q] = nb{k};\n"));
                next += 1;
                continue;
            }
            KernelOut::Value(v, t) => (v, t),
        };
        let (vals, nulls) = (next, next + 1);
        next += 2;
        if *t == DataType::Boolean {
            init.push_str(&format!("u8 bb{k} = 0; "));
            write.push_str(&format!("        bb{k} |= (u8)(({} & 1) << j);\n", v.v));
            fin.push_str(&format!("        out{vals}[q] = bb{k};\n"));
        } else {
            let c = ctype(t).unwrap_or("u8");
            write.push_str(&format!("        (({c}*)out{vals})[r] = {};\n", v.v));
        }
        write.push_str(&format!(
            "        nb{k} |= (u8)((({} & 1) & (none ^ 1)) << j);\n",
            v.o
        ));
        fin.push_str(&format!("        out{nulls}[q] = nb{k};\n"));
    }
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_project(const u64* P{ins}{outs_args}{err}) {{\n    {head}\n    u64 m = P[1];\n    u64 octets = (m + 7) >> 3;\n    for (u64 q = (u64)blockIdx.x * blockDim.x + threadIdx.x; q < octets; q += (u64)gridDim.x * blockDim.x) {{\n        {init}\n        for (u32 j = 0; j < 8; ++j) {{\n        u64 r = (q << 3) + j;\n        if (r >= m) break;\n        u64 row = P[2] ? (u64)((const u32*){idx})[P[2] - 1 + r] : r;\n        u8 none = row == 0xffffffffULL ? 1 : 0;\n        if (none) row = 0;\n        u8 keep = 1; (void)keep;\n{row}{write}        }}\n{fin}    }}\n}}\n"
    ));
    s
}

impl NativeProgram {
    /// The plan launching entry `suffix` (its entry first, the others after, so that a
    /// library built from any of the three holds all of them).
    fn plan(&self, suffix: &str, params: Vec<u64>) -> KernelPlan {
        let ins = 3 * self.reads.len() + 1;
        let err = usize::from(!self.checks.is_empty());
        let project: usize = self
            .kernel_types
            .iter()
            .map(|t| if t.is_some() { 2 } else { 1 })
            .sum();
        plan_of(
            (&self.body, self.hash, &self.name),
            &[
                ("_count", ins, 1 + err),
                ("_select", ins, 1 + err),
                ("_project", ins, project + err),
            ],
            suffix,
            params,
        )
    }

    /// Launches `plan` with `outputs`, plus the error word when a row can raise an error;
    /// raises the error a row flagged.
    fn launch<D: Device>(
        &self,
        device: &D,
        plan: KernelPlan,
        grid: u32,
        ins: &[&D::Buf],
        outputs: Vec<Output>,
    ) -> Result<Vec<D::Buf>> {
        launch_checked(
            device,
            &plan,
            grid,
            ins,
            outputs,
            ("expression", &self.checks),
        )
    }

    /// The three plans with no run-time values (what the compile tests build).
    pub fn plans(&self) -> Vec<KernelPlan> {
        ["_count", "_select", "_project"]
            .iter()
            .map(|s| self.plan(s, Vec::new()))
            .collect()
    }

    /// The output schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The hash of the kernel text (programs of one structure share it).
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// Blocks for a pass over `units` work items on a device of `sms` multiprocessors.
/// The output of a program's run: a partition's parts.
pub struct Evaluated<B> {
    /// The program's output schema.
    pub schema: SchemaRef,
    /// Rows kept.
    pub rows: usize,
    /// The columns, in schema order.
    pub columns: Vec<DeviceArray<B>>,
}

/// A kernel output's buffers: the values (none for a string's validity) and the validity.
type Written<B> = (Option<DeviceBytes<B>>, DeviceBytes<B>);

/// Runs `p` over `b` on `device`.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a filtered
/// partition of more than `u32::MAX` rows (row positions are 32-bit).
pub fn run<D: Device>(
    device: &D,
    p: &NativeProgram,
    b: &DeviceBatch<D::Buf>,
) -> Result<Evaluated<D::Buf>> {
    run_at(device, p, b, None)
}

/// The columns of `b` at the `m` row numbers of `idx` (`u32`; `u32::MAX` gives a row of
/// nulls), in `b`'s schema: a join's sides gathered at its matches.
///
/// # Errors
/// [`Error::Unsupported`]-like [`Error::Internal`] when a column's type cannot be
/// gathered on the device (the join checks this before it runs); [`Error::Device`].
pub fn gather<D: Device>(
    device: &D,
    b: &DeviceBatch<D::Buf>,
    idx: &D::Buf,
    m: usize,
) -> Result<Vec<DeviceArray<D::Buf>>> {
    if b.rows == 0 {
        // No row to read: every gathered row is a row of nulls.
        return b
            .schema
            .fields()
            .iter()
            .map(|f| {
                let held = super::column::storage(f.data_type());
                super::column::upload(device, &arrow_array::new_null_array(&held, m).to_data())
            })
            .collect();
    }
    let p = native(&b.schema, &identity())
        .map_err(|why| Error::Internal(format!("a gather the device cannot run: {why}")))?;
    Ok(run_at(device, &p, b, Some((idx, 0, m)))?.columns)
}

/// [`gather`] at the positions `idx[start .. start + m]`.
///
/// # Errors
/// As [`gather`].
pub fn gather_from<D: Device>(
    device: &D,
    b: &DeviceBatch<D::Buf>,
    idx: &D::Buf,
    start: usize,
    m: usize,
) -> Result<Vec<DeviceArray<D::Buf>>> {
    if b.rows == 0 || start == 0 {
        return gather(device, b, idx, m).and_then(|c| {
            if start == 0 {
                Ok(c)
            } else {
                Err(Error::Internal("a gather past an empty partition".into()))
            }
        });
    }
    let p = native(&b.schema, &identity())
        .map_err(|why| Error::Internal(format!("a gather the device cannot run: {why}")))?;
    Ok(run_at(device, &p, b, Some((idx, start, m)))?.columns)
}

/// Whether the device gathers every column of `schema` at given rows (what a join, a
/// sort, a take and a shuffle's split need), or why not.
///
/// # Errors
/// The reason, naming the first column type the gather does not cover.
pub fn gatherable(schema: &SchemaRef) -> std::result::Result<(), Refusal> {
    native(schema, &identity()).map(|_| ())
}

/// The program that keeps every row and column: what a gather runs at given rows.
pub fn identity() -> FrameProgram {
    FrameProgram {
        steps: vec![FrameStep::Filter(tessera_core::frame::expr::lit(true))],
    }
}

/// [`run`], at the rows `given` instead of those the program's filters keep.
fn run_at<D: Device>(
    device: &D,
    p: &NativeProgram,
    b: &DeviceBatch<D::Buf>,
    given: Option<(&D::Buf, usize, usize)>,
) -> Result<Evaluated<D::Buf>> {
    let n = b.rows;
    let start = given.map_or(0, |g| g.1);
    let mut params = vec![n as u64, 0, 0];
    // Three buffers per column read (`launch::column_args`).
    let ColumnArgs { params: tail, bufs } = column_args(b, p.reads.iter().copied())?;
    params.extend(tail);
    params.extend_from_slice(&p.literals);
    let placeholder = placeholder(device, &bufs)?;
    let (m, idx): (usize, Option<Arc<D::Buf>>) = if let Some((_, _, m)) = given {
        (m, None)
    } else if p.filtered {
        if u32::try_from(n).is_err() {
            return Err(Error::invalid(
                "evaluate",
                format!("a filtered partition of {n} rows; the device filters up to 2^32 - 1 rows per partition (repartition it)"),
            ));
        }
        let grid = grid_for(n as u64, device.sms());
        let mut ins: Vec<&D::Buf> = bufs.iter().map(|b| b.as_ref()).collect();
        ins.push(placeholder.as_ref());
        let counts = p.launch(
            device,
            p.plan("_count", params.clone()),
            grid,
            &ins,
            vec![Output::Written(grid as usize * 4)],
        )?;
        let bytes = device.download(&counts[0], grid as usize * 4)?;
        let mut select = params.clone();
        let mut total = 0u64;
        for c in bytes.chunks_exact(4) {
            select.push(total);
            total += u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        }
        let m = usize::try_from(total).map_err(|_| Error::Internal("row count".into()))?;
        let idx = p.launch(
            device,
            p.plan("_select", select),
            grid,
            &ins,
            vec![Output::Written(m * 4)],
        )?;
        let idx = idx
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal("the select kernel gave no output".into()))?;
        (m, Some(Arc::new(idx)))
    } else {
        (n, None)
    };
    // The rows read: those the filters kept, or those given.
    let idx_ref: Option<&D::Buf> = match (&idx, given) {
        (Some(i), _) => Some(i.as_ref()),
        (None, Some((i, _, _))) => Some(i),
        (None, None) => None,
    };
    // What `_project` writes: per output, the values (fixed width, or bits) then the
    // validity; a string output's validity alone.
    let octets = m.div_ceil(8);
    let mut made: Vec<Option<Written<D::Buf>>> = Vec::new();
    if !p.kernel_types.is_empty() {
        params[1] = m as u64;
        // 1 + the first position read in the row numbers, 0 for none.
        params[2] = if idx_ref.is_some() {
            1 + start as u64
        } else {
            0
        };
        let mut ins: Vec<&D::Buf> = bufs.iter().map(|b| b.as_ref()).collect();
        ins.push(idx_ref.unwrap_or(placeholder.as_ref()));
        let mut sizes: Vec<usize> = Vec::new();
        for t in &p.kernel_types {
            match t {
                Some(t) => {
                    let values = match super::column::fixed_width(t) {
                        Some(w) => m.checked_mul(w).ok_or_else(|| {
                            Error::invalid("evaluate", format!("{m} rows of {t} overflow usize"))
                        })?,
                        None => octets,
                    };
                    sizes.extend([values, octets]);
                }
                None => sizes.push(octets),
            }
        }
        let grid = grid_for(octets as u64, device.sms());
        let written: Vec<Output> = sizes.iter().map(|&n| Output::Written(n)).collect();
        let outs = p.launch(device, p.plan("_project", params), grid, &ins, written)?;
        let mut outs = outs.into_iter().zip(sizes);
        let mut take = || {
            outs.next()
                .map(|(buf, len)| DeviceBytes {
                    buf: Arc::new(buf),
                    len,
                })
                .ok_or_else(|| Error::Internal("the project kernel gave too few outputs".into()))
        };
        for t in &p.kernel_types {
            made.push(Some(match t {
                Some(_) => (Some(take()?), take()?),
                None => (None, take()?),
            }));
        }
    }
    let mut outputs: Vec<DeviceArray<D::Buf>> = Vec::with_capacity(p.outputs.len());
    for o in &p.outputs {
        let (k, strings) = match o {
            Out::Pass(i) => {
                outputs.push(b.columns[*i].clone());
                continue;
            }
            Out::Kernel(k) => (*k, None),
            Out::Strings(i, k) => (*k, Some(*i)),
        };
        let (values, nulls) = made
            .get_mut(k)
            .and_then(Option::take)
            .ok_or_else(|| Error::Internal("a kernel output used twice or never made".into()))?;
        let nulls = Some(DeviceNulls {
            bytes: nulls,
            offset: 0,
        });
        outputs.push(match (strings, values, &p.kernel_types[k]) {
            (Some(i), _, _) => {
                let idx = idx_ref.ok_or_else(|| {
                    Error::Internal("a string gather without selected rows".into())
                })?;
                let mut a = super::strings::gather_from(device, &b.columns[i], idx, start, m)?;
                a.nulls = nulls;
                a
            }
            (None, Some(values), Some(t)) => DeviceArray {
                data_type: t.clone(),
                len: m,
                offset: 0,
                nulls,
                buffers: vec![values],
                children: Vec::new(),
            },
            _ => return Err(Error::Internal("a kernel output of the wrong kind".into())),
        });
    }
    Ok(Evaluated {
        schema: p.schema.clone(),
        rows: m,
        columns: outputs,
    })
}

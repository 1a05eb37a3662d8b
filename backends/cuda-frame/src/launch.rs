//! What every dataframe kernel launch of this backend shares: the grid for a pass over
//! some rows, the `P` words and buffers of the columns a kernel reads, and reading back
//! the `u32` words a kernel wrote.

use std::sync::Arc;

use arrow_schema::DataType;

use tessera_core::DType;
use tessera_core::{Error, Result};
use tessera_cuda::codegen::{Arg, Entry, KernelPlan, Launch};
use tessera_cuda::device::{Device, Output};

use super::batch::DeviceBatch;
use super::program::emit::ctype;
use tessera_cuda::codegen::BLOCK;

/// The plan of a frame kernel text (`body`, named `name` with `hash`) launching entry
/// `first`: every entry of `entries` — `(suffix, inputs, outputs)`, each argument a byte
/// pointer after `P` — listed, the launched one first, so that a library built from any
/// one plan holds them all.
pub(crate) fn plan_of(
    (body, hash, name): (&str, u64, &str),
    entries: &[(&str, usize, usize)],
    first: &str,
    params: Vec<u64>,
) -> KernelPlan {
    let entry = |&(s, ins, outs): &(&str, usize, usize)| {
        let mut args = vec![Arg::Params];
        args.extend((0..ins).map(|i| Arg::Input(i, DType::U8)));
        args.extend(std::iter::repeat_n(Arg::Output(DType::U8), outs));
        Entry {
            name: format!("{name}{s}"),
            args,
        }
    };
    let mut listed: Vec<Entry> = entries.iter().filter(|e| e.0 == first).map(entry).collect();
    listed.extend(entries.iter().filter(|e| e.0 != first).map(entry));
    KernelPlan {
        body: body.to_string(),
        hash,
        entries: listed,
        params,
        launch: Launch::Elementwise { n: 0 },
        out_dtype: DType::U8,
    }
}

/// Blocks for a pass over `units` work items on a device of `sms` multiprocessors.
pub(crate) fn grid_for(units: u64, sms: u32) -> u32 {
    units
        .div_ceil(u64::from(BLOCK))
        .clamp(1, u64::from(sms.max(1)) * 8) as u32
}

/// The column buffers followed by `extra`.
pub(crate) fn joined<'a, B>(cols: &[&'a B], extra: &[&'a B]) -> Vec<&'a B> {
    let mut v = cols.to_vec();
    v.extend_from_slice(extra);
    v
}

/// Little-endian `u32` words of `bytes`.
pub(crate) fn le_words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// The buffers and `P` words of the columns `reads` of `b`: three buffers per column
/// (Arrow's first buffer, its second or the first again, the bitmap or the first again)
/// and three words (offset, bitmap offset, whether there is a bitmap).
///
/// # Errors
/// [`Error::Internal`] for a column without buffers.
pub(crate) fn column_args<B>(
    b: &DeviceBatch<B>,
    reads: impl Iterator<Item = usize>,
) -> Result<ColumnArgs<B>> {
    let (mut params, mut bufs) = (Vec::new(), Vec::new());
    for i in reads {
        let c = &b.columns[i];
        let values = c.buffers.first().ok_or_else(|| {
            Error::Internal(format!("a {} column without a values buffer", c.data_type))
        })?;
        params.push(c.offset as u64);
        bufs.push(values.buf.clone());
        bufs.push(c.buffers.get(1).unwrap_or(values).buf.clone());
        match &c.nulls {
            Some(nulls) => {
                params.extend([nulls.offset as u64, 1]);
                bufs.push(nulls.bytes.buf.clone());
            }
            None => {
                params.extend([0, 0]);
                bufs.push(values.buf.clone());
            }
        }
    }
    Ok(ColumnArgs { params, bufs })
}

/// What [`column_args`] gives: the columns' `P` words and buffers.
pub(crate) struct ColumnArgs<B> {
    pub params: Vec<u64>,
    pub bufs: Vec<Arc<B>>,
}

/// Reading slot `j` at row `r`: its value expression (fixed width) or its bytes and length
/// (strings), and its validity.
pub(crate) fn value_at(j: usize, t: &DataType, r: &str) -> String {
    let c = ctype(t).unwrap_or("u8");
    if *t == DataType::Boolean {
        format!("tsr_bit(in{}, C[{}] + {r})", 3 * j, 3 * j)
    } else {
        format!("((const {c}*)in{})[C[{}] + {r}]", 3 * j, 3 * j)
    }
}

pub(crate) fn valid_at(j: usize, r: &str) -> String {
    format!(
        "(C[{}] ? tsr_bit(in{}, C[{}] + {r}) : 1)",
        3 * j + 2,
        3 * j + 2,
        3 * j + 1
    )
}

pub(crate) fn string_at(j: usize, t: &DataType, r: &str) -> (String, String) {
    let off = super::program::emit::offset_ctype(t);
    let start = format!("(u64)(i64)((const {off}*)in{})[C[{}] + {r}]", 3 * j, 3 * j);
    let end = format!(
        "(u64)(i64)((const {off}*)in{})[C[{}] + {r} + 1]",
        3 * j,
        3 * j
    );
    (
        format!("(in{} + {start})", 3 * j + 1),
        format!("({end} - {start})"),
    )
}

/// The statement folding key slot `j` (of type `t`) at row `r` into the hash `h`: the
/// groupby's table, a join's probe and a shuffle's buckets hash keys this one way, so
/// equal keys meet whichever kernel reads them.
pub(crate) fn hash_step(j: usize, t: &DataType, r: &str) -> String {
    if super::program::emit::is_string(t) {
        let (p, l) = string_at(j, t, r);
        format!(
            " {{ const u8* s = {p}; u64 len = {l}; u64 f = 0xcbf29ce484222325ULL; for (u64 i = 0; i < len; ++i) {{ f ^= s[i]; f *= 0x100000001b3ULL; }} h = tsr_mix(h ^ f ^ len); }}"
        )
    } else {
        format!(" h = tsr_mix(h ^ (u64){});", value_at(j, t, r))
    }
}

/// The test that key slot `a` at row `ra` equals key slot `b` at row `rb` (both of type
/// `t`): strings byte by byte, every other key type as its value.
pub(crate) fn key_equal(t: &DataType, (a, ra): (usize, &str), (b, rb): (usize, &str)) -> String {
    if super::program::emit::is_string(t) {
        let (pa, la) = string_at(a, t, ra);
        let (pb, lb) = string_at(b, t, rb);
        format!("tsr_str_cmp({pa}, {la}, {pb}, {lb}) == 0")
    } else {
        format!("{} == {}", value_at(a, t, ra), value_at(b, t, rb))
    }
}

/// `device.launch_grid` with one more output, the error word (0 when no row raised an
/// error, else the largest code a row flagged), when `checks` (the messages by code - 1)
/// is not empty; the word's error is raised as `Error::invalid(op, message)`.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] with the message of
/// the code a row flagged.
pub(crate) fn launch_checked<D: Device>(
    device: &D,
    plan: &KernelPlan,
    grid: u32,
    ins: &[&D::Buf],
    mut outputs: Vec<Output>,
    (op, checks): (&str, &[String]),
) -> Result<Vec<D::Buf>> {
    if checks.is_empty() {
        return device.launch_grid(plan, grid, ins, &outputs);
    }
    outputs.push(Output::Filled(8, 0));
    let mut outs = device.launch_grid(plan, grid, ins, &outputs)?;
    let err = outs
        .pop()
        .ok_or_else(|| Error::Internal("a kernel gave no error word".into()))?;
    let word = device.download(&err, 8)?;
    let code = u64::from_le_bytes(
        word[..8]
            .try_into()
            .map_err(|_| Error::Internal("the error word is not 8 bytes".into()))?,
    );
    match code {
        0 => Ok(outs),
        c => Err(Error::invalid(
            op,
            checks
                .get(c as usize - 1)
                .cloned()
                .unwrap_or_else(|| format!("a kernel flagged error {c}")),
        )),
    }
}

/// A buffer for an input slot a kernel does not read: the first column buffer, or one
/// byte uploaded when there is none.
///
/// # Errors
/// [`Error::Device`] for a failed upload.
pub(crate) fn placeholder<D: Device>(device: &D, bufs: &[Arc<D::Buf>]) -> Result<Arc<D::Buf>> {
    match bufs.first() {
        Some(b) => Ok(b.clone()),
        None => Ok(Arc::new(device.upload(&[0])?)),
    }
}

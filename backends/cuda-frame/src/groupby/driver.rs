//! Running a planned groupby on a device: the launches of each entry, the states read
//! back, rows grouped for a join, and a shuffle's hash buckets.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use tessera_core::{Error, Result};
use tessera_cuda::codegen::KernelPlan;
use tessera_cuda::device::{Device, Output};

use super::kernels::ENTRIES;
use super::plan::{Acc, NativeGroupby};
use crate::batch::DeviceBatch;
use crate::column::{fixed_width, DeviceArray, DeviceBytes, DeviceNulls};
use crate::launch::{
    column_args, grid_for, joined, launch_checked, le_words, placeholder, plan_of, ColumnArgs,
};
use crate::program::emit::is_string;

impl NativeGroupby {
    /// How many outputs `_states` writes.
    pub(super) fn state_outputs(&self) -> usize {
        let fixed_keys = self.reads[..self.keys]
            .iter()
            .filter(|(_, t)| !is_string(t))
            .count();
        fixed_keys + 2 * self.states.len()
    }

    pub(crate) fn plan(&self, suffix: &str, params: Vec<u64>) -> KernelPlan {
        let cols = 3 * self.reads.len();
        let fsums = self
            .accs
            .iter()
            .filter(|a| matches!(a, Acc::FSum(_)))
            .count();
        let entries: Vec<(&str, usize, usize)> = ENTRIES
            .iter()
            .map(|&(s, ins, outs)| match s {
                "_accumulate" => (s, cols + ins, self.accs.len()),
                "_fsum" => (s, cols + ins, fsums),
                "_states" => (
                    s,
                    cols + ins + self.accs.len(),
                    self.state_outputs() + usize::from(!self.checks.is_empty()),
                ),
                _ => (s, cols + ins, outs),
            })
            .collect();
        plan_of(
            (&self.body, self.hash, &self.name),
            &entries,
            suffix,
            params,
        )
    }

    /// The six plans with no run-time values (what the compile tests build).
    pub fn plans(&self) -> Vec<KernelPlan> {
        ENTRIES.iter().map(|e| self.plan(e.0, Vec::new())).collect()
    }

    /// The hash of the kernel text.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The state schema (keys, then every aggregation's state columns).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

/// The state partition's parts.
pub struct States<B> {
    /// Groups.
    pub rows: usize,
    /// Keys then state columns.
    pub columns: Vec<DeviceArray<B>>,
}

/// The groups of a keyed groupby's rows: how many, each row's table slot (`u32::MAX` for
/// a row with a null key), each slot's group, each group's first row, and the table
/// itself (row + 1 per slot, 0 empty).
pub(crate) struct Grouped<B> {
    pub groups: usize,
    pub slots: Arc<B>,
    pub gid: Arc<B>,
    pub rep: Arc<B>,
    pub table: Arc<B>,
}

/// Runs `_insert` to `_assign` of `g` (keys only) over the `n` rows whose columns are
/// `cols`, with the header `params` (`n`, the table mask, 0, 0, then the columns').
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub(crate) fn group<D: Device>(
    device: &D,
    g: &NativeGroupby,
    params: &[u64],
    cols: &[&D::Buf],
    n: usize,
) -> Result<Grouped<D::Buf>> {
    let table = params[1] as usize + 1;
    let rows_grid = grid_for(n as u64, device.sms());
    let mut made = device.launch_grid(
        &g.plan("_insert", params.to_vec()),
        rows_grid,
        cols,
        &[Output::Filled(table * 4, 0), Output::Written(n * 4)],
    )?;
    let slots = Arc::new(made.pop().ok_or_else(|| Error::Internal("insert".into()))?);
    let table_buf = Arc::new(made.pop().ok_or_else(|| Error::Internal("insert".into()))?);
    let first = device
        .launch_grid(
            &g.plan("_minrow", params.to_vec()),
            rows_grid,
            &joined(cols, &[&slots]),
            &[Output::Filled(table * 4, 0xff)],
        )?
        .pop()
        .map(Arc::new)
        .ok_or_else(|| Error::Internal("minrow".into()))?;
    let counts = device.launch_grid(
        &g.plan("_firstcount", params.to_vec()),
        rows_grid,
        &joined(cols, &[&slots, &first]),
        &[Output::Written(rows_grid as usize * 4)],
    )?;
    let counts = device.download(&counts[0], rows_grid as usize * 4)?;
    let mut assign = params.to_vec();
    let mut total = 0usize;
    for c in le_words(&counts) {
        assign.push(total as u64);
        total += c as usize;
    }
    let mut made = device.launch_grid(
        &g.plan("_assign", assign),
        rows_grid,
        &joined(cols, &[&slots, &first]),
        &[Output::Written(table * 4), Output::Written(total * 4)],
    )?;
    let rep = Arc::new(made.pop().ok_or_else(|| Error::Internal("assign".into()))?);
    let gid = Arc::new(made.pop().ok_or_else(|| Error::Internal("assign".into()))?);
    Ok(Grouped {
        groups: total,
        slots,
        gid,
        rep,
        table: table_buf,
    })
}

/// Each row's bucket among `n` by the hash of `g`'s keys, on the device.
pub(super) fn bucket_buf<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<D::Buf> {
    let rows = b.rows;
    let ColumnArgs { params: tail, bufs } = column_args(b, g.reads.iter().map(|(i, _)| *i))?;
    let mut params = vec![rows as u64, 0, n as u64, 0];
    params.extend(tail);
    let cols: Vec<&D::Buf> = bufs.iter().map(|x| x.as_ref()).collect();
    device
        .launch_grid(
            &g.plan("_bucket", params),
            grid_for(rows as u64, device.sms()),
            &cols,
            &[Output::Written(rows * 4)],
        )?
        .pop()
        .ok_or_else(|| Error::Internal("the bucket kernel gave no output".into()))
}

/// Each row's bucket among `n` (the hash of `g`'s keys), on the host.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub fn buckets<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<Vec<u32>> {
    let buf = bucket_buf(device, g, b, n)?;
    Ok(le_words(&device.download(&buf, b.rows * 4)?).collect())
}

/// `b` split into `n` partitions by the hash of `g`'s keys (equal keys land in the same
/// output on every partition; rows keep their order within each): each row's bucket,
/// the rows sorted stably by bucket, each bucket's rows gathered. Rows and columns of each.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a partition of
/// `u32::MAX` rows or more.
#[allow(clippy::type_complexity)]
pub fn partition<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
    n: usize,
) -> Result<Vec<(usize, Vec<DeviceArray<D::Buf>>)>> {
    let rows = b.rows;
    if rows >= u32::MAX as usize {
        return Err(Error::invalid(
            "hash_partition",
            format!("a partition of {rows} rows; the device partitions up to 2^32 - 2 rows"),
        ));
    }
    let buckets = bucket_buf(device, g, b, n)?;
    let counts = crate::scan::histogram(device, &buckets, rows, n)?;
    let bits = u64::BITS - ((n - 1) as u64).leading_zeros();
    let perm = crate::scan::sort_by_key(
        device,
        Arc::new(buckets),
        Arc::new(crate::scan::iota(device, rows)?),
        rows,
        bits,
    )?
    .values;
    let mut start = 0usize;
    let mut out = Vec::with_capacity(n);
    for c in counts {
        let c = c as usize;
        out.push((c, crate::program::gather_from(device, b, &perm, start, c)?));
        start += c;
    }
    Ok(out)
}

/// The rows of each group, in row order: `sorted[starts[g] .. starts[g] + counts[g]]`
/// (`u32` row numbers, `u64` starts, `u32` counts).
pub(crate) struct ByGroup<B> {
    pub counts: B,
    pub sorted: Arc<B>,
    pub starts: B,
}

/// [`ByGroup`] of the `n` rows grouped into `groups` (`slots` and `gid` as
/// [`group`] gives them; `params` the groupby's header with `P[2]` = 0 for keyed rows):
/// each row's group and each group's size (`_rowgid`, integer atomics), the rows sorted
/// stably by group, the groups' first places.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy.
pub(crate) fn by_group<D: Device>(
    device: &D,
    g: &NativeGroupby,
    params: &[u64],
    cols: &[&D::Buf],
    (slots, gid): (&D::Buf, &D::Buf),
    (n, groups): (usize, usize),
) -> Result<ByGroup<D::Buf>> {
    let mut params = params.to_vec();
    params[3] = groups as u64;
    let mut made = device.launch_grid(
        &g.plan("_rowgid", params),
        grid_for(n as u64, device.sms()),
        &joined(cols, &[slots, gid]),
        &[Output::Filled(groups * 4, 0), Output::Written(n * 4)],
    )?;
    let row_gid = Arc::new(made.pop().ok_or_else(|| Error::Internal("rowgid".into()))?);
    let counts = made.pop().ok_or_else(|| Error::Internal("rowgid".into()))?;
    let bits = u64::BITS - (groups as u64).leading_zeros();
    let rows = Arc::new(crate::scan::iota(device, n)?);
    let sorted = crate::scan::sort_by_key(device, row_gid, rows, n, bits)?.values;
    let (starts, _) = crate::scan::exclusive(device, &counts, groups)?;
    Ok(ByGroup {
        counts,
        sorted,
        starts,
    })
}

/// Runs `g` over `b` on `device`.
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a partition of
/// `u32::MAX` rows or more (rows are numbered in 32 bits).
pub fn run<D: Device>(
    device: &D,
    g: &NativeGroupby,
    b: &DeviceBatch<D::Buf>,
) -> Result<States<D::Buf>> {
    let n = b.rows;
    if n >= u32::MAX as usize {
        return Err(Error::invalid(
            "aggregate",
            format!("a partition of {n} rows; the device groups up to 2^32 - 2 rows per partition (repartition it)"),
        ));
    }
    let global = g.keys == 0;
    let table = (2 * n).max(16).next_power_of_two();
    let mut params = vec![n as u64, table as u64 - 1, u64::from(global), 0];
    let ColumnArgs { params: tail, bufs } = column_args(b, g.reads.iter().map(|(i, _)| *i))?;
    params.extend(tail);
    let placeholder = placeholder(device, &bufs)?;
    let cols: Vec<&D::Buf> = bufs.iter().map(|x| x.as_ref()).collect();
    let rows_grid = grid_for(n as u64, device.sms());
    // Groups: slots, first rows, numbering in row order.
    let (groups, slots, gid, rep) = if global {
        (
            1usize,
            placeholder.clone(),
            placeholder.clone(),
            placeholder.clone(),
        )
    } else {
        let grouped = group(device, g, &params, &cols, n)?;
        (grouped.groups, grouped.slots, grouped.gid, grouped.rep)
    };
    params[3] = groups as u64;
    // Accumulators: counts and sums start at 0, minimums at all ones, maximums at 0.
    let fills: Vec<Output> = g
        .accs
        .iter()
        .map(|a| match a {
            Acc::Min(_) => Output::Filled(groups * 8, 0xff),
            _ => Output::Filled(groups * 8, 0),
        })
        .collect();
    let mut accs = device.launch_grid(
        &g.plan("_accumulate", params.clone()),
        rows_grid,
        &joined(&cols, &[&slots, &gid]),
        &fills,
    )?;
    if g.accs.iter().any(|a| matches!(a, Acc::FSum(_))) {
        // Float sums in row order: the rows sorted stably by group, each group folded by
        // one thread.
        let ByGroup {
            counts,
            sorted,
            starts,
        } = by_group(device, g, &params, &cols, (&slots, &gid), (n, groups))?;
        let sums = device.launch_grid(
            &g.plan("_fsum", params.clone()),
            grid_for(groups as u64, device.sms()),
            &joined(&cols, &[&sorted, &starts, &counts]),
            &vec![
                Output::Written(groups * 8);
                g.accs.iter().filter(|a| matches!(a, Acc::FSum(_))).count()
            ],
        )?;
        let mut sums = sums.into_iter();
        for (a, acc) in g.accs.iter().enumerate() {
            if matches!(acc, Acc::FSum(_)) {
                accs[a] = sums
                    .next()
                    .ok_or_else(|| Error::Internal("the fsum kernel gave too few sums".into()))?;
            }
        }
    }
    let mut extra: Vec<&D::Buf> = vec![&rep];
    extra.extend(accs.iter());
    let octets = groups.div_ceil(8);
    let mut sizes = Vec::new();
    for (_, t) in g.reads[..g.keys].iter().filter(|(_, t)| !is_string(t)) {
        sizes.push(match fixed_width(t) {
            Some(w) => groups * w,
            None => octets,
        });
    }
    for st in &g.states {
        let t = st.field.data_type();
        sizes.push(match fixed_width(t) {
            Some(w) => groups * w,
            None => octets,
        });
        sizes.push(octets);
    }
    let written: Vec<Output> = sizes.iter().map(|&s| Output::Written(s)).collect();
    let outs = launch_checked(
        device,
        &g.plan("_states", params),
        grid_for(octets as u64, device.sms()),
        &joined(&cols, &extra),
        written,
        ("sum", &g.checks),
    )?;
    let mut outs = outs.into_iter().zip(sizes).map(|(buf, len)| DeviceBytes {
        buf: Arc::new(buf),
        len,
    });
    let mut next = || {
        outs.next()
            .ok_or_else(|| Error::Internal("the states kernel gave too few outputs".into()))
    };
    let mut columns = Vec::with_capacity(g.keys + g.states.len());
    for (i, t) in &g.reads[..g.keys] {
        columns.push(if is_string(t) {
            crate::strings::gather(device, &b.columns[*i], &rep, groups)?
        } else {
            DeviceArray {
                data_type: t.clone(),
                len: groups,
                offset: 0,
                nulls: None,
                buffers: vec![next()?],
                children: Vec::new(),
            }
        });
    }
    for st in &g.states {
        let values = next()?;
        let nulls = next()?;
        columns.push(DeviceArray {
            data_type: st.field.data_type().clone(),
            len: groups,
            offset: 0,
            nulls: Some(DeviceNulls {
                bytes: nulls,
                offset: 0,
            }),
            buffers: vec![values],
            children: Vec::new(),
        });
    }
    Ok(States {
        rows: groups,
        columns,
    })
}

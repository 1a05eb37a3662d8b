//! Hash joins on the device (inner, left, semi, anti), with a result that is the same on
//! every run: for each left row in order, its matches in right-row order.
//!
//! 1. **Build** (the right side): its keys grouped as a groupby groups them
//!    (the groupby's `_insert` to `_assign`: a table of first rows, groups numbered by first
//!    appearance), each group's size counted and the right rows sorted stably by group
//!    (as the groupby's float sums sort them; [`super::scan::sort_by_key`]), so that group
//!    `g`'s rows are `sorted[start[g] .. start[g] + count[g]]`, in row order.
//! 2. **Probe** (`_probe`): each left row hashes its keys the same way, walks the table to
//!    the slot of equal keys (a null key matches nothing) and writes its group and how
//!    many output rows it makes (matches; for a left join at least one; for semi and anti
//!    joins one or none).
//! 3. **Emit** (`_emit`): those counts' prefix sums place each left row's output rows;
//!    the left and right row numbers (`u32::MAX` for a left row without a match) are
//!    written there, and the columns are gathered at them ([`super::program::gather`]).
//!
//! Covered: keys of the same integer, boolean, date, time, timestamp, duration or string
//! type on both sides. Right and outer joins, float and decimal keys run on the host.

use arrow_schema::{DataType, SchemaRef};
use tessera_core::frame::{JoinSpec, JoinType};
use tessera_core::{Error, Result};

use super::batch::DeviceBatch;
use super::column::DeviceArray;
use super::groupby::{self, NativeGroupby};
use super::launch::{column_args, grid_for, hash_step, joined, key_equal, plan_of, ColumnArgs};
use tessera_cuda::codegen::{named, KernelPlan};
use tessera_cuda::device::{Device, Output};

/// Why a join does not run natively.
pub type Refusal = String;

/// A join the device runs natively.
#[derive(Debug, Clone)]
pub struct NativeJoin {
    schema: SchemaRef,
    how: JoinType,
    build: NativeGroupby,
    left_keys: Vec<(usize, DataType)>,
    right_keys: Vec<usize>,
    body: String,
    hash: u64,
    name: String,
    /// The output columns: from the left (`true`) or the right, and which.
    outputs: Vec<(bool, usize)>,
}

/// The join as device kernels, or why it must run on the host.
///
/// # Errors
/// The reason, naming the join type or key the generator does not cover.
pub fn native(
    left: &SchemaRef,
    right: &SchemaRef,
    spec: &JoinSpec,
) -> std::result::Result<NativeJoin, Refusal> {
    if !matches!(
        spec.how,
        JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
    ) {
        return Err(format!(
            "a {} join has no device kernel yet",
            spec.how.name()
        ));
    }
    let schema = spec.output_schema(left, right).map_err(|e| e.to_string())?;
    // Both sides are gathered at the matched rows.
    super::program::gatherable(left)?;
    super::program::gatherable(right)?;
    let build = groupby::native(right, &spec.right_on, &[])?;
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    for (l, r) in spec.left_on.iter().zip(&spec.right_on) {
        let i = left.index_of(l).map_err(|_| format!("no column '{l}'"))?;
        let j = right.index_of(r).map_err(|_| format!("no column '{r}'"))?;
        let t = left.field(i).data_type().clone();
        if t != *right.field(j).data_type() {
            return Err(format!("join keys '{l}' and '{r}' of different types"));
        }
        left_keys.push((i, t));
        right_keys.push(j);
    }
    let shared = |name: &str| {
        spec.left_on
            .iter()
            .zip(&spec.right_on)
            .any(|(a, b)| a == b && b == name)
    };
    let mut outputs: Vec<(bool, usize)> = (0..left.fields().len()).map(|i| (true, i)).collect();
    if !matches!(spec.how, JoinType::Semi | JoinType::Anti) {
        outputs.extend(
            right
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| !shared(f.name()))
                .map(|(j, _)| (false, j)),
        );
    }
    let body = text(&left_keys);
    let (body, hash, name) = named(&body, "tsrj");
    Ok(NativeJoin {
        schema,
        how: spec.how,
        build,
        left_keys,
        right_keys,
        body,
        hash,
        name,
        outputs,
    })
}

/// The probe and emit kernels; the left keys are slots `0..k`, the right's `k..2k`. The
/// hash is the groupby's (`_insert`), so both sides land in the same slots.
fn text(keys: &[(usize, DataType)]) -> String {
    let name = tessera_cuda::codegen::names::NAME;
    let k = keys.len();
    let ins: String = (0..6 * k + 3)
        .map(|i| format!(", const u8* in{i}"))
        .collect();
    let none = "0xffffffffu";
    let mut null = Vec::new();
    let mut hash = String::from("u64 h = 0x9e3779b97f4a7c15ULL;");
    let mut eq = Vec::new();
    for (j, (_, t)) in keys.iter().enumerate() {
        null.push(format!(
            "(C[{}] && !tsr_bit(in{}, C[{}] + row))",
            3 * j + 2,
            3 * j + 2,
            3 * j + 1
        ));
        hash.push_str(&hash_step(j, t, "row"));
        eq.push(key_equal(t, (j, "row"), (k + j, "rrow")));
    }
    let null = null.join(" || ");
    let eq = eq.join(" && ");
    let (table, gids, counts) = (
        format!("in{}", 6 * k),
        format!("in{}", 6 * k + 1),
        format!("in{}", 6 * k + 2),
    );
    format!(
        "extern \"C\" __global__ void {name}_probe(const u64* P{ins}, u8* out0, u8* out1) {{
    const u64* C = P + 4; u64 n = P[0]; u64 mask = P[1]; u64 how = P[2];
    const u32* table = (const u32*){table}; const u32* gids = (const u32*){gids}; const u32* counts = (const u32*){counts};
    for (u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x; row < n; row += (u64)gridDim.x * blockDim.x) {{
        u32 g = {none}; u32 c = 0;
        if (!({null})) {{
            {hash}
            u64 at = h & mask;
            for (;;) {{
                u32 cur = table[at];
                if (cur == 0u) break;
                u64 rrow = (u64)(cur - 1);
                if ({eq}) {{ g = gids[at]; c = counts[g]; break; }}
                at = (at + 1) & mask;
            }}
        }}
        ((u32*)out0)[row] = g;
        u32 e = how == 0 ? c : how == 1 ? (c > 0 ? c : 1u) : how == 2 ? (c > 0 ? 1u : 0u) : (c > 0 ? 0u : 1u);
        ((u32*)out1)[row] = e;
    }}
}}
extern \"C\" __global__ void {name}_emit(const u64* P, const u8* in0, const u8* in1, const u8* in2, const u8* in3, const u8* in4, u8* out0, u8* out1) {{
    u64 n = P[0]; u64 how = P[2];
    const u32* mgid = (const u32*)in0; const u64* offs = (const u64*)in1; const u64* starts = (const u64*)in2;
    const u32* counts = (const u32*)in3; const u32* sorted = (const u32*)in4;
    u32* lidx = (u32*)out0; u32* ridx = (u32*)out1;
    for (u64 l = (u64)blockIdx.x * blockDim.x + threadIdx.x; l < n; l += (u64)gridDim.x * blockDim.x) {{
        u64 o = offs[l]; u32 g = mgid[l];
        if (how <= 1) {{
            if (g != {none}) {{
                u64 s = starts[g];
                for (u32 j = 0; j < counts[g]; ++j) {{ lidx[o + j] = (u32)l; ridx[o + j] = sorted[s + j]; }}
            }} else if (how == 1) {{
                lidx[o] = (u32)l; ridx[o] = {none};
            }}
        }} else if ((how == 2) == (g != {none})) {{
            lidx[o] = (u32)l; ridx[o] = {none};
        }}
    }}
}}
"
    )
}

impl NativeJoin {
    fn plan(&self, suffix: &str, params: Vec<u64>) -> KernelPlan {
        let k = self.left_keys.len();
        plan_of(
            (&self.body, self.hash, &self.name),
            &[("_probe", 6 * k + 3, 2), ("_emit", 5, 2)],
            suffix,
            params,
        )
    }

    /// Every kernel the join launches (its own, the build side's groupby's), with no
    /// run-time values: what the compile tests build.
    pub fn plans(&self) -> Vec<KernelPlan> {
        let mut out: Vec<KernelPlan> = ["_probe", "_emit"]
            .iter()
            .map(|s| self.plan(s, Vec::new()))
            .collect();
        out.extend(self.build.plans());
        out
    }

    /// The hash of the join's kernel text.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The output schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

/// The joined partition's parts.
pub struct Joined<B> {
    /// Output rows.
    pub rows: usize,
    /// The columns, in the output schema's order.
    pub columns: Vec<DeviceArray<B>>,
}

fn one<B>(mut v: Vec<B>, what: &str) -> Result<B> {
    v.pop()
        .ok_or_else(|| Error::Internal(format!("the {what} kernel gave no output")))
}

/// Runs `j` over `left` and `right` (both on `device`).
///
/// # Errors
/// [`Error::Device`] for a failed launch or copy; [`Error::Invalid`] for a side of
/// `u32::MAX` rows or more.
pub fn run<D: Device>(
    device: &D,
    j: &NativeJoin,
    left: &DeviceBatch<D::Buf>,
    right: &DeviceBatch<D::Buf>,
) -> Result<Joined<D::Buf>> {
    let (n, nr) = (left.rows, right.rows);
    if n >= u32::MAX as usize || nr >= u32::MAX as usize {
        return Err(Error::invalid(
            "join",
            format!("sides of {n} and {nr} rows; the device joins up to 2^32 - 2 rows a side per partition (repartition them)"),
        ));
    }
    // Build: the right keys grouped, each group's rows counted and sorted by group.
    let table = (2 * nr).max(16).next_power_of_two();
    let ColumnArgs {
        params: rtail,
        bufs: rbufs,
    } = column_args(right, j.right_keys.iter().copied())?;
    let mut rparams = vec![nr as u64, table as u64 - 1, 0, 0];
    rparams.extend(rtail.iter().copied());
    let rcols: Vec<&D::Buf> = rbufs.iter().map(|b| b.as_ref()).collect();
    let grouped = groupby::group(device, &j.build, &rparams, &rcols, nr)?;
    let groups = grouped.groups;
    let groupby::ByGroup {
        counts,
        sorted,
        starts,
    } = groupby::by_group(
        device,
        &j.build,
        &rparams,
        &rcols,
        (&grouped.slots, &grouped.gid),
        (nr, groups),
    )?;
    // Probe: each left row's group and output rows.
    let how = match j.how {
        JoinType::Inner => 0u64,
        JoinType::Left => 1,
        JoinType::Semi => 2,
        _ => 3,
    };
    let ColumnArgs {
        params: ltail,
        bufs: lbufs,
    } = column_args(left, j.left_keys.iter().map(|(i, _)| *i))?;
    let mut params = vec![n as u64, table as u64 - 1, how, 0];
    params.extend(ltail);
    params.extend(rtail);
    let mut ins: Vec<&D::Buf> = lbufs.iter().map(|b| b.as_ref()).collect();
    ins.extend(rbufs.iter().map(|b| b.as_ref()));
    let mut made = device.launch_grid(
        &j.plan("_probe", params.clone()),
        grid_for(n as u64, device.sms()),
        &joined(&ins, &[&grouped.table, &grouped.gid, &counts]),
        &[Output::Written(n * 4), Output::Written(n * 4)],
    )?;
    let emits = one(made.split_off(1), "probe")?;
    let mgid = one(made, "probe")?;
    let (offsets, total) = super::scan::exclusive(device, &emits, n)?;
    let m = usize::try_from(total).map_err(|_| Error::Internal("join rows".into()))?;
    let mut made = device.launch_grid(
        &j.plan("_emit", params),
        grid_for(n as u64, device.sms()),
        &[&mgid, &offsets, &starts, &counts, &sorted],
        &[Output::Written(m * 4), Output::Written(m * 4)],
    )?;
    let ridx = one(made.split_off(1), "emit")?;
    let lidx = one(made, "emit")?;
    // The columns at those rows.
    let lcols = super::program::gather(device, left, &lidx, m)?;
    let rcols = if j.outputs.iter().any(|(l, _)| !l) {
        super::program::gather(device, right, &ridx, m)?
    } else {
        Vec::new()
    };
    let columns = j
        .outputs
        .iter()
        .map(|&(from_left, i)| {
            if from_left {
                lcols[i].clone()
            } else {
                rcols[i].clone()
            }
        })
        .collect();
    Ok(Joined { rows: m, columns })
}

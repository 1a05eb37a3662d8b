//! The walk over a program that writes kernel text and packs its run-time values.
//!
//! One walk does both, so the offsets the text reads (`P[k]`) and the values packed at
//! them cannot drift apart: whenever the text needs a value it calls [`Emitter::param`],
//! which appends the value and returns its offset.

use std::fmt::Write;

use tessera_core::program::{BinaryOp, Linear, Node, NodeId, Program, ReduceOp, UnaryOp};
use tessera_core::random::Distribution;
use tessera_core::{DType, Error, Result, Scalar};

use super::names::{ctype, NAME};
use super::plan::{uses_normal, Arg, Launch, MAX_BLOCK};
use super::reduce;

/// A kernel body: its text, its entry points (suffix, arguments) and how it launches.
pub(super) struct Body {
    pub text: String,
    pub entries: Vec<(&'static str, Vec<Arg>)>,
    pub launch: Launch,
}

pub(super) struct Emitter<'p> {
    program: &'p Program,
    params: Vec<u64>,
}

impl<'p> Emitter<'p> {
    pub fn new(program: &'p Program) -> Self {
        Emitter {
            program,
            params: Vec::new(),
        }
    }

    pub fn into_params(self) -> Vec<u64> {
        self.params
    }

    /// Appends a run-time value; returns its offset in `P`.
    pub(super) fn param(&mut self, v: u64) -> usize {
        self.params.push(v);
        self.params.len() - 1
    }

    fn ndim(&self) -> usize {
        self.program.shape.len()
    }

    /// The kernel's leading arguments: `P`, then every input slot.
    pub(super) fn head_args(&self) -> (String, Vec<Arg>) {
        let mut text = String::from("const u64* __restrict__ P");
        let mut args = vec![Arg::Params];
        for (slot, &d) in self.program.input_dtypes.iter().enumerate() {
            let _ = write!(text, ", const {}* __restrict__ in{slot}", ctype(d));
            args.push(Arg::Input(slot, d));
        }
        (text, args)
    }

    pub(super) fn tail_args(&self, text: &mut String, args: &mut Vec<Arg>) {
        if uses_normal(self.program) {
            text.push_str(", const f64* __restrict__ zwi, const u64* __restrict__ zki, const f64* __restrict__ zfi");
            args.push(Arg::ZigguratTables);
        }
    }

    /// A linear form over the output coordinates `c[]`, its values packed.
    fn linear(&mut self, lin: &Linear) -> String {
        let off = self.param(lin.offset as u64);
        let mut s = format!("((i64)P[{off}]");
        for (a, &k) in lin.coef.iter().enumerate() {
            let at = self.param(k as u64);
            let _ = write!(s, " + (i64)P[{at}] * c[{a}]");
        }
        s.push(')');
        s
    }

    /// Statements computing nodes `0..=last` as `v0, v1, ...` from coordinates `c[]`.
    pub(super) fn nodes(&mut self, last: NodeId, indent: &str) -> Result<String> {
        let mut s = String::new();
        let prog = self.program;
        for i in 0..=last {
            let d = prog.dtypes[i];
            let t = ctype(d);
            let expr = match &prog.nodes[i] {
                Node::Input { slot, map } => {
                    let lin = self.linear(&map.flat_linear(self.ndim()));
                    if prog.input_dtypes.get(*slot) != Some(&d) {
                        return Err(bad(format!("node {i} reads input {slot} as {d}")));
                    }
                    format!("in{slot}[{lin}]")
                }
                Node::Const(c) => self.constant(*c, d),
                Node::Random { spec, map } => {
                    let g = self.linear(&map.flat_linear(self.ndim()));
                    let seed = self.param(spec.seed);
                    let stream = self.param(spec.stream);
                    let at = |e: &mut Self, v: f64| e.param(v.to_bits());
                    match spec.dist {
                        Distribution::Uniform { low, high } => {
                            let (l, h) = (at(self, low), at(self, high));
                            let f = match d {
                                DType::F32 => "tsr_uniform_f32",
                                DType::F64 => "tsr_uniform_f64",
                                _ => return Err(bad(format!("uniform numbers as {d}"))),
                            };
                            format!("{f}(P[{seed}], P[{stream}], (u64){g}, tsr_f64_of(P[{l}]), tsr_f64_of(P[{h}]))")
                        }
                        Distribution::Normal { mean, std } => {
                            let (m, sd) = (at(self, mean), at(self, std));
                            let z = format!("tsr_normal(zig, P[{seed}], P[{stream}], (u64){g})");
                            match d {
                                DType::F64 => {
                                    format!("tsr_f64_of(P[{m}]) + tsr_f64_of(P[{sd}]) * {z}")
                                }
                                DType::F32 => format!(
                                    "(f32)tsr_f64_of(P[{m}]) + (f32)tsr_f64_of(P[{sd}]) * (f32){z}"
                                ),
                                _ => return Err(bad(format!("normal numbers as {d}"))),
                            }
                        }
                        Distribution::RandInt { low, high } => {
                            let (l, h) = (self.param(low as u64), self.param(high as u64));
                            let v = format!("tsr_randint(P[{seed}], P[{stream}], (u64){g}, (i64)P[{l}], (i64)P[{h}])");
                            cast_expr(&v, DType::I64, d)
                        }
                    }
                }
                Node::Index { map, axis } => {
                    let lin = self.linear(&map.axis_linear(*axis, self.ndim()));
                    cast_expr(&lin, DType::I64, d)
                }
                Node::Cast { x, to } => cast_expr(&format!("v{x}"), prog.dtypes[*x], *to),
                Node::Unary { op, x } => unary_expr(*op, &format!("v{x}"), prog.dtypes[*x])?,
                Node::Binary { op, a, b } => {
                    let da = prog.dtypes[*a];
                    if prog.dtypes[*b] != da {
                        return Err(bad(format!(
                            "{} of {da} and {} at node {i}",
                            op.name(),
                            prog.dtypes[*b]
                        )));
                    }
                    binary_expr(*op, &format!("v{a}"), &format!("v{b}"), da)
                }
                Node::Where { cond, a, b } => format!("(v{cond} ? v{a} : v{b})"),
            };
            let _ = writeln!(s, "{indent}const {t} v{i} = ({t})({expr});");
        }
        Ok(s)
    }

    /// A constant of dtype `d`, packed as its 64-bit pattern.
    fn constant(&mut self, c: Scalar, d: DType) -> String {
        let c = c.cast(d);
        match d {
            DType::F64 | DType::F32 => {
                let at = self.param(c.as_f64().to_bits());
                format!("({})tsr_f64_of(P[{at}])", ctype(d))
            }
            DType::U64 => {
                let at = self.param(c.as_u64());
                format!("P[{at}]")
            }
            _ => {
                let at = self.param(c.as_i64() as u64);
                format!("({})(i64)P[{at}]", ctype(d))
            }
        }
    }

    /// Unpacks `shape` into locals `s0, s1, ...`.
    fn shape_locals(&mut self) -> String {
        let mut s = String::new();
        for a in 0..self.ndim() {
            let at = self.param(self.program.shape[a] as u64);
            let _ = writeln!(s, "    const i64 s{a} = (i64)P[{at}];");
        }
        s
    }

    pub(super) fn zig_local(&self) -> &'static str {
        if uses_normal(self.program) {
            "    tsr_zig zig; zig.wi = zwi; zig.ki = zki; zig.fi = zfi;\n"
        } else {
            ""
        }
    }

    /// An unreduced output: one grid-stride loop over its elements.
    pub fn elementwise(&mut self, node: NodeId) -> Result<Body> {
        let nd = self.ndim();
        let n: u64 = self.program.shape.iter().map(|&s| s as u64).product();
        let n_at = self.param(n);
        let shape = self.shape_locals();
        let body = self.nodes(node, "        ")?;
        let od = self.program.dtypes[node];
        let (mut head, mut args) = self.head_args();
        let _ = write!(head, ", {}* __restrict__ out", ctype(od));
        args.push(Arg::Output(od));
        self.tail_args(&mut head, &mut args);
        let mut t = String::new();
        let _ = writeln!(t, "extern \"C\" __global__ void {NAME}({head}) {{");
        let _ = writeln!(t, "    const i64 n = (i64)P[{n_at}];");
        t.push_str(&shape);
        t.push_str(self.zig_local());
        let _ = writeln!(t, "    for (i64 f = (i64)blockIdx.x * blockDim.x + threadIdx.x; f < n; f += (i64)gridDim.x * blockDim.x) {{");
        let _ = writeln!(t, "        i64 c[{}];", nd.max(1));
        t.push_str(&unravel("f", &(0..nd).collect::<Vec<_>>(), "        "));
        t.push_str(&body);
        let _ = writeln!(t, "        out[f] = v{node};");
        t.push_str("    }\n}\n");
        Ok(Body {
            text: t,
            entries: vec![("", args)],
            launch: Launch::Elementwise { n },
        })
    }

    /// A reduced output: pass one (blocks over kept elements x parts, a shared-memory tree)
    /// and pass two (`_fin`: parts folded in order, the result written).
    pub fn reduction(
        &mut self,
        node: NodeId,
        op: ReduceOp,
        axes: &[usize],
        parts: u64,
    ) -> Result<Body> {
        let nd = self.ndim();
        if axes.iter().any(|&a| a >= nd) || axes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad(format!(
                "reduction axes {axes:?} of a {nd}-d program (ascending, below {nd})"
            )));
        }
        let shape = &self.program.shape;
        let kept_axes: Vec<usize> = (0..nd).filter(|a| !axes.contains(a)).collect();
        let kept: u64 = kept_axes.iter().map(|&a| shape[a] as u64).product();
        let reduced: u64 = axes.iter().map(|&a| shape[a] as u64).product();
        let x = self.program.dtypes[node];
        let r = reduce::Reducer::new(op, x);
        let (k_at, p_at, r_at) = (self.param(kept), self.param(parts), self.param(reduced));
        let shape_text = self.shape_locals();
        let body = self.nodes(node, "            ")?;
        let acc = ctype(r.acc);
        let arg = r.is_arg();

        let (mut head, mut args) = self.head_args();
        let _ = write!(
            head,
            ", {acc}* __restrict__ part, i64* __restrict__ part_idx"
        );
        args.push(Arg::Partials(r.acc));
        args.push(Arg::PartialIndex);
        self.tail_args(&mut head, &mut args);

        let mut t = String::new();
        let _ = writeln!(t, "extern \"C\" __global__ void {NAME}({head}) {{");
        let _ = writeln!(
            t,
            "    const i64 kept = (i64)P[{k_at}], parts = (i64)P[{p_at}], nr = (i64)P[{r_at}];"
        );
        t.push_str(&shape_text);
        t.push_str(self.zig_local());
        let _ = writeln!(t, "    __shared__ {acc} sh[{}];", MAX_BLOCK);
        if arg {
            let _ = writeln!(t, "    __shared__ i64 shi[{}];", MAX_BLOCK);
        }
        t.push_str("    const unsigned tid = threadIdx.x;\n");
        t.push_str("    for (i64 b = blockIdx.x; b < kept * parts; b += gridDim.x) {\n");
        t.push_str("        const i64 ko = b / parts, p = b % parts;\n");
        let _ = writeln!(t, "        i64 c[{}];", nd.max(1));
        t.push_str(&unravel("ko", &kept_axes, "        "));
        let _ = writeln!(t, "        {acc} acc = {};", r.identity());
        if arg {
            t.push_str("        i64 ai = -1;\n");
        }
        t.push_str(
            "        for (i64 r = p * blockDim.x + tid; r < nr; r += parts * blockDim.x) {\n",
        );
        t.push_str(&unravel("r", axes, "            "));
        t.push_str(&body);
        let _ = writeln!(t, "            {}", r.fold(&format!("v{node}"), "r"));
        t.push_str("        }\n");
        t.push_str("        sh[tid] = acc;\n");
        if arg {
            t.push_str("        shi[tid] = ai;\n");
        }
        t.push_str("        __syncthreads();\n");
        t.push_str("        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n");
        t.push_str("            if (tid < s) {\n");
        t.push_str(&load_pair(
            "                ",
            acc,
            arg,
            "x",
            "sh",
            "shi",
            "tid",
        ));
        t.push_str(&load_pair(
            "                ",
            acc,
            arg,
            "y",
            "sh",
            "shi",
            "tid + s",
        ));
        let _ = writeln!(t, "                {}", r.combine("x", "xi", "y", "yi"));
        t.push_str("                sh[tid] = x;\n");
        if arg {
            t.push_str("                shi[tid] = xi;\n");
        }
        t.push_str("            }\n            __syncthreads();\n        }\n");
        t.push_str("        if (tid == 0) {\n            part[b] = sh[0];\n");
        if arg {
            t.push_str("            part_idx[b] = shi[0];\n");
        }
        t.push_str("        }\n        __syncthreads();\n    }\n}\n");

        let out = ctype(r.out);
        let _ = writeln!(t, "extern \"C\" __global__ void {NAME}_fin(const u64* __restrict__ P, const {acc}* __restrict__ part, const i64* __restrict__ part_idx, {out}* __restrict__ out) {{");
        let _ = writeln!(
            t,
            "    const i64 kept = (i64)P[{k_at}], parts = (i64)P[{p_at}];"
        );
        t.push_str("    for (i64 ko = (i64)blockIdx.x * blockDim.x + threadIdx.x; ko < kept; ko += (i64)gridDim.x * blockDim.x) {\n");
        t.push_str(&load_pair(
            "        ",
            acc,
            arg,
            "x",
            "part",
            "part_idx",
            "ko * parts",
        ));
        t.push_str("        for (i64 q = 1; q < parts; ++q) {\n");
        t.push_str(&load_pair(
            "            ",
            acc,
            arg,
            "y",
            "part",
            "part_idx",
            "ko * parts + q",
        ));
        let _ = writeln!(t, "            {}", r.combine("x", "xi", "y", "yi"));
        t.push_str("        }\n");
        let _ = writeln!(t, "        out[ko] = {};", r.finish("x", "xi"));
        t.push_str("    }\n}\n");

        let fin_args = vec![
            Arg::Params,
            Arg::Partials(r.acc),
            Arg::PartialIndex,
            Arg::Output(r.out),
        ];
        Ok(Body {
            text: t,
            entries: vec![("", args), ("_fin", fin_args)],
            launch: Launch::Reduce {
                kept,
                reduced,
                parts,
                acc: r.acc,
            },
        })
    }
}

/// Declares accumulator `var` (and its position `<var>i` for arg-reductions) from
/// `vals[at]` (and `idx[at]`).
fn load_pair(
    indent: &str,
    acc: &str,
    arg: bool,
    var: &str,
    vals: &str,
    idx: &str,
    at: &str,
) -> String {
    let mut s = format!("{indent}{acc} {var} = {vals}[{at}];\n");
    if arg {
        s.push_str(&format!("{indent}i64 {var}i = {idx}[{at}];\n"));
    }
    s
}

fn bad(msg: String) -> Error {
    Error::invalid("cuda codegen", msg)
}

/// Statements setting `c[axes[i]]` from the flat C-order index `var` over those axes
/// (sizes `s<axis>`), the last axis varying fastest.
fn unravel(var: &str, axes: &[usize], indent: &str) -> String {
    let mut s = String::new();
    if axes.is_empty() {
        return s;
    }
    let _ = writeln!(s, "{indent}{{ i64 rest = {var};");
    for (i, &a) in axes.iter().enumerate().rev() {
        if i == 0 {
            let _ = writeln!(s, "{indent}  c[{a}] = rest; }}");
        } else {
            let _ = writeln!(s, "{indent}  c[{a}] = rest % s{a}; rest /= s{a};");
        }
    }
    s
}

/// `astype` from `from` to `to` (tessera-core's `Scalar::cast`).
pub(super) fn cast_expr(x: &str, from: DType, to: DType) -> String {
    if from == to {
        return x.to_string();
    }
    let t = ctype(to);
    match to {
        DType::Bool => format!("(b8)({x} != 0)"),
        DType::F32 => match from {
            DType::F64 | DType::U64 => format!("(f32)({x})"),
            _ => format!("(f32)(i64)({x})"),
        },
        DType::F64 => format!("(f64)({x})"),
        DType::U64 => {
            if from.is_float() {
                format!("tsr_sat_u64((f64)({x}))")
            } else {
                format!("(u64)(i64)({x})")
            }
        }
        _ => {
            if from.is_float() {
                format!("({t})tsr_sat_i64((f64)({x}))")
            } else {
                format!("({t})(i64)({x})")
            }
        }
    }
}

/// A unary op on an operand of dtype `d` (already of the op's operand dtype).
fn unary_expr(op: UnaryOp, x: &str, d: DType) -> Result<String> {
    let float = d.is_float();
    let f = d == DType::F32;
    let t = ctype(d);
    let fname = |double: &str, single: &str| {
        if f {
            format!("{single}({x})")
        } else {
            format!("{double}({x})")
        }
    };
    Ok(match op {
        UnaryOp::Neg if float => format!("-{x}"),
        UnaryOp::Neg => format!("({t})(0ULL - (u64){x})"),
        UnaryOp::Abs if float => fname("fabs", "fabsf"),
        UnaryOp::Abs if d.kind() == tessera_core::dtype::DTypeKind::Int => {
            format!("({x} < 0 ? ({t})(0ULL - (u64){x}) : {x})")
        }
        UnaryOp::Abs => x.to_string(),
        op if op.is_transcendental() && !float => {
            return Err(bad(format!(
                "{} of {d}: the builder casts to float first",
                op.name()
            )))
        }
        UnaryOp::Sqrt => fname("sqrt", "sqrtf"),
        UnaryOp::Exp => fname("exp", "expf"),
        UnaryOp::Log => fname("log", "logf"),
        UnaryOp::Sin => fname("sin", "sinf"),
        UnaryOp::Cos => fname("cos", "cosf"),
        UnaryOp::Tanh => fname("tanh", "tanhf"),
        UnaryOp::Tan => fname("tan", "tanf"),
        UnaryOp::Arcsin => fname("asin", "asinf"),
        UnaryOp::Arccos => fname("acos", "acosf"),
        UnaryOp::Arctan => fname("atan", "atanf"),
        UnaryOp::Sinh => fname("sinh", "sinhf"),
        UnaryOp::Cosh => fname("cosh", "coshf"),
        // The inverse hyperbolic functions are the protocol's own formulas (ops.rs), in
        // f64 for either float type, as the CPU backend computes them.
        UnaryOp::Arcsinh => format!("({t})tsr_asinh((f64){x})"),
        UnaryOp::Arccosh => format!("({t})tsr_acosh((f64){x})"),
        UnaryOp::Arctanh => format!("({t})tsr_atanh((f64){x})"),
        UnaryOp::Log1p => fname("log1p", "log1pf"),
        UnaryOp::Expm1 => fname("expm1", "expm1f"),
        UnaryOp::Log2 => fname("log2", "log2f"),
        UnaryOp::Log10 => fname("log10", "log10f"),
        // NaN stays NaN (both comparisons false); either zero gives +0, as NumPy's.
        UnaryOp::Sign if float => {
            format!("({x} > 0 ? ({t})1 : ({x} < 0 ? ({t})-1 : ({x} == 0 ? ({t})0 : {x})))")
        }
        UnaryOp::Sign if d.kind() == tessera_core::dtype::DTypeKind::Int => {
            format!("({t})(({x} > 0) - ({x} < 0))")
        }
        UnaryOp::Sign => format!("({t})({x} != 0)"),
        // The sign bit of the value widened to f64 (widening keeps a NaN's sign).
        UnaryOp::Signbit if float => format!("(b8)(tsr_bits_f64((f64){x}) >> 63)"),
        UnaryOp::Signbit => {
            return Err(bad(format!(
                "signbit of {d}: the builder casts to float first"
            )))
        }
        UnaryOp::Floor if float => fname("floor", "floorf"),
        UnaryOp::Ceil if float => fname("ceil", "ceilf"),
        UnaryOp::Trunc if float => fname("trunc", "truncf"),
        UnaryOp::Round if float => fname("rint", "rintf"),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round => x.to_string(),
        UnaryOp::Not => format!("(b8)({x} == 0)"),
        UnaryOp::IsNan if float => format!("(b8)({x} != {x})"),
        UnaryOp::IsNan => "(b8)0".to_string(),
        UnaryOp::IsFinite if float => format!("tsr_isfinite((f64){x})"),
        UnaryOp::IsFinite => "(b8)1".to_string(),
        UnaryOp::Invert if float => {
            return Err(bad(format!("invert of {d}: the builder refuses floats")))
        }
        UnaryOp::Invert if d == DType::Bool => format!("(b8)({x} == 0)"),
        UnaryOp::Invert => format!("({t})(~{x})"),
    })
}

/// A binary op on two operands of dtype `d`.
fn binary_expr(op: BinaryOp, a: &str, b: &str, d: DType) -> String {
    use tessera_core::dtype::DTypeKind;
    let t = ctype(d);
    if op.is_comparison() {
        let sym = match op {
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            _ => ">=",
        };
        return format!("(b8)({a} {sym} {b})");
    }
    match op {
        BinaryOp::And => return format!("(b8)({a} != 0 && {b} != 0)"),
        BinaryOp::Or => return format!("(b8)({a} != 0 || {b} != 0)"),
        _ => {}
    }
    match d.kind() {
        DTypeKind::Float => {
            let f = d == DType::F32;
            match op {
                BinaryOp::Add => format!("{a} + {b}"),
                BinaryOp::Sub => format!("{a} - {b}"),
                BinaryOp::Mul => format!("{a} * {b}"),
                BinaryOp::Div => format!("{a} / {b}"),
                BinaryOp::Rem => format!("({t})tsr_fmod((f64){a}, (f64){b})"),
                BinaryOp::FloorDiv if f => format!("tsr_floordivf({a}, {b})"),
                BinaryOp::FloorDiv => format!("tsr_floordiv({a}, {b})"),
                BinaryOp::Pow if f => format!("powf({a}, {b})"),
                BinaryOp::Pow => format!("pow({a}, {b})"),
                BinaryOp::Maximum if f => format!("tsr_fmaxf({a}, {b})"),
                BinaryOp::Maximum => format!("tsr_fmax({a}, {b})"),
                BinaryOp::Minimum if f => format!("tsr_fminf({a}, {b})"),
                BinaryOp::Minimum => format!("tsr_fmin({a}, {b})"),
                BinaryOp::Atan2 if f => format!("atan2f({a}, {b})"),
                BinaryOp::Atan2 => format!("atan2({a}, {b})"),
                BinaryOp::Hypot if f => format!("hypotf({a}, {b})"),
                BinaryOp::Hypot => format!("hypot({a}, {b})"),
                BinaryOp::Copysign if f => format!("copysignf({a}, {b})"),
                BinaryOp::Copysign => format!("copysign({a}, {b})"),
                BinaryOp::Logaddexp if f => format!("tsr_logaddexpf({a}, {b})"),
                BinaryOp::Logaddexp => format!("tsr_logaddexp({a}, {b})"),
                BinaryOp::Nextafter if f => format!("nextafterf({a}, {b})"),
                BinaryOp::Nextafter => format!("nextafter({a}, {b})"),
                // The builder refuses floats for the bitwise ops; an integral value acts as
                // its integer, as `apply_f64` defines.
                _ => format!(
                    "({t}){}",
                    binary_expr(op, &format!("(i64){a}"), &format!("(i64){b}"), DType::I64)
                ),
            }
        }
        DTypeKind::UInt => {
            let (ua, ub) = (format!("(u64){a}"), format!("(u64){b}"));
            match op {
                BinaryOp::Add => format!("({t})({ua} + {ub})"),
                BinaryOp::Sub => format!("({t})({ua} - {ub})"),
                BinaryOp::Mul => format!("({t})({ua} * {ub})"),
                BinaryOp::Div | BinaryOp::FloorDiv => format!("({t})tsr_udiv({ua}, {ub})"),
                BinaryOp::Rem => format!("({t})tsr_urem({ua}, {ub})"),
                BinaryOp::Pow => format!("({t})tsr_upow({ua}, {ub})"),
                BinaryOp::Maximum => format!("({a} > {b} ? {a} : {b})"),
                BinaryOp::BitAnd => format!("({t})({ua} & {ub})"),
                BinaryOp::BitOr => format!("({t})({ua} | {ub})"),
                BinaryOp::BitXor => format!("({t})({ua} ^ {ub})"),
                BinaryOp::LeftShift => format!("({t})tsr_ushl({ua}, {ub})"),
                BinaryOp::RightShift => format!("({t})tsr_ushr({ua}, {ub})"),
                BinaryOp::Minimum => format!("({a} < {b} ? {a} : {b})"),
                // The float-only ops are cast to float by the builder; on an integer they
                // are the float op truncated, as `apply_u64` defines.
                _ => format!(
                    "({t}){}",
                    binary_expr(op, &format!("(f64){a}"), &format!("(f64){b}"), DType::F64)
                ),
            }
        }
        // Signed integers and bool (0/1), through i64 as `apply_i64`, wrapped to the type.
        _ => {
            let (ia, ib) = (format!("(i64){a}"), format!("(i64){b}"));
            let wrap = |e: String| {
                if d == DType::Bool {
                    format!("(b8)(({e}) != 0)")
                } else {
                    format!("({t})({e})")
                }
            };
            match op {
                BinaryOp::Add => wrap(format!("(u64){ia} + (u64){ib}")),
                BinaryOp::Sub => wrap(format!("(u64){ia} - (u64){ib}")),
                BinaryOp::Mul => wrap(format!("(u64){ia} * (u64){ib}")),
                BinaryOp::Div | BinaryOp::FloorDiv => wrap(format!("tsr_idiv({ia}, {ib})")),
                BinaryOp::Rem => wrap(format!("tsr_irem({ia}, {ib})")),
                BinaryOp::Pow => wrap(format!("tsr_ipow({ia}, {ib})")),
                BinaryOp::Maximum => format!("({a} > {b} ? {a} : {b})"),
                BinaryOp::BitAnd => wrap(format!("{ia} & {ib}")),
                BinaryOp::BitOr => wrap(format!("{ia} | {ib}")),
                BinaryOp::BitXor => wrap(format!("{ia} ^ {ib}")),
                BinaryOp::LeftShift => wrap(format!("tsr_ishl({ia}, {ib})")),
                BinaryOp::RightShift => wrap(format!("tsr_ishr({ia}, {ib})")),
                BinaryOp::Minimum => format!("({a} < {b} ? {a} : {b})"),
                _ => wrap(format!(
                    "(i64){}",
                    binary_expr(op, &format!("(f64){a}"), &format!("(f64){b}"), DType::F64)
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_puts_the_last_axis_fastest() {
        let s = unravel("f", &[0, 2], "");
        assert!(s.contains("c[2] = rest % s2; rest /= s2;"), "{s}");
        assert!(s.contains("c[0] = rest; }"), "{s}");
        assert!(unravel("f", &[], "").is_empty());
    }

    #[test]
    fn casts_saturate_from_floats_and_wrap_between_integers() {
        assert_eq!(
            cast_expr("v0", DType::F64, DType::I8),
            "(i8)tsr_sat_i64((f64)(v0))"
        );
        assert_eq!(
            cast_expr("v0", DType::F32, DType::U64),
            "tsr_sat_u64((f64)(v0))"
        );
        assert_eq!(cast_expr("v0", DType::U64, DType::I16), "(i16)(i64)(v0)");
        assert_eq!(cast_expr("v0", DType::I32, DType::F32), "(f32)(i64)(v0)");
        assert_eq!(cast_expr("v0", DType::F64, DType::Bool), "(b8)(v0 != 0)");
        assert_eq!(cast_expr("v0", DType::I8, DType::I8), "v0");
    }
}

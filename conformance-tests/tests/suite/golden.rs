//! The oracle's and the CPU backend's transcendental functions against NumPy's.
//!
//! The oracle computes `exp`, `log`, `sin`, `cos`, `tanh`, `sqrt` and `power` with the
//! platform's math library; `golden/golden.txt` (made by `golden/make_golden.py` with
//! NumPy 2) pins both the oracle and the reference kernels to what NumPy returns, over
//! special values, 60 decades and random arguments, in `float64` and `float32`.

use tessera_conformance::compare::{floats_close, Tol};
use tessera_conformance::oracle::values::{binary, unary, V};
use tessera_core::program::{BinaryOp, UnaryOp};
use tessera_core::{ArrayBackend, DType, HostArray};

const GOLDEN: &str = include_str!("../../golden/golden.txt");

struct Line {
    op: String,
    dtype: DType,
    args: Vec<f64>,
    want: f64,
}

fn value(bits: &str, d: DType) -> f64 {
    if d == DType::F32 {
        f64::from(f32::from_bits(u32::from_str_radix(bits, 16).expect("hex")))
    } else {
        f64::from_bits(u64::from_str_radix(bits, 16).expect("hex"))
    }
}

fn lines() -> Vec<Line> {
    GOLDEN
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let dtype = DType::parse(f[1]).expect("a dtype name");
            let vals: Vec<f64> = f[2..].iter().map(|b| value(b, dtype)).collect();
            Line {
                op: f[0].to_string(),
                dtype,
                args: vals[..vals.len() - 1].to_vec(),
                want: *vals.last().expect("a result"),
            }
        })
        .collect()
}

fn tol(op: &str, d: DType) -> Tol {
    if op == "sqrt" {
        Tol::arithmetic(d)
    } else {
        Tol::transcendental(d)
    }
}

fn unary_op(name: &str) -> Option<UnaryOp> {
    UnaryOp::ALL.into_iter().find(|o| o.name() == name)
}

#[test]
fn the_golden_file_covers_every_transcendental_op_in_both_float_dtypes() {
    let lines = lines();
    assert!(lines.len() > 5000, "{}", lines.len());
    for op in ["exp", "log", "sin", "cos", "tanh", "sqrt", "power"] {
        for d in [DType::F32, DType::F64] {
            assert!(
                lines.iter().filter(|l| l.op == op && l.dtype == d).count() > 200,
                "{op} {d}"
            );
        }
    }
}

#[test]
fn the_oracle_agrees_with_numpy() {
    let mut bad = Vec::new();
    for l in lines() {
        let got = match unary_op(&l.op) {
            Some(op) => unary(op, V::F(l.args[0]), l.dtype),
            None => binary(BinaryOp::Pow, V::F(l.args[0]), V::F(l.args[1]), l.dtype),
        };
        let V::F(got) = got else {
            panic!("a float op gave {got:?}")
        };
        if !floats_close(got, l.want, tol(&l.op, l.dtype)) {
            bad.push(format!(
                "{} {} {:?}: oracle {got:e}, NumPy {:e}",
                l.op, l.dtype, l.args, l.want
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_cpu_kernels_agree_with_numpy() {
    let cpu = tessera_cpu::CpuBackend::new();
    let lines = lines();
    let mut bad = Vec::new();
    for op in ["exp", "log", "sin", "cos", "tanh", "sqrt", "power"] {
        for d in [DType::F32, DType::F64] {
            let group: Vec<&Line> = lines
                .iter()
                .filter(|l| l.op == op && l.dtype == d)
                .collect();
            let column = |i: usize| {
                let v: Vec<f64> = group.iter().map(|l| l.args[i]).collect();
                let n = v.len();
                HostArray::F64(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[n]), v).unwrap())
                    .cast(d)
            };
            let x = cpu.from_host(&column(0)).unwrap();
            let r = match unary_op(op) {
                Some(u) => cpu.unary(u, &x).unwrap(),
                None => {
                    let y = cpu.from_host(&column(1)).unwrap();
                    cpu.binary(BinaryOp::Pow, &x, &y).unwrap()
                }
            };
            let got = cpu.to_host(&r).unwrap().to_f64_vec();
            for (l, g) in group.iter().zip(got) {
                if !floats_close(g, l.want, tol(op, d)) {
                    bad.push(format!(
                        "{op} {d} {:?}: cpu {g:e}, NumPy {:e}",
                        l.args, l.want
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

//! Arrays in storage through the facade: `.npy` files against NumPy itself.

use tessera::io::npy::{from_npy, to_npy};
use tessera::{Array, DType};

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-array-io-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn base() -> Array {
    Array::arange(0.0, 60.0, 1.0, DType::F64, 60, None)
        .unwrap()
        .reshape(&[6, 10])
        .unwrap()
        .rechunk([4usize, 3].as_slice())
        .unwrap()
}

/// NumPy reads what tessera wrote (float64, int16, bool, written from irregular blocks)
/// and tessera reads what NumPy wrote (C and Fortran order, big endian, format 2.0,
/// NaN/inf/-0.0), bit for bit. Runs when `python3` (or `$PYTHON`) can import numpy.
#[test]
fn npy_interop_with_numpy() {
    let Some(python) = crate::common::python_with("npy_interop_with_numpy", "numpy") else {
        return;
    };
    let d = dir("numpy");
    let b = base();
    to_npy(&(&b * 0.5).unwrap(), d.join("tessera_f64.npy")).unwrap();
    to_npy(
        &(&b - 30.0).unwrap().astype(DType::I16),
        d.join("tessera_i16.npy"),
    )
    .unwrap();
    use tessera::program::BinaryOp;
    let multiple_of_3 = b
        .binary_scalar(BinaryOp::Rem, 3.0.into(), false)
        .unwrap()
        .binary_scalar(BinaryOp::Eq, 0.0.into(), false)
        .unwrap();
    to_npy(&multiple_of_3, d.join("tessera_bool.npy")).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/npy_interop.py");
    crate::common::run_python(&python, script, &[d.to_str().unwrap()]);

    let read = |name: &str, chunks: &[usize]| from_npy(d.join(name), chunks, None).unwrap();
    let c = read("numpy_c_f32.npy", &[1, 2, 3]);
    assert_eq!((c.dtype(), c.shape()), (DType::F32, vec![2, 3, 4]));
    let want: Vec<f64> = (0..24).map(|v| v as f64 / 4.0).collect();
    assert_eq!(c.compute().unwrap().to_f64_vec(), want);

    let f = read("numpy_f_u16.npy", &[3, 4]);
    assert_eq!((f.dtype(), f.shape()), (DType::U16, vec![4, 6]));
    let want: Vec<f64> = (0..24).map(|v| v as f64).collect();
    assert_eq!(f.compute().unwrap().to_f64_vec(), want);
    // The transpose of a Fortran file sums its columns the same way NumPy does.
    let col_sums = f.astype(DType::I64).sum(Some(&[0]), false).unwrap();
    let want: Vec<f64> = (0..6)
        .map(|j| (0..4).map(|i| (i * 6 + j) as f64).sum())
        .collect();
    assert_eq!(col_sums.compute().unwrap().to_f64_vec(), want);

    let be = read("numpy_be_f8.npy", &[3]);
    let want: Vec<f64> = (0..10).map(|v| v as f64 * -1.5).collect();
    assert_eq!(be.compute().unwrap().to_f64_vec(), want);

    let v2 = read("numpy_v2.npy", &[2]);
    assert_eq!(v2.dtype(), DType::I64);
    assert_eq!(v2.sum(None, false).unwrap().compute_f64().unwrap(), 10.0);

    let special = read("numpy_nan.npy", &[2]).compute().unwrap().to_f64_vec();
    let bits: Vec<u64> = special.iter().map(|v| v.to_bits()).collect();
    let want: Vec<u64> = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1.0]
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(bits, want);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A `.npy` file larger than one block is summed block by block: each block is one read
/// of its own bytes, and the plan names the file.
#[test]
fn a_reduction_over_an_npy_file_streams_its_blocks() {
    let d = dir("stream");
    let path = d.join("big.npy");
    let x = tessera::RandomState::new(7)
        .uniform(0.0, 1.0, &[400, 300], [100usize, 300].as_slice(), None)
        .unwrap();
    to_npy(&x, &path).unwrap();
    let y = from_npy(&path, [50usize, 300].as_slice(), None).unwrap();
    let plan = y.mean(None, false).unwrap().explain().unwrap();
    assert!(plan.contains("reads 8 block(s) of npy"), "{plan}");
    let (a, b) = (
        x.sum(None, false).unwrap().compute_f64().unwrap(),
        y.sum(None, false).unwrap().compute_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-9 * a.abs(), "{a} vs {b}");
    std::fs::remove_dir_all(&d).unwrap();
}

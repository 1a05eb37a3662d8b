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

/// zarr-python 3 reads what tessera wrote (v2 and v3, every codec, sharding) and tessera
/// reads what zarr-python wrote (v2 and v3, blosc/zstd/gzip, sharding, a fill value for
/// chunks never written, Fortran order), value for value. Runs when `python3` (or
/// `$PYTHON`) can import zarr.
#[test]
fn zarr_interop_with_zarr_python() {
    use tessera::io::zarr::{
        from_zarr, to_zarr, BloscCompressor, Compression, ZarrFormat, ZarrStore, ZarrWriteOptions,
    };
    let Some(python) = crate::common::python_with("zarr_interop_with_zarr_python", "zarr") else {
        return;
    };
    let d = dir("zarr-python");
    let ours = ZarrStore::open(d.join("tessera").to_str().unwrap()).unwrap();
    let x = (&Array::arange(0.0, 91.0, 1.0, DType::F64, 91, None)
        .unwrap()
        .reshape(&[13, 7])
        .unwrap()
        .rechunk([5usize, 4].as_slice())
        .unwrap()
        * 0.5)
        .unwrap();
    let codecs = [
        ("none", Compression::None),
        ("zstd", Compression::Zstd { level: 3 }),
        ("gzip", Compression::Gzip { level: 5 }),
        (
            "blosc",
            Compression::Blosc {
                cname: BloscCompressor::Lz4,
                clevel: 5,
                shuffle: true,
            },
        ),
    ];
    for (v, format) in [("v2", ZarrFormat::V2), ("v3", ZarrFormat::V3)] {
        for (name, compression) in codecs {
            let options = ZarrWriteOptions {
                format,
                compression,
                ..ZarrWriteOptions::default()
            };
            to_zarr(&x, &ours, &format!("{v}-{name}"), &options).unwrap();
        }
    }
    let sharded = ZarrWriteOptions {
        chunks: Some(vec![10, 4]),
        shard_inner: Some(vec![5, 2]),
        ..ZarrWriteOptions::default()
    };
    to_zarr(&x, &ours, "v3-sharded", &sharded).unwrap();
    let ints = (&x - 30.0).unwrap().astype(DType::I16);
    to_zarr(&ints, &ours, "v3-int16", &ZarrWriteOptions::default()).unwrap();

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/zarr_interop.py");
    crate::common::run_python(&python, script, &[d.to_str().unwrap()]);

    let theirs = ZarrStore::open(d.join("python").to_str().unwrap()).unwrap();
    let base: Vec<f64> = (0..100 * 73).map(|v| v as f64).collect();
    for (name, dtype) in [
        ("v3-zstd", DType::F64),
        ("v3-blosc", DType::F32),
        ("v3-gzip", DType::I32),
        ("v3-sharded", DType::F64),
        ("v2-blosc", DType::F64),
    ] {
        let a = from_zarr(&theirs, name, None, None).unwrap();
        assert_eq!((a.dtype(), a.shape()), (dtype, vec![100, 73]), "{name}");
        let got = a.compute().unwrap().to_f64_vec();
        for (k, (g, w)) in got.iter().zip(&base).enumerate() {
            let w = if name == "v3-zstd" && k == 3 * 73 + 5 {
                f64::NAN
            } else {
                *w
            };
            assert!(
                g == &w || (g.is_nan() && w.is_nan()),
                "{name}[{k}]: {g} vs {w}"
            );
        }
    }
    let sharded = from_zarr(&theirs, "v3-sharded", None, None).unwrap();
    assert_eq!(sharded.chunks().max_block_shape().as_slice(), &[50, 40]);
    let plain = from_zarr(&theirs, "v3-zstd", None, None).unwrap();
    assert_eq!(plain.chunks().max_block_shape().as_slice(), &[30, 20]);

    let fill = from_zarr(&theirs, "v3-fill", None, None).unwrap();
    let got = fill.compute().unwrap().to_f64_vec();
    for i in 0..10 {
        for j in 0..10 {
            let want = if i < 5 && j < 5 {
                (i * 5 + j) as f64
            } else {
                -1.0
            };
            assert_eq!(got[i * 10 + j], want, "fill [{i}, {j}]");
        }
    }
    let f = from_zarr(&theirs, "v2-uint8-f", None, None).unwrap();
    assert_eq!(f.dtype(), DType::U8);
    let want: Vec<f64> = (0..24).map(|v| v as f64).collect();
    assert_eq!(f.compute().unwrap().to_f64_vec(), want);
    std::fs::remove_dir_all(&d).unwrap();
}

/// tessera reads what h5py and netCDF4-python wrote — chunked and compressed, contiguous
/// big-endian, booleans, a dataset in a group, CF-packed and masked NetCDF-4 variables, a
/// classic NetCDF-3 file — and gets the values those libraries decode them to. Needs the
/// `hdf5` and `netcdf` features (the system's libhdf5 and libnetcdf) and a Python that
/// imports h5py and netCDF4.
#[test]
fn hdf5_and_netcdf_interop_with_h5py_and_netcdf4() {
    const TEST: &str = "hdf5_and_netcdf_interop_with_h5py_and_netcdf4";
    #[cfg(not(all(feature = "hdf5", feature = "netcdf")))]
    tessera_conformance::skip::skip(
        TEST,
        "built without the `hdf5` and `netcdf` features (cargo test --features hdf5,netcdf; needs libhdf5-dev and libnetcdf-dev)",
    );
    #[cfg(all(feature = "hdf5", feature = "netcdf"))]
    {
        /// The elements as `f64` with NaN equal to NaN, for comparing decoded arrays.
        fn same_values(got: &[f64], want: &[f64]) -> bool {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
        }

        use tessera::io::hdf5::from_hdf5;
        use tessera::io::netcdf::from_netcdf;
        let Some(python) = crate::common::python_with(TEST, "h5py, netCDF4") else {
            return;
        };
        let d = dir("hdf5-netcdf");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/scripts/hdf5_netcdf_interop.py"
        );
        crate::common::run_python(&python, script, &[d.to_str().unwrap()]);
        let reference = |name: &str| {
            let a = from_npy(d.join(format!("{name}.npy")), 1 << 20, None).unwrap();
            (a.dtype(), a.shape(), a.compute().unwrap().to_f64_vec())
        };
        let check = |name: &str, got: &Array| {
            let (dtype, shape, want) = reference(name);
            assert_eq!((got.dtype(), got.shape()), (dtype, shape), "{name}");
            assert!(
                same_values(&got.compute().unwrap().to_f64_vec(), &want),
                "{name}: values differ from the Python library's"
            );
        };
        let h5 = d.join("h5py.h5");

        // The stored chunks are the blocks; a slice reads only the blocks it touches.
        let t2m = from_hdf5(&h5, "t2m", None, None).unwrap();
        assert_eq!(t2m.chunks().max_block_shape(), vec![10, 7, 12]);
        check("t2m", &t2m);
        let plan = from_hdf5(&h5, "t2m", Some([15usize, 20, 12].into()), None)
            .unwrap()
            .explain()
            .unwrap();
        assert!(plan.contains("cut the stored chunks"), "{plan}");
        check(
            "counts",
            &from_hdf5(&h5, "counts", Some([7usize, 4].into()), None).unwrap(),
        );
        check("flags", &from_hdf5(&h5, "flags", None, None).unwrap());
        check("deep", &from_hdf5(&h5, "/grp/deep", None, None).unwrap());
        let mean = from_hdf5(&h5, "t2m", None, None)
            .unwrap()
            .mean(Some(&[0]), false)
            .unwrap()
            .compute()
            .unwrap()
            .to_f64_vec();
        assert_eq!(mean.len(), 20 * 12);

        let nc = d.join("cf.nc");
        let tas = from_netcdf(&nc, "tas", None, None).unwrap();
        assert_eq!(
            tas.chunks().max_block_shape(),
            vec![4, 9, 5],
            "stored chunks"
        );
        check("tas", &tas);
        check(
            "pr",
            &from_netcdf(&nc, "pr", Some(5usize.into()), None).unwrap(),
        );
        check("level", &from_netcdf(&nc, "level", None, None).unwrap());
        check(
            "x",
            &from_netcdf(d.join("classic.nc"), "x", Some(3usize.into()), None).unwrap(),
        );
        // A NetCDF-4 variable through HDF5: the stored, packed integers.
        let raw = from_hdf5(&nc, "tas", None, None).unwrap();
        assert_eq!(raw.dtype(), DType::I16);

        // Errors that say what is there and what is not.
        let e = from_hdf5(&h5, "t2", None, None).unwrap_err().to_string();
        assert!(e.contains("no such dataset") && e.contains("t2m"), "{e}");
        let e = from_hdf5(&h5, "names", None, None).unwrap_err().to_string();
        assert!(e.contains("not one tessera holds"), "{e}");
        let e = from_netcdf(&nc, "ta", None, None).unwrap_err().to_string();
        assert!(e.contains("no such variable") && e.contains("tas"), "{e}");
        let e = from_netcdf(h5.with_extension("missing"), "x", None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("h5py.missing"), "{e}");

        // A file rewritten under a planned array is refused, not read as a mix.
        let moving = d.join("moving.h5");
        std::fs::copy(&h5, &moving).unwrap();
        let planned = from_hdf5(&moving, "t2m", None, None).unwrap();
        std::fs::copy(d.join("cf.nc"), &moving).unwrap();
        let e = planned.compute().unwrap_err();
        assert!(matches!(e, tessera::Error::FileChanged { .. }), "{e}");
    }
}

//! Zarr on a real S3-compatible server on 127.0.0.1 (moto in server mode, started and
//! stopped by the test): write and read back, a missing array, wrong credentials, a
//! stopped server, and a write interrupted by stopping the server. The credentials go
//! through the standard environment variables, which is process-wide: hence this binary.
//! Runs with the `object-store` feature when Python can import moto; otherwise it says
//! it was skipped and why.

#[test]
fn zarr_on_a_local_s3_server() {
    let _serial = crate::serial();
    if !cfg!(feature = "object-store") {
        tessera_conformance::skip::skip(
            "zarr_on_a_local_s3_server",
            "tessera was built without the `object-store` feature (.ci/run runs this test with it)",
        );
        return;
    }
    let Some(python) = crate::common::python_with("zarr_on_a_local_s3_server", "moto, boto3")
    else {
        return;
    };
    #[cfg(feature = "object-store")]
    s3::s3_scenarios(&python);
    #[cfg(not(feature = "object-store"))]
    let _ = python;
}

#[cfg(feature = "object-store")]
mod s3 {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::sync::{Arc, Mutex};

    /// The moto server process, driven through its standard input.
    struct Server {
        child: Child,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
        endpoint: String,
        key: String,
        secret: String,
    }

    impl Server {
        fn start(python: &str, bucket: &str) -> Server {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/moto_s3.py");
            let mut child = Command::new(python)
                .args([script, bucket])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let v: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("moto_s3.py printed {line:?}: {e}"));
            Server {
                child,
                stdin,
                stdout,
                endpoint: v["endpoint"].as_str().unwrap().to_string(),
                key: v["key"].as_str().unwrap().to_string(),
                secret: v["secret"].as_str().unwrap().to_string(),
            }
        }

        /// Sends `stop` or `start` and waits for the server to say it is done.
        fn command(&mut self, what: &str) {
            writeln!(self.stdin, "{what}").unwrap();
            self.stdin.flush().unwrap();
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            assert!(
                line.trim().ends_with("ed"),
                "moto_s3.py answered {line:?} to {what}"
            );
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Sets (or, for `None`, removes) an environment variable of this process.
    #[allow(unsafe_code)]
    fn set_env(name: &str, value: Option<&str>) {
        // SAFETY: the environment is libc's, which another thread reading it at the same
        // moment would race with. Every test of this binary holds `serial()`, and no plan
        // runs while a variable changes (the runtime's workers are idle), so this thread
        // is the only one touching the environment.
        unsafe {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
    }

    pub(super) fn s3_scenarios(python: &str) {
        use tessera::io::zarr::{from_zarr, to_zarr, Compression, ZarrStore, ZarrWriteOptions};
        use tessera::{Array, DType, Error};

        let server = Arc::new(Mutex::new(Server::start(python, "bench")));
        let (endpoint, key, secret) = {
            let s = server.lock().unwrap();
            (s.endpoint.clone(), s.key.clone(), s.secret.clone())
        };
        eprintln!("moto credentials: {key} {secret}");
        // Credentials through the standard variables; the endpoint through config.
        set_env("AWS_ACCESS_KEY_ID", Some(&key));
        set_env("AWS_SECRET_ACCESS_KEY", Some(&secret));
        set_env("AWS_SESSION_TOKEN", None);
        let _cfg = tessera::config::set(&[
            ("storage.endpoint", endpoint.as_str()),
            ("storage.allow-http", "true"),
            ("storage.retries", "2"),
            ("storage.timeout", "2s"),
        ])
        .unwrap();

        let x = tessera::RandomState::new(5)
            .normal(0.0, 1.0, &[300, 40], [64usize, 40].as_slice(), None)
            .unwrap();
        let want = x.sum(None, false).unwrap().compute_f64().unwrap();
        let store = ZarrStore::open("s3://bench/data.zarr").unwrap();
        for (path, shard) in [("plain", None), ("sharded", Some(vec![16, 20]))] {
            let options = ZarrWriteOptions {
                compression: Compression::Zstd { level: 3 },
                shard_inner: shard,
                ..ZarrWriteOptions::default()
            };
            let written = to_zarr(&x, &store, path, &options).unwrap();
            assert_eq!(written.blocks, 5, "{path}");
            let back = from_zarr(&store, path, None, None).unwrap();
            let got = back.sum(None, false).unwrap().compute_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{path}: {got} vs {want}"
            );
            let rows = back
                .slice(&[tessera::Index::slice(Some(100), Some(110), 1)])
                .unwrap();
            let plan = rows.explain().unwrap();
            assert!(
                plan.contains("reads 1 block(s) of zarr s3://bench/data.zarr/"),
                "{plan}"
            );
        }

        chunk_replaced_under_a_plan(&store, &x);
        overwrite_whose_third_copy_fails(&store, &x, &server);

        // A missing array names the URL.
        let err = from_zarr(&store, "nothing-here", None, None).unwrap_err();
        assert!(
            matches!(&err, Error::Storage { location, .. } if location == "s3://bench/data.zarr/nothing-here"),
            "{err}"
        );

        // Wrong credentials: access denied, said as such.
        set_env("AWS_SECRET_ACCESS_KEY", Some("not-the-secret"));
        let wrong = ZarrStore::open("s3://bench/data.zarr").unwrap();
        let err = from_zarr(&wrong, "plain", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("access denied"), "{err}");
        set_env("AWS_SECRET_ACCESS_KEY", Some(&secret));

        // A write interrupted by stopping the server: the third block's task stops it first
        // (one worker, so two chunks are written before).
        let stopper = server.clone();
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let interrupted = Array::map_blocks(
            &[&x],
            Arc::new(move |blocks: &[tessera::HostArray]| {
                if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2 {
                    stopper.lock().unwrap().command("stop");
                }
                Ok(blocks[0].clone())
            }),
            DType::F64,
            None,
        )
        .unwrap();
        let _one = tessera::config::set(&[("scheduler", "single-threaded")]).unwrap();
        let t = std::time::Instant::now();
        let err = to_zarr(
            &interrupted,
            &store,
            "interrupted",
            &ZarrWriteOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("cannot be reached"), "{err}");
        assert!(
            t.elapsed().as_secs() < 60,
            "bounded by retries and timeouts"
        );
        // With the server stopped, reads fail with the same clear message.
        let err = from_zarr(&store, "plain", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot be reached"), "{err}");
        // Back up: the chunks written before the stop are there, the metadata is not, so
        // nothing reads as complete.
        server.lock().unwrap().command("start");
        let err = from_zarr(&store, "interrupted", None, None).unwrap_err();
        assert!(matches!(err, Error::Storage { .. }), "{err}");
        assert!(from_zarr(&store, "plain", None, None).is_ok());

        csv_on_s3();
    }

    /// An overwrite whose switch fails at its third key copy (the server refuses every PUT
    /// into the array from the third on): the complete new array is kept at the staging
    /// node the error names, the array does not open as a mix of the two, and once the
    /// server takes writes again a second overwrite completes. Before, the switch erased
    /// the old keys first and its cleanup erased the staged copy: both arrays were lost.
    fn overwrite_whose_third_copy_fails(
        store: &tessera::io::zarr::ZarrStore,
        x: &tessera::Array,
        server: &Mutex<Server>,
    ) {
        use tessera::io::zarr::{from_zarr, to_zarr, ZarrFormat, ZarrWriteOptions};
        let sum = |a: &tessera::Array| a.sum(None, false).unwrap().compute_f64().unwrap();
        let new = x
            .binary_scalar(tessera::program::BinaryOp::Add, 100.0.into(), false)
            .unwrap();
        for format in [ZarrFormat::V2, ZarrFormat::V3] {
            let path = format!("swap-{format:?}");
            let options = ZarrWriteOptions {
                format,
                overwrite: true,
                ..ZarrWriteOptions::default()
            };
            to_zarr(x, store, &path, &options).unwrap();
            server
                .lock()
                .unwrap()
                .command(&format!("fail-puts 3 /{path}/"));
            let err = to_zarr(&new, store, &path, &options)
                .unwrap_err()
                .to_string();
            server.lock().unwrap().command("heal");
            let kept = err
                .split("kept at ")
                .nth(1)
                .and_then(|rest| rest.split(" of the store").next())
                .unwrap_or_else(|| panic!("{path}: the error names no kept copy: {err}"));
            let back = from_zarr(store, kept, None, None).unwrap();
            assert_eq!(sum(&back), sum(&new), "{path}: the kept copy");
            assert!(
                from_zarr(store, &path, None, None).is_err(),
                "{path}: the half-switched array opens"
            );
            to_zarr(&new, store, &path, &options).unwrap();
            let back = from_zarr(store, &path, None, None).unwrap();
            assert_eq!(sum(&back), sum(&new), "{path}: written again");
        }
    }

    /// A chunk object replaced, removed or added after `from_zarr` opened the array stops
    /// every plan that reads it with `FileChanged` naming the object (without the pinned
    /// versions, the replaced chunk — a valid chunk of other values — gave a wrong sum);
    /// a plan that does not read it is unaffected.
    fn chunk_replaced_under_a_plan(store: &tessera::io::zarr::ZarrStore, x: &tessera::Array) {
        use tessera::io::file::StoredFile;
        use tessera::io::zarr::{from_zarr, to_zarr, ZarrWriteOptions};
        use tessera::Error;
        let url = |p: &str| format!("s3://bench/data.zarr/{p}");
        let read = |p: &str| {
            let f = StoredFile::open(&url(p)).unwrap();
            f.read_range(0..f.size()).unwrap()
        };
        let doubled = x
            .binary_scalar(tessera::program::BinaryOp::Mul, 2.0.into(), false)
            .unwrap();
        to_zarr(&doubled, store, "doubled", &ZarrWriteOptions::default()).unwrap();
        for (change, k) in [("replaced", 1), ("removed", 2), ("written", 4)] {
            let array = format!("pinned-{change}");
            let key = &format!("{array}/c/{k}/0");
            to_zarr(x, store, &array, &ZarrWriteOptions::default()).unwrap();
            if change == "written" {
                // The last chunk all fill value: not stored at the opening.
                tessera::io::object::delete(&url(key)).unwrap();
            }
            let back = from_zarr(store, &array, None, None).unwrap();
            let first = back
                .slice(&[tessera::Index::slice(Some(0), Some(64), 1)])
                .unwrap();
            let want_first = first.sum(None, false).unwrap().compute_f64().unwrap();
            match change {
                "removed" => tessera::io::object::delete(&url(key)).unwrap(),
                _ => {
                    tessera::io::object::put(&url(key), read(&format!("doubled/c/{k}/0"))).unwrap()
                }
            }
            let err = back.sum(None, false).unwrap().compute_f64().unwrap_err();
            match &err {
                Error::FileChanged { path, detail } => {
                    assert_eq!(path, &url(key), "{change}");
                    assert!(detail.contains(&format!("was {change}")), "{detail}");
                }
                other => panic!("{change}: {other}"),
            }
            // The first 64 rows do not touch the changed chunk.
            let got = first.sum(None, false).unwrap().compute_f64().unwrap();
            assert_eq!(got, want_first, "{change}");
        }
    }

    /// `read_csv` over a glob of objects: byte ranges fetched separately (several per
    /// object), the same answer as the local files, a missing object named, and an
    /// object replaced after planning detected.
    fn csv_on_s3() {
        use tessera::frame::{col, read_csv, AggFunc, CsvOptions, Value};
        let mut local_total = 0i64;
        let dir = std::env::temp_dir().join(format!("tessera-s3-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for part in 0..3 {
            let mut text = String::from("id,city,fare\n");
            for i in 0..2_000 {
                let id = part * 2_000 + i;
                text.push_str(&format!("{id},c{},{}.5\n", id % 7, id % 13));
                local_total += id;
            }
            std::fs::write(dir.join(format!("trips-{part}.csv")), &text).unwrap();
            tessera::io::object::put(
                &format!("s3://bench/taxi/trips-{part}.csv"),
                text.into_bytes(),
            )
            .unwrap();
        }
        tessera::io::object::put("s3://bench/taxi/readme.txt", b"not a csv".to_vec()).unwrap();
        // Small ranges: several byte-range requests per object.
        let options = CsvOptions::default().partition_bytes(8 << 10);
        let s3 = read_csv("s3://bench/taxi/trips-*.csv", options.clone()).unwrap();
        let local = read_csv(dir.join("trips-*.csv").to_str().unwrap(), options.clone()).unwrap();
        assert!(s3.npartitions() > 3, "{} partitions", s3.npartitions());
        assert_eq!(
            s3.reduce("id", AggFunc::Sum).unwrap(),
            Value::Int(local_total)
        );
        let q = |df: &tessera::frame::DataFrame| {
            df.filter(col("fare").gt(5.0))
                .unwrap()
                .groupby(&["city"])
                .unwrap()
                .agg(&[("fare", AggFunc::Sum)])
                .unwrap()
                .sort_values(&["city"], &[true])
                .unwrap()
                .compute()
                .unwrap()
        };
        assert_eq!(format!("{:?}", q(&s3)), format!("{:?}", q(&local)));

        let err = read_csv("s3://bench/taxi/missing.csv", options.clone())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("s3://bench/taxi/missing.csv") && err.contains("no such object"),
            "{err}"
        );
        let err = read_csv("s3://bench/taxi/none-*.csv", options.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no object matches"), "{err}");

        // Replaced after planning: the ETag no longer matches.
        let planned = read_csv("s3://bench/taxi/trips-0.csv", options).unwrap();
        tessera::io::object::put(
            "s3://bench/taxi/trips-0.csv",
            b"id,city,fare\n1,x,2.0\n".to_vec(),
        )
        .unwrap();
        let err = planned.compute().unwrap_err();
        assert!(matches!(err, tessera::Error::FileChanged { .. }), "{err}");
        parquet_on_s3(&dir, &local);
        writes_to_s3(&local);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `to_csv` and `to_parquet` to object URLs: one object, one object per partition, and
    /// a file large enough for a multipart upload; each reads back equal.
    fn writes_to_s3(frame: &tessera::frame::DataFrame) {
        use tessera::frame::{read_csv, read_parquet, AggFunc, CsvOptions};
        let total = frame.reduce("id", AggFunc::Sum).unwrap();
        let one = frame.to_csv("s3://bench/out/all.csv").unwrap();
        assert_eq!(one.len(), 1);
        let back = read_csv("s3://bench/out/all.csv", CsvOptions::default()).unwrap();
        assert_eq!(back.reduce("id", AggFunc::Sum).unwrap(), total);
        let parts = frame.to_parquet("s3://bench/out/part-*.parquet").unwrap();
        assert_eq!(parts.len(), frame.npartitions());
        let back = read_parquet("s3://bench/out/part-*.parquet").unwrap();
        assert_eq!(back.reduce("id", AggFunc::Sum).unwrap(), total);
        // Over 8 MiB: a multipart upload.
        let x = tessera::Array::arange(0.0, 2e6, 1.0, tessera::DType::F64, 500_000, None).unwrap();
        let big = tessera::frame::DataFrame::from_arrays(vec![("x", &x)]).unwrap();
        big.to_csv("s3://bench/out/big.csv").unwrap();
        let back = read_csv("s3://bench/out/big.csv", CsvOptions::default()).unwrap();
        assert_eq!(
            back.reduce("x", AggFunc::Sum).unwrap(),
            big.reduce("x", AggFunc::Sum).unwrap()
        );
        let err = frame.to_csv("s3://bench/out/").unwrap_err().to_string();
        assert!(err.contains("name the object"), "{err}");
    }

    /// `read_parquet` over objects: the footer and the projected column chunks fetched as
    /// byte ranges; the same answers as the local files.
    fn parquet_on_s3(dir: &std::path::Path, frame: &tessera::frame::DataFrame) {
        use tessera::frame::{col, read_parquet, AggFunc};
        let written = frame
            .to_parquet(dir.join("trips-*.parquet").to_str().unwrap())
            .unwrap();
        assert!(written.len() > 1);
        for (i, path) in written.iter().enumerate() {
            let name = path.file_name().unwrap().to_str().unwrap();
            let bytes = std::fs::read(path).unwrap();
            tessera::io::object::put(&format!("s3://bench/parquet/{name}"), bytes.clone()).unwrap();
            // The same files as a hive-partitioned dataset: shard=i/.
            tessera::io::object::put(&format!("s3://bench/hive/shard={i}/{name}"), bytes).unwrap();
        }
        let s3 = read_parquet("s3://bench/parquet/trips-*.parquet").unwrap();
        let local = read_parquet(dir.join("trips-*.parquet").to_str().unwrap()).unwrap();
        assert_eq!(s3.npartitions(), local.npartitions());
        let q = |df: &tessera::frame::DataFrame| {
            df.filter(col("id").lt(1_000i64))
                .unwrap()
                .reduce("fare", AggFunc::Sum)
                .unwrap()
        };
        assert_eq!(q(&s3), q(&local));
        assert_eq!(
            s3.reduce("id", AggFunc::Count).unwrap(),
            local.reduce("id", AggFunc::Count).unwrap()
        );
        let hive = read_parquet("s3://bench/hive/").unwrap();
        assert_eq!(
            hive.reduce("id", AggFunc::Sum).unwrap(),
            s3.reduce("id", AggFunc::Sum).unwrap()
        );
        let first = hive.filter(col("shard").eq(0i64)).unwrap();
        let first_local = read_parquet(written[0].to_str().unwrap()).unwrap();
        assert_eq!(
            first.reduce("id", AggFunc::Count).unwrap(),
            first_local.reduce("id", AggFunc::Count).unwrap()
        );
    }
}

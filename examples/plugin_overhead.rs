//! What crossing the plugin boundary costs: the same backend (`loops`, from
//! `plugins/example`) called directly (statically linked) and through its plugin library,
//! per call and per byte. Prints one JSON line per measurement.
//!
//! ```text
//! cargo build --release -p tessera-plugin-example
//! cargo run --release --example plugin_overhead -- target/release/libtessera_plugin_example.so
//! ```
//!
//! The per-call figures are the best of several runs of many tiny calls (1-element
//! chunks), so they are the fixed cost of a call: argument encoding, the indirect call,
//! `catch_unwind`, boxing the handle, validating the result, and releasing the chunk.
//! The per-byte figures move one large `float64` chunk to the backend and back; across
//! the boundary that adds one copy each way (Arrow C data is zero-copy to export, but
//! each side keeps its data in memory it allocated).

#[path = "common/timing.rs"]
mod timing;

use std::hint::black_box;

use ndarray::{ArrayD, IxDyn};
use tessera::program::{BinaryOp, UnaryOp};
use tessera::{ArrayBackend, BackendRef, Chunk, HostArray, Scalar};
use tessera_plugin_example::LoopBackend;
use timing::best_pair;

/// One op through both backends: JSON lines for each and for the difference.
fn per_call(op: &str, direct: &dyn ArrayBackend, plugin: &dyn ArrayBackend) -> tessera::Result<()> {
    let xd = direct.full(&[1], Scalar::F64(2.0))?;
    let xp = plugin.full(&[1], Scalar::F64(2.0))?;
    let call = |b: &dyn ArrayBackend, x: &Chunk| match op {
        "full" => drop(black_box(b.full(&[1], Scalar::F64(1.0)))),
        "unary" => drop(black_box(b.unary(UnaryOp::Neg, x))),
        "binary" => drop(black_box(b.binary(BinaryOp::Add, x, x))),
        _ => drop(black_box(b.to_host(x))),
    };
    let (d, p) = best_pair(9, 20_000, &mut || call(direct, &xd), &mut || {
        call(plugin, &xp)
    });
    for (name, s) in [("loops (linked)", d), ("loops (plugin)", p)] {
        println!(
            "{{\"bench\":\"plugin_call\",\"backend\":\"{name}\",\"op\":\"{op}\",\"us_per_call\":{:.3}}}",
            s * 1e6
        );
    }
    println!(
        "{{\"bench\":\"plugin_call_overhead\",\"op\":\"{op}\",\"us_added_per_call\":{:.3}}}",
        (p - d) * 1e6
    );
    Ok(())
}

fn per_byte(name: &str, b: &dyn ArrayBackend, n: usize) -> tessera::Result<(f64, f64)> {
    let host = HostArray::F64(
        ArrayD::from_shape_vec(IxDyn(&[n]), (0..n).map(|i| i as f64).collect())
            .map_err(|e| tessera::Error::Internal(e.to_string()))?,
    );
    let bytes = (n * 8) as f64;
    let chunk = b.from_host(&host)?;
    let (up, down) = best_pair(
        5,
        1,
        &mut || drop(black_box(b.from_host(&host))),
        &mut || drop(black_box(b.to_host(&chunk))),
    );
    if b.to_host(&chunk)? != host {
        return Err(tessera::Error::Internal(format!(
            "{name}: round trip changed the data"
        )));
    }
    println!(
        "{{\"bench\":\"plugin_bytes\",\"backend\":\"{name}\",\"bytes\":{bytes},\"from_host_gb_s\":{:.2},\"to_host_gb_s\":{:.2}}}",
        bytes / up / 1e9,
        bytes / down / 1e9
    );
    Ok((up, down))
}

fn main() -> std::process::ExitCode {
    let run = || -> tessera::Result<()> {
        let path = std::env::args().nth(1).ok_or_else(|| {
            tessera::Error::invalid(
                "plugin_overhead",
                "pass the plugin library path, e.g. target/release/libtessera_plugin_example.so",
            )
        })?;
        let plugin: BackendRef = tessera::plugin::load_plugin(&path)?;
        let direct = LoopBackend::new();
        for op in ["full", "unary", "binary", "to_host"] {
            per_call(op, &direct, plugin.as_ref())?;
        }
        let n = 8 << 20; // 64 MiB of float64
        let (du, dd) = per_byte("loops (linked)", &direct, n)?;
        let (pu, pd) = per_byte("loops (plugin)", plugin.as_ref(), n)?;
        let bytes = (n * 8) as f64;
        println!(
            "{{\"bench\":\"plugin_byte_overhead\",\"bytes\":{bytes},\"from_host_ns_added_per_byte\":{:.4},\"to_host_ns_added_per_byte\":{:.4}}}",
            (pu - du) / bytes * 1e9,
            (pd - dd) / bytes * 1e9
        );
        Ok(())
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

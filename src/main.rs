//! The `tessera` command line: `tessera backends`, `tessera config`.

use std::process::ExitCode;

use tessera::backend::Availability;

fn backends() -> tessera::Result<()> {
    let built = tessera::target::built_for();
    println!(
        "cpu: compiled for {}; multiversioned kernels take the {} path",
        if built.is_empty() {
            "the portable baseline".to_string()
        } else {
            built.join(", ")
        },
        tessera::simd::detected().name()
    );
    for info in tessera::backends()? {
        let status = match &info.availability {
            Availability::Available => "available".to_string(),
            Availability::Unavailable(why) => format!("unavailable: {why}"),
        };
        println!(
            "{:<12} kind={:<9} origin={:?}  {status}",
            info.name,
            info.kind.to_string(),
            info.origin
        );
        if let Some(b) = &info.backend {
            let caps = b.capabilities();
            let gaps: Vec<String> = caps
                .unsupported()
                .map(|(op, d)| format!("{op}[{d}]"))
                .collect();
            println!(
                "    device={}  native fused programs={}  ops={}  unsupported: {}",
                caps.device,
                caps.native_programs,
                tessera::Capabilities::op_names().len(),
                if gaps.is_empty() {
                    "none".to_string()
                } else {
                    gaps.join(", ")
                }
            );
        }
    }
    Ok(())
}

fn config() -> tessera::Result<()> {
    for (key, value, source) in tessera::config::effective()? {
        println!(
            "{:<18} = {:<10} ({source})  [{}]  {}",
            key.name, value, key.env, key.doc
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let cmd = std::env::args().nth(1).unwrap_or_default();
    let result = match cmd.as_str() {
        "backends" => backends(),
        "config" => config(),
        _ => {
            eprintln!("usage: tessera <backends|config>\n  backends  list registered backends, availability and capabilities\n  config    print the effective configuration and where each value came from");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

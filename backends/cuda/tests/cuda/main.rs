//! The CUDA backend on this machine: registered, and unavailable with a reason a user can
//! act on. Device tests report "skipped: no CUDA device" where there is none.

use tessera_core::backend::Availability;
use tessera_core::Error;

use tessera_cuda as _;

#[test]
fn selecting_cuda_gives_the_probe_reason() {
    let e = match tessera_core::registry::array_backend("cuda") {
        Err(e) => e,
        Ok(_) => panic!("this build has no device kernels; the backend must not be available"),
    };
    match &e {
        Error::Unavailable { name, reason } => {
            assert_eq!(name, "cuda");
            assert_eq!(
                Availability::Unavailable(reason.clone()),
                tessera_cuda::availability()
            );
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("no CUDA driver found")
            || text.contains("no CUDA device is visible")
            || text.contains("could not be initialised")
            || text.contains("no device kernels"),
        "{text}"
    );
}

#[test]
fn device_tests_skip_without_a_device() {
    match tessera_cuda::probe() {
        Err(reason) => {
            // Straight to stdout: libtest does not capture it, so the skip is visible.
            use std::io::Write;
            let _ = writeln!(
                std::io::stdout().lock(),
                "skipped: device_tests_skip_without_a_device: no CUDA device: {reason}"
            );
        }
        Ok(d) => {
            assert!(d.count > 0);
            // Device kernels are not in this build: the registry says so.
            let e = tessera_core::registry::array_backend("cuda")
                .err()
                .map(|e| e.to_string());
            assert!(e.is_some_and(|t| t.contains("no device kernels")));
        }
    }
}

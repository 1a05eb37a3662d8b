#!/usr/bin/env bash
# Builds, here, everything the GPU checklist runs there (the GPU machines have no Rust
# toolchain and no network): stripped release binaries of the conformance runner and the
# `gpu_check` example, and the Dask wheels the CuPy + Dask peer needs, into `.gpu/`
# (ignored by git through .git/info/exclude). Then, with the device tool:
#   run  command: bash bench/gpu/run.sh   carry: [".gpu"]
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
rm -rf .gpu && mkdir -p .gpu/bin .gpu/whl
cargo build --release -p tessera-conformance --bin tessera-conformance
cargo build --release --example gpu_check
strip -o .gpu/bin/tessera-conformance target/release/tessera-conformance
strip -o .gpu/bin/gpu_check target/release/examples/gpu_check
# Dask and what it needs beyond the GPU image (which has toolz, cloudpickle, fsspec,
# pyyaml, packaging, numpy and CuPy).
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform any -d .gpu/whl \
    "dask==2025.*" partd locket
du -sh .gpu

#!/usr/bin/env bash
# Builds, here, everything the GPU checklist runs there (the GPU machines have no Rust
# toolchain and no network): stripped, compressed release binaries of the conformance
# runner, the CUDA backend's test binary and the `gpu_check`, `gpu_spill`, `linalg_bench` and `tpch` examples, and the Dask wheels the CuPy +
# Dask peer needs, into `.gpu/` (ignored by git through .git/info/exclude; about 30 MB,
# inside the device tool's 64 MiB carry). Then, with the device tool:
#   run  command: bash bench/gpu/run.sh   carry: [".gpu"]
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
rm -rf .gpu && mkdir -p .gpu/bin .gpu/whl
cargo build --release -p tessera-conformance --bin tessera-conformance
cargo build --release --example gpu_check --example gpu_spill --example linalg_bench --example tpch
strip -o .gpu/bin/tessera-conformance target/release/tessera-conformance
# The CUDA backend's own test binary, for run.sh's `probe` step (the tests that branch on
# whether a device is present).
cuda_tests=$(cargo test --release -p tessera-cuda --test cuda --no-run 2>&1 \
    | sed -n 's/^ *Executable .*(\(.*\))$/\1/p' | tail -n 1)
strip -o .gpu/bin/cuda-tests "$cuda_tests"
for e in gpu_check gpu_spill linalg_bench tpch; do strip -o ".gpu/bin/$e" "target/release/examples/$e"; done
gzip -9 .gpu/bin/*
# The instruction set the binaries were compiled for (the default is the portable x86-64
# baseline; a RUSTFLAGS target-cpu build refuses to run on a CPU without its features).
{
    echo "host: $(rustc -vV | sed -n 's/^host: //p'), RUSTFLAGS='${RUSTFLAGS:-}'"
    # shellcheck disable=SC2086
    echo "target features: $(rustc --print cfg ${RUSTFLAGS:-} | sed -n 's/^target_feature="\(.*\)"$/\1/p' | tr '\n' ' ')"
} >.gpu/TARGET
cat .gpu/TARGET
# Dask and what it needs beyond the GPU image (which has toolz, cloudpickle, fsspec,
# pyyaml, packaging, numpy and CuPy).
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform any -d .gpu/whl \
    "dask==2025.*" partd locket
# TPC-H there (run.sh's `tpch` step): the data generator, and the peers named in
# TPCH_PEERS (default "duckdb": the answers are checked against it; "duckdb,polars" may
# not fit the carry beside the rest: run one peer per call, building again between).
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform any -d .gpu/whl tpchgen-cli
for peer in ${TPCH_PEERS:-duckdb}; do
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_28_x86_64 --platform any -d .gpu/whl "${peer//,/ }"
done
du -sh .gpu

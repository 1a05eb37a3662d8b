#!/usr/bin/env bash
# Writes the eight TPC-H tables as Parquet with tpchgen-cli (the Rust generator of the
# TPC-H data, byte for byte dbgen's), installing it first (its PyPI wheel) into a cache
# folder outside the repository when it is not on the PATH.
#   bench/tpch/generate.sh SF DIR        e.g. bench/tpch/generate.sh 1 /tmp/tpch-sf1
# Idempotent: an existing DIR/lineitem.parquet is kept.
set -euo pipefail
sf="${1:?usage: generate.sh SF DIR}"
dir="${2:?usage: generate.sh SF DIR}"
if [ -e "$dir/lineitem.parquet" ] || [ -d "$dir/lineitem" ]; then
    echo "tables already in $dir"
    exit 0
fi
cache="${TESSERA_TPCH_CACHE:-$HOME/.cache/tessera-tpch}"
# TPCHGEN_CLI, else one on the PATH, else its PyPI wheel in a venv of the cache (seconds),
# else `cargo install` (minutes on two cores).
gen="${TPCHGEN_CLI:-$(command -v tpchgen-cli || true)}"
if [ -z "$gen" ]; then
    gen="$cache/venv/bin/tpchgen-cli"
    if [ ! -x "$gen" ] && command -v python3 >/dev/null 2>&1; then
        for attempt in 1 2 3; do
            { [ -x "$cache/venv/bin/pip" ] || python3 -m venv "$cache/venv"; } \
                && "$cache/venv/bin/pip" install --quiet --disable-pip-version-check "tpchgen-cli>=4,<5" && break
            echo "pip install tpchgen-cli failed (attempt $attempt)" >&2
            sleep 10
        done
    fi
    if [ ! -x "$gen" ]; then
        gen="$cache/bin/tpchgen-cli"
        for attempt in 1 2 3; do
            [ -x "$gen" ] && break
            cargo install tpchgen-cli --locked --root "$cache" && break
            echo "cargo install tpchgen-cli failed (attempt $attempt)" >&2
            sleep 10
        done
    fi
fi
mkdir -p "$dir"
"$gen" parquet --scale-factor "$sf" --output-dir "$dir"
ls -la "$dir"

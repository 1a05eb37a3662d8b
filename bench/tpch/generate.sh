#!/usr/bin/env bash
# Writes the eight TPC-H tables as Parquet with tpchgen-cli (the Rust generator of the
# TPC-H data, byte for byte dbgen's), installing it first into a cache folder outside the
# repository when it is not on the PATH.
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
gen="$(command -v tpchgen-cli || true)"
if [ -z "$gen" ]; then
    gen="$cache/bin/tpchgen-cli"
    if [ ! -x "$gen" ]; then
        for attempt in 1 2 3; do
            cargo install tpchgen-cli --locked --root "$cache" && break
            echo "cargo install tpchgen-cli failed (attempt $attempt)" >&2
            sleep 10
        done
    fi
fi
mkdir -p "$dir"
"$gen" parquet --scale-factor "$sf" --output-dir "$dir"
ls -la "$dir"

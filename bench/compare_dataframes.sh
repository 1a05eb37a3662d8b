#!/usr/bin/env bash
# Side by side: the dataframe workloads through tessera (release build) and through Dask
# (threaded), pandas and Polars (eager and lazy) in the same run, then the ratios.
# The peers live in a virtual environment OUTSIDE the repository, created from PyPI on
# first use:
#
#   bench/compare_dataframes.sh [QUERIES]      (default: taxi_groupby,taxi_tip_hour,join,multi_agg)
#   DASK_VENV=/path/to/venv bench/compare_dataframes.sh
#
# The taxi CSV (5M rows, ~200 MB) is generated once into the temporary directory.
set -euo pipefail
QUERIES=${1:-taxi_groupby,taxi_tip_hour,join,multi_agg}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CSV=${TMPDIR:-/tmp}/tessera-taxi-5000000.csv

if ! "$VENV/bin/python" -c "import dask.dataframe, pandas, polars, pyarrow" 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "dask[dataframe]" pandas polars pyarrow numpy
fi

(cd "$ROOT" && cargo build --release --quiet --example frame_bench)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for q in ${QUERIES//,/ }; do
  "$ROOT/target/release/examples/frame_bench" --csv "$CSV" --queries "$q" | tee -a "$OUT"
  "$VENV/bin/python" "$HERE/dataframe_peers.py" --csv "$CSV" --queries "$q" | tee -a "$OUT"
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["query"], {})[r["engine"]] = r["seconds"]
engines = ["tessera", "dask", "pandas", "polars", "polars_lazy"]
print()
print(f"{'query':15}" + "".join(f"{e + ' s':>15}" for e in engines) + f"{'vs dask':>9}{'vs polars_lazy':>16}")
for q, e in by.items():
    t = e.get("tessera")
    cells = "".join(f"{e[x]:>15.3f}" if x in e else f"{'-':>15}" for x in engines)
    vd = f"{e['dask'] / t:.1f}x" if t and "dask" in e else "-"
    vp = f"{e['polars_lazy'] / t:.2f}x" if t and "polars_lazy" in e else "-"
    print(f"{q:15}{cells}{vd:>9}{vp:>16}")
PY

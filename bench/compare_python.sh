#!/usr/bin/env bash
# The seed workloads from Python, side by side in one interpreter: tessera's Python
# package against Dask, pandas and Polars (bench/python_workloads.py), next to the same
# workloads from Rust (examples bench and frame_bench) so the two sets of ratios can be
# compared, then a table.
#
#   bench/compare_python.sh [WORKLOADS]      (default: headline,taxi_groupby,join,overhead,export)
#   DASK_VENV=/path/to/venv bench/compare_python.sh
#
# The venv lives OUTSIDE the repository; this installs the peers and `pip install ./python`
# (a release build of the extension) into it. The taxi CSV (5M rows, ~200 MB) is written
# once into the temporary directory by the Rust frame_bench.
set -euo pipefail
WORKLOADS=${1:-headline,taxi_groupby,join,overhead,export}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CSV=${TMPDIR:-/tmp}/tessera-taxi-5000000.csv

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
if ! "$VENV/bin/python" -c "import dask.array, dask.dataframe, pandas, polars, pyarrow" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "dask[array,dataframe]" pandas polars pyarrow numpy
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check "$ROOT/python"

(cd "$ROOT" && cargo build --release --quiet --example bench --example frame_bench)
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for w in ${WORKLOADS//,/ }; do
  case $w in
    headline) "$ROOT/target/release/examples/bench" --n 20000 --chunk 2000 --workloads headline_sum --repeat 3 \
                | sed 's/"workload":"headline_sum"/"workload":"headline"/; s/"engine":"tessera"/"engine":"rust"/' | tee -a "$OUT" ;;
    taxi_groupby) "$ROOT/target/release/examples/frame_bench" --csv "$CSV" --queries taxi_groupby \
                | sed 's/"query"/"workload"/; s/"engine":"tessera"/"engine":"rust"/' | tee -a "$OUT" ;;
    join) "$ROOT/target/release/examples/frame_bench" --csv "$CSV" --queries join \
                | sed 's/"query"/"workload"/; s/"engine":"tessera"/"engine":"rust"/' | tee -a "$OUT" ;;
  esac
  "$VENV/bin/python" "$HERE/python_workloads.py" --csv "$CSV" --workloads "$w" | tee -a "$OUT"
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["workload"], {})[r["engine"]] = r["seconds"]
engines = ["tessera", "rust", "dask", "pandas", "polars_lazy"]
print()
print(f"{'workload':14}" + "".join(f"{e + ' s':>15}" for e in engines) + f"{'py vs dask':>12}{'rust vs dask':>14}{'py vs polars':>14}")
for w, e in by.items():
    t = e.get("tessera")
    cells = "".join(f"{e[x]:>15.4f}" if x in e else f"{'-':>15}" for x in engines)
    vd = f"{e['dask'] / t:.1f}x" if t and "dask" in e else "-"
    rd = f"{e['dask'] / e['rust']:.1f}x" if "rust" in e and "dask" in e else "-"
    vp = f"{e['polars_lazy'] / t:.2f}x" if t and "polars_lazy" in e else "-"
    print(f"{w:14}{cells}{vd:>12}{rd:>14}{vp:>14}")
PY

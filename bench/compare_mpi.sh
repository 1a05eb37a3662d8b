#!/usr/bin/env bash
# Side by side: examples/mpi_bench under mpirun and Dask distributed (LocalCluster, one
# thread per worker process) at the same number of ranks/workers, in one run, then the
# ratios. Dask lives in a virtual environment OUTSIDE the repository, created on first use.
#
#   bench/compare_mpi.sh [N] [CHUNK] [RANKS] [REPEAT]   (defaults: 8000 1000 "1 2" 3)
#   DASK_VENV=/path/to/venv bench/compare_mpi.sh
#
# Needs Open MPI (`mpirun`, `mpicc`) and libclang for the `mpi` feature. As root, Open MPI
# needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment;
# this script does not set them for you.
set -euo pipefail
N=${1:-8000}
CHUNK=${2:-1000}
RANKS=${3:-1 2}
REPEAT=${4:-3}
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import distributed, pandas" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "dask[array,dataframe,distributed]" numpy pandas
fi

(cd "$ROOT" && cargo build --release --quiet --features mpi --example mpi_bench)
OUT=$(mktemp)
CSV=$(mktemp --suffix=.csv)
trap 'rm -f "$OUT" "$CSV"' EXIT
"$VENV/bin/python" "$HERE/mpi/groupby_csv.py" "$CSV" $((N * 100))
for p in $RANKS; do
  TESSERA_SCHEDULER=mpi TESSERA_NUM_THREADS=1 \
    mpirun --oversubscribe -n "$p" "$ROOT/target/release/examples/mpi_bench" "$N" "$CHUNK" "$REPEAT" "$CSV" | tee -a "$OUT"
  "$VENV/bin/python" "$HERE/mpi/dask_distributed.py" --workers "$p" --n "$N" --chunk "$CHUNK" --repeat "$REPEAT" --csv "$CSV" | tee -a "$OUT"
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault((r["workload"], r["ranks"]), {})[r["engine"]] = r
print("\nworkload          ranks  tessera-mpi s  dask-distributed s  dask/tessera  bytes sent per rank (tessera)")
for (w, p), e in sorted(by.items()):
    t, d = e.get("tessera-mpi"), e.get("dask-distributed")
    if t and d:
        print(f"{w:<17} {p:>5}  {t['seconds']:>13.3f}  {d['seconds']:>18.3f}  {d['seconds'] / t['seconds']:>12.1f}  {t['sent_bytes_per_rank']}")
PY

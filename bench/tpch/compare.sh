#!/usr/bin/env bash
# TPC-H side by side in one run: tessera (examples/tpch.rs, release), Polars lazy, DuckDB
# and Dask (threaded) on the same Parquet files, best of 3 per query each (Dask: one run,
# its queries take seconds), then a table with the ratios and geometric means. Every
# engine's answers are checked against DuckDB.
#   bench/tpch/compare.sh [SF]            (default 1; data in $TMPDIR/tpch-sfSF)
#   DASK_VENV=/path/to/venv bench/tpch/compare.sh 1
#   REPEAT=1 DASK=0 bench/tpch/compare.sh 10   (scale 10: one run each, without Dask,
#                                               whose queries would take over an hour)
# The peers live in a virtual environment outside the repository, created on first use.
set -euo pipefail
SF=${1:-1}
REPEAT=${REPEAT:-3}
DASK=${DASK:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
DATA=${TMPDIR:-/tmp}/tpch-sf$SF
if ! "$VENV/bin/python" -c "import polars, duckdb, dask.dataframe, pyarrow" 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet polars duckdb "dask[dataframe]" pyarrow
fi
bash "$HERE/generate.sh" "$SF" "$DATA" >/dev/null
(cd "$ROOT" && cargo build --release --quiet --example tpch)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$ROOT/target/release/examples/tpch" --data "$DATA" --sf "$SF" --repeat "$REPEAT" --out "$OUT/tessera" | tee "$OUT/times.jsonl"
"$VENV/bin/python" "$HERE/polars_queries.py" "$DATA" --sf "$SF" --repeat "$REPEAT" --out "$OUT/polars" | tee -a "$OUT/times.jsonl"
"$VENV/bin/python" "$HERE/check_duckdb.py" "$DATA" "$OUT/polars" --sf "$SF" >/dev/null \
  || echo "warning: Polars' answers differ from DuckDB's" >&2
if [ "$DASK" != 0 ]; then
  "$VENV/bin/python" "$HERE/dask_queries.py" "$DATA" --sf "$SF" --repeat 1 --out "$OUT/dask" | tee -a "$OUT/times.jsonl"
  "$VENV/bin/python" "$HERE/check_duckdb.py" "$DATA" "$OUT/dask" --sf "$SF" >/dev/null \
    || echo "warning: Dask's answers differ from DuckDB's" >&2
fi
"$VENV/bin/python" "$HERE/check_duckdb.py" "$DATA" "$OUT/tessera" --sf "$SF" --time | tee "$OUT/check.txt" \
  | grep '^{' >>"$OUT/times.jsonl"
grep -v '^{' "$OUT/check.txt" | grep -v ': ok' || echo "tessera: all answers agree with DuckDB"
python3 - "$OUT/times.jsonl" <<'PY'
import json, math, sys
t = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        t.setdefault(r["engine"], {})[r["query"]] = r["seconds"]
engines = ["tessera", "polars-lazy", "duckdb", "dask"]
print("| query | " + " | ".join(engines) + " | tessera / fastest peer |")
print("| --- | " + " | ".join("---" for _ in engines) + " | --- |")
for q in range(1, 23):
    row = [t.get(e, {}).get(q) for e in engines]
    peers = [v for v in row[1:] if v]
    ratio = f"{row[0] / min(peers):.2f}x" if row[0] and peers else "-"
    print(f"| Q{q} | " + " | ".join(f"{v:.3f}" if v else "-" for v in row) + f" | {ratio} |")
def gm(e):
    v = [t[e][q] for q in range(1, 23) if q in t.get(e, {})]
    return math.exp(sum(map(math.log, v)) / len(v)) if len(v) == 22 else None
g = [gm(e) for e in engines]
print("| geometric mean | " + " | ".join(f"{v:.3f}" if v else "-" for v in g) + " | |")
PY

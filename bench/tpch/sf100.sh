#!/usr/bin/env bash
# TPC-H where the data outgrows memory, under a memory limit: the 22 queries of
# examples/tpch.rs with `memory-limit` = LIMIT (what a plan keeps past it spills to
# `spill-dir`), each query in a process of its own so that its peak RSS is its own, then
# DuckDB with the same `memory_limit`, also a process per query; tessera's answers are
# checked against DuckDB's, and a table of both prints at the end.
#   bench/tpch/sf100.sh [SF] [LIMIT]          (defaults 100 and 16GiB; data in
#                                               $TMPDIR/tpch-sfSF, about 38 GB at SF 100)
#   QUERIES=1,6 ENGINES=tessera bench/tpch/sf100.sh 100 16GiB
#   OUT=DIR keeps the answers and the JSON lines (default: a temporary folder, removed);
#   TIMEOUT (default 3600) bounds each query's seconds.
#   BASELINE=/path/to/an/older/target/release/examples/tpch also runs that build after
#   each query of this one, under the same limit (engine "tessera-baseline"; its answers
#   checked against DuckDB's too): old and new alternated in one run.
#   COLD=1 empties the page cache (sync; /proc/sys/vm/drop_caches, as root) before every
#   engine's run of a query, so that each reads its tables from disk: where the data
#   outgrows memory, whichever runs second otherwise finds what the first one read.
# The peers come from the venv of bench/tpch/compare.sh (created there on first use).
set -euo pipefail
SF=${1:-100}
LIMIT=${2:-16GiB}
QUERIES=${QUERIES:-$(seq -s, 1 22)}
ENGINES=${ENGINES:-tessera,duckdb}
TIMEOUT=${TIMEOUT:-3600}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
VENV=${DASK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera-bench-venv}
PY=${PYTHON:-$VENV/bin/python}
DATA=${TMPDIR:-/tmp}/tpch-sf$SF
if [ -z "${OUT:-}" ]; then
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT/tessera" "$OUT/baseline" "$OUT/spill"
bash "$HERE/generate.sh" "$SF" "$DATA" >/dev/null
(cd "$ROOT" && cargo build --release --quiet --example tpch)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; limit $LIMIT; data $(du -sh "$DATA" | cut -f1)" | tee "$OUT/machine.txt"
cold() {
    if [ "${COLD:-0}" = 1 ]; then
        sync
        echo 3 >/proc/sys/vm/drop_caches 2>/dev/null \
            || { echo "COLD=1 needs root to write /proc/sys/vm/drop_caches" >&2; exit 2; }
    fi
}
for q in ${QUERIES//,/ }; do
    cold
    if [[ ",$ENGINES," == *",tessera,"* ]]; then
        # The page cache holds what the previous query read; a query's first run reads
        # what it needs from disk or from that cache, as DuckDB's does below.
        if ! TESSERA_MEMORY_LIMIT=$LIMIT TESSERA_SPILL_DIR="$OUT/spill" timeout "$TIMEOUT" \
            "$ROOT/target/release/examples/tpch" --data "$DATA" --sf "$SF" --queries "$q" \
            --repeat 1 --out "$OUT/tessera" >>"$OUT/times.jsonl" 2>"$OUT/tessera-q$q.err"; then
            echo "tessera q$q failed (exit status above; stderr in $OUT/tessera-q$q.err):" >&2
            tail -3 "$OUT/tessera-q$q.err" >&2
        fi
        tail -1 "$OUT/times.jsonl"
    fi
    if [ -n "${BASELINE:-}" ]; then
        cold
        TESSERA_MEMORY_LIMIT=$LIMIT TESSERA_SPILL_DIR="$OUT/spill" timeout "$TIMEOUT" \
            "$BASELINE" --data "$DATA" --sf "$SF" --queries "$q" --repeat 1 \
            --out "$OUT/baseline" 2>"$OUT/baseline-q$q.err" \
            | sed 's/"engine":"tessera"/"engine":"tessera-baseline"/' | tee -a "$OUT/times.jsonl" \
            || echo "baseline q$q failed (stderr in $OUT/baseline-q$q.err)" >&2
        "$PY" "$HERE/check_duckdb.py" "$DATA" "$OUT/baseline" --sf "$SF" --queries "$q" \
            | grep "^q$q:" | sed 's/^/baseline /' || true
    fi
    if [[ ",$ENGINES," == *",duckdb,"* ]]; then
        cold
        timeout "$TIMEOUT" "$PY" "$HERE/check_duckdb.py" "$DATA" "$OUT/tessera" --sf "$SF" \
            --queries "$q" --time --repeat 1 --memory-limit "$LIMIT" --temp-dir "$OUT/spill" \
            | tee -a "$OUT/check.txt" | grep '^{' | tee -a "$OUT/times.jsonl" || true
        grep "^q$q:" "$OUT/check.txt" | tail -1 || true
    fi
done
python3 - "$OUT/times.jsonl" "$LIMIT" <<'PY'
import json, math, sys
t = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        t.setdefault(r["engine"], {})[r["query"]] = (r["seconds"], r.get("peak_rss_mb"))
base = "tessera-baseline" in t
head = "| query | tessera | peak RSS MB | DuckDB | peak RSS MB | tessera / DuckDB |"
if base:
    head += " baseline | peak RSS MB | tessera / baseline |"
print(f"{head}  (memory limit {sys.argv[2]})")
print("|" + " --- |" * (head.count("|") - 1))
cell = lambda v: (f"{v[0]:.2f} s", f"{v[1]:.0f}" if v[1] is not None else "-") if v else ("failed", "-")
for q in range(1, 23):
    a, b = t.get("tessera", {}).get(q), t.get("duckdb", {}).get(q)
    if not a and not b:
        continue
    ratio = f"{a[0] / b[0]:.2f}x" if a and b else "-"
    row = f"| Q{q} | {' | '.join(cell(a))} | {' | '.join(cell(b))} | {ratio} |"
    if base:
        c = t["tessera-baseline"].get(q)
        row += f" {' | '.join(cell(c))} | {f'{a[0] / c[0]:.2f}x' if a and c else '-'} |"
    print(row)
gm = lambda e: math.exp(sum(math.log(v[0]) for v in t[e].values()) / len(t[e])) if len(t.get(e, {})) == 22 else None
g = [gm("tessera"), gm("duckdb")]
if all(g):
    row = f"| geometric mean | {g[0]:.2f} s | | {g[1]:.2f} s | | {g[0] / g[1]:.2f}x |"
    gb = gm("tessera-baseline") if base else None
    if gb:
        row += f" {gb:.2f} s | | {g[0] / gb:.2f}x |"
    print(row)
PY

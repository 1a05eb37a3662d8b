#!/usr/bin/env bash
# The GPU checklist in one call, on a GPU machine, with `.gpu/` from build.sh carried:
#   1. the card and driver, and NVRTC from the image; the CUDA backend's tests that branch
#      on a device being present (`probe`: selectable by name and by configuration);
#   2. the conformance suite on `cuda`, its ops dealt to 12 processes side by side (the
#      first run compiles some 2,800 kernels with NVRTC, which is CPU-bound: one process
#      takes minutes, twelve take seconds), then all of it again under compute-sanitizer
#      memcheck (the kernels now come from the disk cache), and a stress of the ordering
#      between streams (see the step);
#   3. the headline's random array bit for bit against the CPU backend, and the headline
#      next to CuPy + Dask at each size and chunk;
#   4. svd_compressed (200,000 x 5,000, k = 10) on `cuda` next to CuPy + Dask; then
#      (`spill`) an array SPILL_TIMES (default 3) x SPILL_LIMIT (default 16GiB, as
#      `device.memory-limit`) persisted and summed through the memory tiers, its spill
#      throughput next to the copy rate measured in the same run;
#   5. the frame suite on the `cuda` dataframe backend, then again under memcheck
#      (`frame`; its native and host-fallback cases are counted in the summary line);
#   6. TPC-H (`tpch`, not in the default STEPS: minutes): the data made there by
#      tpchgen-cli at TPCH_SF (default 10), the 22 queries on `cuda`, on tessera's `cpu`
#      with every core, and on DuckDB, best of TPCH_REPEAT (default 3), each engine's
#      answers checked against DuckDB's; one JSON line per query and engine.
# Every result lands in $OUT as it comes, so a step cut off by its limit still leaves
# what it printed.
#   STEPS (default "probe,conformance,memcheck,streams,headline,svd,spill,frame": the steps to run; e.g.
#   STEPS=headline SIZES=200000,500000 CHUNKS=10000 for the seed's own size alone),
#   SIZES (default "20000,80000"), CHUNKS (default "2000,10000"), SVD_ROWS (default
#   "10000,20000"); T_CONF, T_CHECK, T_PEER, T_SVD: each step's limit in seconds.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/tessera-gpu-out}"
mkdir -p "$out"
sizes="${SIZES:-20000,80000}"
chunks="${CHUNKS:-2000,10000}"
svd_rows="${SVD_ROWS:-10000,20000}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/tessera-cache}"
step() { echo "== $1 $(date +%T)" | tee -a "$out/steps.txt"; }
steps=",${STEPS:-probe,conformance,memcheck,streams,headline,svd,spill,frame},"
wanted() { [[ "$steps" == *",$1,"* ]]; }

step card
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/card.txt"
# What the carried binaries were compiled for, beside this machine's CPU.
{ cat .gpu/TARGET 2>/dev/null; grep -m1 'model name' /proc/cpuinfo; } | tee "$out/target.txt"
nvrtc="$(ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.13 /{print $NF; exit}')"
[ -z "$nvrtc" ] && nvrtc="$(timeout 30 find /usr /opt -name 'libnvrtc.so.13' 2>/dev/null | head -n 1)"
if [ -n "$nvrtc" ]; then
    # cuBLAS sits beside NVRTC in the CUDA image.
    export TESSERA_NVRTC_DIR="$(dirname "$nvrtc")"
    export LD_LIBRARY_PATH="$TESSERA_NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "NVRTC: ${TESSERA_NVRTC_DIR:-not found}" | tee -a "$out/card.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/whl/*.whl \
    2>/dev/null && export PYTHONPATH=/tmp/site
bin=/tmp/tessera-bin
mkdir -p "$bin"
for f in .gpu/bin/*.gz; do gunzip -c "$f" >"$bin/$(basename "$f" .gz)"; done
chmod +x "$bin"/*

# The CUDA backend's tests that branch on whether a device is present: with one, `cuda`
# (arrays and frames) must be selectable, by name and through the configuration, and the
# probe and the registry must agree.
if wanted probe; then
    step probe
    timeout "${T_CHECK:-90}" "$bin/cuda-tests" --exact --test-threads=1 \
        selecting_cuda_gives_the_backend_or_the_probe_reason \
        selecting_the_cuda_dataframe_backend_gives_it_or_the_probe_reason \
        the_probe_and_the_backend_agree 2>&1 | tee "$out/probe.txt" | tail -n 5
fi

# The suite's ops in 12 groups, each group one process; `$1` wraps each run (memcheck).
suite() {
    local tag="$1"; shift
    mkdir -p "$out/$tag" && rm -f /tmp/groups.*
    "$bin/tessera-conformance" --backend cuda --list | cut -d/ -f1 | sort -u \
        | split -n r/12 - /tmp/groups.
    for g in /tmp/groups.*; do
        ( timeout "${T_CONF:-150}" "$@" "$bin/tessera-conformance" --backend cuda \
            --filter "$(paste -sd, "$g")" --quiet >"$out/$tag/${g##*.}.txt" 2>&1
          echo "${g##*.} exit $?" >>"$out/$tag/exits.txt" ) &
    done
    wait
    grep -h "cases:" "$out/$tag"/*.txt | tee "$out/$tag/summary.txt"
    grep -h "ERROR SUMMARY" "$out/$tag"/*.txt | sort | uniq -c
    sort "$out/$tag/exits.txt" | tr '\n' ' '; echo
}
if wanted conformance; then
    step conformance
    suite conformance
fi
if wanted memcheck; then
    step memcheck
    suite memcheck compute-sanitizer --tool memcheck --error-exitcode 3
fi

# Ordering between streams: the ops whose blocks are read by several workers at once
# (rechunk pieces, joins, chunked products), twelve processes side by side under memcheck,
# which slows kernels enough to expose a free that does not wait for every reader.
if wanted streams; then
    step streams
    mkdir -p "$out/streams"
    for i in $(seq 1 12); do
        ( timeout "${T_CONF:-150}" compute-sanitizer --tool memcheck "$bin/tessera-conformance" \
            --backend cuda --filter api.matmul,api.rechunk,api.concatenate,api.stack,api.sketch,api.tensordot \
            >"$out/streams/$i.txt" 2>&1 ) &
    done
    wait
    grep -h "cases:" "$out/streams"/*.txt | cut -d: -f3 | sort | uniq -c
    grep -h "^\[FAIL\]" "$out/streams"/*.txt | cut -c1-240 | head -n 10
fi

if wanted headline; then
    step headline
    for c in ${chunks//,/ }; do
        timeout "${T_CHECK:-90}" "$bin/gpu_check" --check-n 4000 --chunk "$c" --sizes "$sizes" --repeat 3 2>&1 \
            | tee -a "$out/headline.jsonl"
        for n in ${sizes//,/ }; do
            timeout "${T_PEER:-60}" python3 bench/gpu/cupy_dask.py "$n" "$c" 3 2>&1 | tail -n 3 \
                | tee -a "$out/headline.jsonl"
        done
    done
fi

if wanted svd; then
    step svd_compressed
    for r in ${svd_rows//,/ }; do
        # Best of 3 in one process on both sides (the first run also opens the device).
        TESSERA_ARRAY_BACKEND=cuda timeout "${T_SVD:-60}" "$bin/linalg_bench" compressed "$r" 3 2>&1 \
            | tee -a "$out/svd.jsonl"
        timeout "${T_SVD:-60}" python3 bench/dask_linalg.py compressed --backend cupy --chunk-rows "$r" \
            --repeat 3 2>&1 | tail -n 3 | tee -a "$out/svd.jsonl"
    done
fi

if wanted spill; then
    step spill
    # Host memory takes what leaves the device: (SPILL_TIMES - 1) x SPILL_LIMIT of it.
    timeout "${T_SPILL:-240}" "$bin/gpu_spill" --limit "${SPILL_LIMIT:-16GiB}" \
        --times "${SPILL_TIMES:-3}" --chunk 10000 2>&1 | tee -a "$out/spill.jsonl"
fi
# TPC-H side by side: cuda, cpu (all cores), DuckDB (and Polars when its wheel came).
if wanted tpch; then
    step tpch
    sf="${TPCH_SF:-10}"; rep="${TPCH_REPEAT:-3}"; data="/tmp/tpch-sf$sf"
    mkdir -p "$out/tpch"
    if [ ! -f "$data/lineitem.parquet" ] && [ ! -d "$data/lineitem" ]; then
        # The wheel's executable, installed with the other wheels under /tmp/site.
        timeout "${T_TPCH_GEN:-300}" /tmp/site/bin/tpchgen-cli parquet --scale-factor "$sf" \
            --output-dir "$data" 2>&1 | tail -n 2
    fi
    for engine in cuda cpu; do
        TESSERA_DATAFRAME_BACKEND=$engine timeout "${T_TPCH:-240}" "$bin/tpch" --data "$data" \
            --sf "$sf" --repeat "$rep" --out "$out/tpch/$engine" 2>"$out/tpch/$engine.err" \
            | sed "s/\"engine\":\"tessera\"/\"engine\":\"tessera-$engine\"/" \
            | tee -a "$out/tpch/times.jsonl"
        tail -n 3 "$out/tpch/$engine.err"
    done
    if python3 -c "import duckdb" 2>/dev/null; then
        for engine in cuda cpu; do
            timeout "${T_TPCH:-240}" python3 bench/tpch/check_duckdb.py "$data" "$out/tpch/$engine" \
                --sf "$sf" $([ "$engine" = cuda ] && echo --time) 2>&1 \
                | tee "$out/tpch/check-$engine.txt" | grep -v ': ok' | head -n 30
        done
        grep '^{' "$out/tpch/check-cuda.txt" >>"$out/tpch/times.jsonl" || true
    fi
    if python3 -c "import polars" 2>/dev/null; then
        timeout "${T_TPCH:-240}" python3 bench/tpch/polars_queries.py "$data" --sf "$sf" \
            --repeat "$rep" --out "$out/tpch/polars" | tee -a "$out/tpch/times.jsonl"
    fi
fi

# The dataframe backend: the whole frame suite (`pass` = native throughout, `fallback` =
# passed with a step on the host), then under memcheck.
if wanted frame; then
    step frame
    mkdir -p "$out/frame"
    timeout "${T_CONF:-150}" "$bin/tessera-conformance" --frame-backend cuda --quiet \
        >"$out/frame/suite.txt" 2>&1
    echo "exit $?" >>"$out/frame/suite.txt"
    timeout "${T_CONF:-150}" compute-sanitizer --tool memcheck --error-exitcode 3 \
        "$bin/tessera-conformance" --frame-backend cuda --quiet >"$out/frame/memcheck.txt" 2>&1
    echo "exit $?" >>"$out/frame/memcheck.txt"
    grep -h "cases:\|ERROR SUMMARY\|^exit" "$out/frame"/*.txt
fi
step done

#!/usr/bin/env bash
# The GPU checklist in one call, on a GPU machine, with `.gpu/` from build.sh carried:
# the card and driver, the probe, the conformance suite on `cuda`, the headline's random
# array bit for bit against the CPU backend, the headline next to CuPy + Dask, and a part
# of the suite under compute-sanitizer memcheck. Every result lands in $OUT as it comes,
# so a step cut off by its time limit still leaves what it printed.
#   SIZES (default "20000,40000"): headline sizes; CHUNK (default 2000).
#   T_CONF, T_CHECK, T_PEER, T_MEMCHECK: each step's limit in seconds (defaults fit one
#   call of about six minutes: device time is scarce, so the steps most worth having run first).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/tessera-gpu-out}"
mkdir -p "$out"
sizes="${SIZES:-20000,40000}"
chunk="${CHUNK:-2000}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/tessera-cache}"
step() { echo "== $1 $(date +%T)" | tee -a "$out/steps.txt"; }

step card
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/card.txt"
nvrtc="$(ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.13 /{print $NF; exit}')"
[ -z "$nvrtc" ] && nvrtc="$(timeout 30 find /usr /opt -name 'libnvrtc.so.13' 2>/dev/null | head -n 1)"
if [ -n "$nvrtc" ]; then
    export TESSERA_NVRTC_DIR="$(dirname "$nvrtc")"
    export LD_LIBRARY_PATH="$TESSERA_NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "NVRTC: ${TESSERA_NVRTC_DIR:-not found}" | tee -a "$out/card.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/whl/*.whl \
    && export PYTHONPATH=/tmp/site
bin=.gpu/bin

step conformance
timeout "${T_CONF:-120}" "$bin/tessera-conformance" --backend cuda --json "$out/conformance.json" 2>&1 \
    | tee "$out/conformance.txt" | tail -n 40
step gpu_check
timeout "${T_CHECK:-90}" "$bin/gpu_check" --check-n 4000 --chunk "$chunk" --sizes "$sizes" --repeat 3 2>&1 \
    | tee -a "$out/headline.jsonl"
step peer
for n in ${sizes//,/ }; do
    timeout "${T_PEER:-60}" python3 bench/gpu/cupy_dask.py "$n" "$chunk" 3 2>&1 | tail -n 5 \
        | tee -a "$out/headline.jsonl"
done
step memcheck
timeout "${T_MEMCHECK:-60}" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$bin/tessera-conformance" --backend cuda --filter 'sum,argmax,api.var,random' --quiet 2>&1 \
    | tail -n 30 | tee "$out/memcheck.txt"
echo "memcheck exit: ${PIPESTATUS[0]}" | tee -a "$out/memcheck.txt"
step done

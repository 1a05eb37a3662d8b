#!/usr/bin/env bash
# The GPU checklist in one call, on a GPU machine, with `.gpu/` from build.sh carried:
# the card and driver, the probe, the conformance suite on `cuda` (and a part of it under
# compute-sanitizer memcheck), the headline's random array bit for bit against the CPU
# backend, and the headline next to CuPy + Dask. Every result lands in $OUT as JSON.
#   SIZES (default "20000,40000"): headline sizes; CHUNK (default 2000).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/tessera-gpu-out}"
mkdir -p "$out"
sizes="${SIZES:-20000,40000}"
chunk="${CHUNK:-2000}"
nvrtc="$(find / -name 'libnvrtc.so.13' -not -path '*/proc/*' 2>/dev/null | head -n 1)"
[ -n "$nvrtc" ] && export TESSERA_NVRTC_DIR="$(dirname "$nvrtc")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/card.txt"
echo "NVRTC: ${TESSERA_NVRTC_DIR:-not found}" | tee -a "$out/card.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu/whl/*.whl \
    && export PYTHONPATH=/tmp/site
bin=.gpu/bin
timeout 300 "$bin/tessera-conformance" --backend cuda --json "$out/conformance.json" --quiet 2>&1 \
    | tail -n 40 | tee "$out/conformance.txt"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$bin/tessera-conformance" --backend cuda --filter 'execute,sum,argmax,api.var,random' --quiet 2>&1 \
    | tail -n 30 | tee "$out/memcheck.txt"
{
    timeout 300 "$bin/gpu_check" --check-n 4000 --chunk "$chunk" --sizes "$sizes" --repeat 3
    for n in ${sizes//,/ }; do
        timeout 300 python3 bench/gpu/cupy_dask.py "$n" "$chunk" 3
    done
} 2>&1 | tee "$out/headline.jsonl"

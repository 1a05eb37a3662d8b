#!/usr/bin/env bash
# Cold-build figures for two commits, one after the other on this machine, each in a fresh
# clone (nothing cached but the crate registry): `cargo test --workspace` (build and run)
# and the first `cargo run --release --example seed_headline`, then the headline and the
# taxi groupby from the two release builds, alternating three rounds.
#
#   bench/cold_build.sh BEFORE AFTER [OUT]      e.g. bench/cold_build.sh 2af4d30 HEAD
#
# Prints (and appends to OUT, default cold_build.log in the temporary directory) one line
# per measurement; the clones go to the temporary directory and their target directories
# are removed after the test builds (the release builds are kept for the benchmarks).
#
# EMPTY_CARGO_HOME=1: every build gets a CARGO_HOME of its own, empty, as a new user has
# (the crate registry is downloaded inside the timed step). NO_BENCH=1: the cold builds
# only, without the benchmark rounds. TIMINGS=1: the test builds with `--timings`, each
# report kept as cold-<before|after>-test.timings.html beside the clones.
set -u
BEFORE=${1:?usage: bench/cold_build.sh BEFORE AFTER [OUT]}
AFTER=${2:?usage: bench/cold_build.sh BEFORE AFTER [OUT]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=${TMPDIR:-/tmp}
OUT=${3:-$TMP/cold_build.log}
: > "$OUT"
say() { echo "$*" | tee -a "$OUT"; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
clone() { rm -rf "$2"; git clone -q "$ROOT" "$2" && (cd "$2" && git checkout -q "$1"); }
# The CARGO_HOME a build in clone $1 uses: the caller's, or an empty one of its own.
home() {
  if [ "${EMPTY_CARGO_HOME:-0}" = 1 ]; then rm -rf "$1.cargo-home"; mkdir -p "$1.cargo-home"; echo "$1.cargo-home"
  else echo "${CARGO_HOME:-$HOME/.cargo}"; fi
}

for tag in before after; do
  c=$BEFORE; [ $tag = after ] && c=$AFTER
  d=$TMP/cold-$tag-test; clone "$c" "$d"
  start=$(date +%s.%N)
  h=$(home "$d")
  timings=(); [ "${TIMINGS:-0}" = 1 ] && timings=(--timings)
  (cd "$d" && CARGO_HOME=$h cargo test --workspace "${timings[@]}" > "$d.log" 2>&1)
  [ "${TIMINGS:-0}" = 1 ] && cp "$d"/target/cargo-timings/cargo-timing.html "$d.timings.html" 2>/dev/null
  say "$tag $c cold cargo test --workspace: $(since "$start") s"
  say "$tag $(grep -E 'Finished' "$d.log" | head -n 1 | sed 's/^ *//')"
  grep -E '^test result' "$d.log" | awk -v t=$tag '{p+=$4; f+=$6; r+=$NF} END {print t, "tests passed", p, "failed", f, "running them", r, "s"}' | tee -a "$OUT"
  rm -rf "$d/target"
  [ "${EMPTY_CARGO_HOME:-0}" = 1 ] && rm -rf "$h"
done
for tag in before after; do
  c=$BEFORE; [ $tag = after ] && c=$AFTER
  d=$TMP/cold-$tag-seed; clone "$c" "$d"
  start=$(date +%s.%N)
  h=$(home "$d")
  (cd "$d" && CARGO_HOME=$h cargo run --release --example seed_headline > "$d.log" 2>&1)
  say "$tag $c first cargo run --release --example seed_headline: $(since "$start") s"
  grep '^{' "$d.log" | sed "s/^/$tag /" | tee -a "$OUT"
  [ "${NO_BENCH:-0}" = 1 ] && continue
  (cd "$d" && CARGO_HOME=$h cargo build --release --quiet --example bench --example frame_bench)
done
[ "${NO_BENCH:-0}" = 1 ] && exit 0
for round in 1 2 3; do
  for tag in before after; do
    d=$TMP/cold-$tag-seed
    "$d/target/release/examples/bench" --workloads headline_sum --repeat 3 | sed "s/^/$tag r$round /" | tee -a "$OUT"
    "$d/target/release/examples/frame_bench" --queries taxi_groupby --repeat 3 | sed "s/^/$tag r$round /" | tee -a "$OUT"
  done
done

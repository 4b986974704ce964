#!/bin/bash
# Is the served answer stable across re-tunes and devices? On a host of four
# GPUs and 64 cores, in one call (docs/benchmarks.md, "Answers you can
# trust"), gemm_f16 4096^3, 64 random configs (the same 64 every run: seed 0),
# measure budget 0.1 s:
#   repeat   one fleet, one GPU pinned to 16 cores: tuned REPEAT times (default
#            10; each run after the first a --force retune, which re-measures
#            the served config in its finalists round);
#   devices  four fleets at once, each with its own store, one per GPU and
#            its own 16 cores: which config each serves, its tie set, and
#            whether the four agree.
# Each run's table also names the deciding round's fastest config, the one
# the rule of serving the smallest median picks from the same measurements,
# and gives the served time raw and calibrated (over the reference timed
# beside it: docs/measurement.md, "Calibration"); the four fleets of
# `devices` have their own stores, so compare their calibrated columns.
# Run from the repository root after TARGETS="tunefleet-coordinator
# tunefleet-worker tune_bench" scripts/gpu-bundle.sh build bundle.
#   bench/answer-stability-gpu.sh [devices|repeat]...  (default: both)
# Logs under $OUT (default /tmp/answer-stability); summaries printed last.
# GPUS="0 1" runs `devices` on those GPUs (default 0 1 2 3: a 2-GPU host
# has 32 cores, 16 per GPU too). TUNE_TIMEOUT=S bounds each tune_bench (default 540 s); KERNEL=DIR and
# SHAPE=... tune another kernel (default kernels/cuda/gemm_f16, M=N=K=4096);
# TUNE_FLAGS adds tune_bench flags (e.g.
# --worker-flag=--calibration-interval=-1: the same runs uncalibrated).
set -u
STEPS=" ${*:-devices repeat} "
out=${OUT:-/tmp/answer-stability}
repeat=${REPEAT:-10}
mkdir -p "$out"
export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
want() { [[ "$STEPS" == *" $1 "* ]]; }
{ date -u; nproc; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu \
    --format=csv,noheader; } > "$out/env.txt" 2>&1
cat "$out/env.txt"

# tune GPU RUNS LOG: tune_bench of the space on GPU `GPU`, its 16 cores.
tune() {
  local gpu=$1 runs=$2 log=$3
  CUDA_VISIBLE_DEVICES=$gpu timeout "${TUNE_TIMEOUT:-540}" taskset -c "$((gpu * 16))-$((gpu * 16 + 15))" \
    bundle/bin/tune_bench --backend cuda --bin-dir bundle/bin --kernel "${KERNEL:-kernels/cuda/gemm_f16}" \
    --shape "${SHAPE:-M=4096,N=4096,K=4096}" --strategy random --budget 64 --measure-budget 0.1 \
    --repeat "$runs" ${TUNE_FLAGS:-} > "$log" 2>&1
}

if want devices; then
  echo "== devices: one fleet per GPU"
  for gpu in ${GPUS:-0 1 2 3}; do tune "$gpu" 1 "$out/gpu$gpu.log" & done
  wait
fi

if want repeat; then
  echo "== repeat: $repeat runs on GPU 0"
  tune 0 "$repeat" "$out/repeat.log"
fi

for log in "$out"/repeat.log "$out"/gpu*.log; do
  [ -f "$log" ] || continue
  echo
  echo "## $(basename "$log" .log)"
  grep -E '^\| (run|[0-9]+) \| ' "$log"
  grep -E '^(served run 1|served time|  run 1 tie set|winner latency|  won )' "$log"
done

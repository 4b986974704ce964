#!/usr/bin/env bash
# Own builds on a GPU: the finalists round compiles its cubins from the
# sources even on a worker that fetched them, and publishes them, so that the
# coordinator compares them with the shared copies (docs/architecture.md,
# "Compile once for the fleet"). Checks that NVRTC builds a key to the bytes
# shared (no conflict in the coordinator's log) and measures what the own
# builds cost: tune_bench with --fresh-workers (runs 2 and 3 on a new worker
# process of the same principal, empty cache), beside the same runs on one
# worker whose cache stays warm.
#
# Run on the GPU machine from the repository root after
#   TARGETS="tunefleet-coordinator tunefleet-worker tune_bench tunectl" \
#     scripts/gpu-bundle.sh build bundle
# Writes under $OUT (default /tmp/own-build): env.txt, tests.log, fresh.log,
# warm.log, summary.txt.
set -u
out=${OUT:-/tmp/own-build}
mkdir -p "$out"
export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nproc; nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm \
    --format=csv,noheader; } > "$out/env.txt" 2>&1

timeout 240 bundle/bin/cuda_backend_test --gtest_color=no --gtest_filter='NvrtcCompiler.*' \
  > "$out/tests.log" 2>&1
echo "tests rc=$?" >> "$out/tests.log"

tune() {
  local log=$1
  shift
  CUDA_VISIBLE_DEVICES=0 timeout 300 taskset -c 0-15 \
    bundle/bin/tune_bench --backend cuda --bin-dir bundle/bin --kernel kernels/cuda/gemm_f16 \
    --shape M=4096,N=4096,K=4096 --strategy random --budget 48 --measure-budget 0.05 \
    --repeat 3 "$@" > "$log" 2>&1
  echo "tune_bench rc=$?" >> "$log"
}
tune "$out/fresh.log" --fresh-workers
tune "$out/warm.log"

{
  cat "$out/env.txt"
  tail -n 3 "$out/tests.log"
  for log in fresh warm; do
    echo
    echo "## $log"
    grep -E '^\| (run|[0-9]+) \| |rc=' "$out/$log.log"
    echo "conflicts: $(grep -c 'CONFLICT on key' "$out/$log.log")"
    echo "own builds refused: $(grep -c 'shared no more' "$out/$log.log")"
  done
} > "$out/summary.txt"
cat "$out/summary.txt"

#!/bin/bash
# A decode shape (M=32,N=8192,K=2048; in no dataset until this script's
# exhaustive run of 2026-11-28 became one) tuned live: `model` at 2% of its
# space beside an exhaustive run of the same shape, on a fresh fleet and
# after two other shapes were tuned the same way on the same fleet (their
# bests the warm start, their trials the history). docs/benchmarks.md,
# "Search that transfers". Run from the repository root on the GPU machine
# after TARGETS="tunefleet-coordinator tunefleet-worker tune_bench"
# scripts/gpu-bundle.sh BUILD_DIR bundle; the logs, and the exhaustive run
# as a search dataset, go to DIR.
#   bench/transfer-live-gpu.sh DIR
#   BUDGET=N: the model runs' configs (default 22: 2% of the 1,087 valid
#     configs gemm_f16 had on Hopper at M=32,N=8192,K=2048 on 2026-11-27;
#     tunectl validate counts them)
#   GPUS=N: a fleet of N single-GPU workers (--worker-per-gpu), default one
#     worker; MEASURE=S: seconds of timing per config (default 0.1)
#   OLD_KERNEL=dir: also the fresh and chained runs with that copy of gemm_f16
#   (a previous spec, as the baseline of the same call)
#   RUNS="exhaustive fresh after_n4096 after_decode": which runs (default all)
#   RUN_LIMIT=S: each run's time limit (default 280 s); EXHAUSTIVE_LIMIT=S:
#   the exhaustive run's (default 280 s)
set -u
out=${1:?DIR}
mkdir -p "$out"
export PATH=$PWD/bundle/bin:$PATH LD_LIBRARY_PATH=$PWD/bundle/lib TUNEFLEET_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > "$out/env.txt"
TB=(tune_bench --backend cuda --bin-dir "$PWD/bundle/bin" --worker-flag=--sandbox=none
    --measure-budget "${MEASURE:-0.1}")
[ -n "${GPUS:-}" ] && TB+=(--worker-per-gpu "$GPUS")
shape=M=32,N=8192,K=2048
budget=${BUDGET:-22}
run() {  # NAME KERNEL_DIR ARGS...
  local name=$1 kernel=$2
  shift 2
  [[ " ${RUNS:-exhaustive fresh after_n4096 after_decode} " == *" ${name%_old} "* ]] || return 0
  local start
  start=$(date +%s)
  timeout "${RUN_LIMIT:-280}" "${TB[@]}" --kernel "$kernel" "$@" > "$out/$name.log" 2>&1
  echo "$name rc=$? $(( $(date +%s) - start )) s" >> "$out/env.txt"
}
# shellcheck disable=SC2054  # the commas are within the shapes
after_n4096=(--shape M=16,N=4096,K=4096 --shape M=64,N=4096,K=4096 --shape "$shape")
# shellcheck disable=SC2054
after_decode=(--shape M=16,N=8192,K=1024 --shape M=64,N=8192,K=2048 --shape "$shape")
G=kernels/cuda/gemm_f16
RUN_LIMIT=${EXHAUSTIVE_LIMIT:-280} run exhaustive $G --strategy exhaustive --shape "$shape" \
  --dataset-dir "$out"
run fresh $G --strategy model --budget "$budget" --shape "$shape"
run after_n4096 $G --strategy model --budget "$budget" "${after_n4096[@]}"
run after_decode $G --strategy model --budget "$budget" "${after_decode[@]}"
if [ -n "${OLD_KERNEL:-}" ]; then
  run fresh_old "$OLD_KERNEL" --strategy model --budget "$budget" --shape "$shape"
  run after_n4096_old "$OLD_KERNEL" --strategy model --budget "$budget" "${after_n4096[@]}"
fi
for log in "$out"/*.log; do
  echo "== $(basename "$log" .log)"
  grep -E "^\| 1 \| SUCCEEDED" "$log" | awk -F'|' '{print $12, $13}'
done

#!/bin/bash
# How a fleet's tuning time scales with its GPUs, on one host of several
# GPUs: gemm_f16 4096^3, a random sample of BUDGET (192) configs, tuned twice
# on each fleet (run 1 cold, run 2 with the workers' artifact caches warm),
# with CORES_PER_GPU (16) CPUs per GPU, in two layouts:
#   shared   one worker with N GPUs on N x 16 CPUs (a host of N GPUs);
#   per-gpu  N workers, each with one GPU and its own 16 CPUs (N single-GPU
#            hosts; tune_bench --worker-per-gpu).
# Run from the repository root after TARGETS="tunefleet-coordinator
# tunefleet-worker tune_bench" scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/gpu-scaling.sh [GPUS...]      (default: 1 2 4)
#   LAYOUTS="shared"  only these layouts (default: shared per-gpu)
#   EXTRA="..."       more tune_bench flags (e.g. --worker-flag=--precision=-1)
# Logs under $OUT (or /tmp/gpu-scaling); the table is printed last.
set -u
out=${OUT:-/tmp/gpu-scaling}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
per=${CORES_PER_GPU:-16}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
TB=(bundle/run.sh bundle/bin/tune_bench --backend cuda --bin-dir "$PWD/bundle/bin"
    --kernel kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096 --strategy random
    --budget "${BUDGET:-192}" --measure-budget "${MEASURE_BUDGET:-0.1}" --repeat 2
    ${EXTRA:-})
summary="$out/scaling.md"
echo "| GPUs | layout | CPUs | run | wall s | configs/s | device idle s | best ms |" > "$summary"
echo "|---|---|---|---|---|---|---|---|" >> "$summary"
for gpus in ${*:-1 2 4}; do
  cpus="0-$((gpus * per - 1))"
  visible=$(seq -s, 0 $((gpus - 1)))
  for layout in ${LAYOUTS:-shared per-gpu}; do
    [ "$gpus" -eq 1 ] && [ "$layout" = per-gpu ] && continue
    flags=()
    [ "$layout" = per-gpu ] && flags=(--worker-per-gpu "$gpus")
    log="$out/scaling-${gpus}gpu-${layout}.log"
    CUDA_VISIBLE_DEVICES=$visible timeout 300 taskset -c "$cpus" "${TB[@]}" "${flags[@]}" \
      > "$log" 2>&1
    # | run | state | wall s | ok/trials | cut | configs/s | compile s | measured s | pool idle | device idle | best config | best ms | ...
    grep -E '^\| [0-9]+ \| ' "$log" | awk -F'|' -v g="$gpus" -v l="$layout" -v c="$cpus" \
      '{printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", g, l, c, $2+0, $4+0, $7+0, $11+0, $13+0}' \
      >> "$summary"
  done
done
cat "$summary"

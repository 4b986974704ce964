#!/bin/bash
# One GPU against two GPUs of one host, on the same space: gemm_f16 4096^3,
# a random sample of 384 configs, tuned twice on one fleet (run 1 cold, run 2
# with the workers' artifact caches warm). Run from the repository root on a
# two-GPU machine after TARGETS="tunefleet-coordinator tunefleet-worker
# tune_bench" scripts/gpu-bundle.sh BUILD_DIR bundle. Logs under $OUT.
set -u
out=${OUT:-/tmp/gpu-scaling}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
TB=(bundle/run.sh bundle/bin/tune_bench --backend cuda --bin-dir "$PWD/bundle/bin"
    --kernel kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096 --strategy random
    --budget "${BUDGET:-384}" --measure-budget 0.05 --repeat 2)
for gpus in 1 2; do
  echo "== $gpus GPU(s)"
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 270 "${TB[@]}" > "$out/scal-${gpus}gpu.log" 2>&1
  grep -v '^\[20\|^20' "$out/scal-${gpus}gpu.log" | tail -7
done

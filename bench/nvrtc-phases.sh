#!/bin/bash
# Where one NVRTC compile of a kernel config spends its time: NVRTC's own
# phase timings (-time) for a few gemm_f16 configs, with and without its
# automatic precompiled header (-pch), through the worker's tunefleet-nvrtc
# helper with the options the NvrtcCompiler passes. No GPU needed.
#
#   bench/nvrtc-phases.sh [build dir]    (default: build)
set -euo pipefail
build=${1:-build}
kernel=kernels/cuda/gemm_f16
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(
  "MMA=0,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0"
  "MMA=0,BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0"
  "MMA=1,BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,WARPS_N=1,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0"
  "MMA=1,BLOCK_M=256,BLOCK_N=128,BLOCK_K=64,WARPS_M=16,WARPS_N=1,STAGES=4,GROUP_M=1,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0"
)
echo "| config | pch | front end ms | NVVM optimizer ms | PTX translation (ptxas) ms | wall ms |"
echo "|---|---|---|---|---|---|"
for config in "${configs[@]}"; do
  defines=()
  IFS=, read -ra pairs <<< "$config"
  for pair in "${pairs[@]}"; do defines+=("-D$pair"); done
  for pch in "" "-pch"; do
    rm -f "$work/time.csv"
    start=$(date +%s%N)
    "$build/bin/tunefleet-nvrtc" "$kernel/gemm_f16.cu" gemm_f16.cu "$work/out.cubin" "$work/out.log" \
      --gpu-architecture=sm_90a -std=c++17 --ptxas-options=-v -I/usr/local/cuda/include \
      "-I$kernel" "${defines[@]}" "-time=$work/time.csv" $pch
    end=$(date +%s%N)
    phases=$(awk -F', ' 'NR > 1 { printf " %s |", $3 }' "$work/time.csv")
    echo "| $config | ${pch:-no} |$phases $(( (end - start) / 1000000 )) |"
  done
done

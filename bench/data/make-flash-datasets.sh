#!/bin/bash
# Makes the flash_attn_fwd search datasets (bench/data/README.md, (8)): its
# five sequence lengths, exhaustive over the whole space (both paths, MMA=0
# and the Hopper MMA=1), one loopback fleet per GPU (bench/tune_bench), each
# pinned to its GPU and 16 cores of its own, every shape's results written
# as DIR/flash_attn_fwd-SHAPE.csv.gz. Run from the repository root on a
# 4-GPU host of 64 cores after
# TARGETS="tunefleet-coordinator tunefleet-worker tune_bench"
# scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/data/make-flash-datasets.sh DIR
set -u
out=${1:?DIR}
mkdir -p "$out"
export PATH=$PWD/bundle/bin:$PATH LD_LIBRARY_PATH=$PWD/bundle/lib TUNEFLEET_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > "$out/env.txt"
TB=(tune_bench --backend cuda --bin-dir "$PWD/bundle/bin" --worker-flag=--sandbox=none
    --strategy exhaustive --measure-budget 0.01 --finalists 0 --dataset-dir "$out"
    --kernel kernels/cuda/flash_attn_fwd)
fleet() {  # GPU CORES NAME ARGS...: one fleet in the background
  local gpu=$1 cores=$2 name=$3
  shift 3
  (
    start=$(date +%s)
    CUDA_VISIBLE_DEVICES=$gpu timeout 560 taskset -c "$cores" "${TB[@]}" "$@" > "$out/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - start )) s" >> "$out/env.txt"
  ) &
}
fleet 0 0-15 f0 --shape BATCH=4,HEADS=16,SEQ=4096
fleet 1 16-31 f1 --shape BATCH=16,HEADS=16,SEQ=1024
fleet 2 32-47 f2 --shape BATCH=1,HEADS=16,SEQ=8192 --shape BATCH=8,HEADS=16,SEQ=512
fleet 3 48-63 f3 --shape BATCH=4,HEADS=16,SEQ=2048
wait
cat "$out/env.txt"

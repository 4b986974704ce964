#!/bin/bash
# Makes the GPU search datasets of softmax and flash_attn_fwd on the GPU
# machine: exhaustive runs through a loopback fleet (bench/tune_bench), each
# shape's results written as DIR/KERNEL-SHAPE.csv.gz. Run from the repository
# root after TARGETS="tunefleet-coordinator tunefleet-worker tune_bench"
# scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/data/make-gpu-datasets.sh OUT_DIR
set -u
out=${1:?OUT_DIR}
mkdir -p "$out"
TB=(bundle/run.sh bundle/bin/tune_bench --backend cuda --bin-dir "$PWD/bundle/bin"
    --strategy exhaustive --measure-budget 0.01 --finalists 0 --dataset-dir "$out")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/env.txt"
timeout 200 "${TB[@]}" --kernel kernels/cuda/softmax --shape ROWS=8192,COLS=8192 \
  --shape ROWS=32768,COLS=1024 --shape ROWS=4096,COLS=4096 --shape ROWS=65536,COLS=256 \
  > "$out/softmax.log" 2>&1
echo "softmax rc=$?" >> "$out/env.txt"
timeout 360 "${TB[@]}" --kernel kernels/cuda/flash_attn_fwd --shape BATCH=4,HEADS=16,SEQ=4096 \
  --shape BATCH=16,HEADS=16,SEQ=1024 > "$out/flash.log" 2>&1
echo "flash rc=$? $(date -u +%FT%TZ)" >> "$out/env.txt"

#!/bin/bash
# Makes the transfer datasets (bench/data/README.md, (6), (7) and (8)):
# decode shapes of gemm_f16 and the sequence lengths of flash_attn_fwd,
# exhaustive, one loopback fleet per GPU (bench/tune_bench), each pinned to
# its GPU and 16 cores of its own, every shape's results written as
# DIR/KERNEL-SHAPE.csv.gz. Run from the repository root on the GPU machine
# after TARGETS="tunefleet-coordinator tunefleet-worker tune_bench"
# scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/data/make-transfer-datasets.sh h200 DIR    (a 4-GPU host, 64 cores)
#   bench/data/make-transfer-datasets.sh h100 DIR    (one GPU, 16 cores)
#   bench/data/make-transfer-datasets.sh flash DIR   (a 4-GPU host: the five
#       flash_attn_fwd sequence lengths over the whole space, both paths)
set -u
set_name=${1:?h200, h100 or flash}
out=${2:?DIR}
mkdir -p "$out"
export PATH=$PWD/bundle/bin:$PATH LD_LIBRARY_PATH=$PWD/bundle/lib TUNEFLEET_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > "$out/env.txt"
TB=(tune_bench --backend cuda --bin-dir "$PWD/bundle/bin" --worker-flag=--sandbox=none
    --strategy exhaustive --measure-budget 0.01 --finalists 0 --dataset-dir "$out")
G=kernels/cuda/gemm_f16
F=kernels/cuda/flash_attn_fwd
fleet() {  # GPU CORES NAME ARGS...: one fleet in the background
  local gpu=$1 cores=$2 name=$3
  shift 3
  (
    start=$(date +%s)
    CUDA_VISIBLE_DEVICES=$gpu timeout 560 taskset -c "$cores" "${TB[@]}" "$@" > "$out/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - start )) s" >> "$out/env.txt"
  ) &
}
if [ "$set_name" = h200 ]; then
  fleet 0 0-15 g0 --kernel $G --shape M=8,N=4096,K=4096 --shape M=32,N=4096,K=4096 \
    --shape M=64,N=4096,K=4096
  fleet 1 16-31 g1 --kernel $G --shape M=16,N=8192,K=1024 --shape M=64,N=8192,K=2048 \
    --shape M=1,N=4096,K=4096
  fleet 2 32-47 g2 --kernel $G --shape M=16,N=2048,K=8192 --shape M=32,N=14336,K=4096 \
    --shape M=128,N=4096,K=4096
  fleet 3 48-63 f3 --kernel $F --shape BATCH=8,HEADS=16,SEQ=512 \
    --shape BATCH=4,HEADS=16,SEQ=2048 --shape BATCH=1,HEADS=16,SEQ=8192
elif [ "$set_name" = flash ]; then
  fleet 0 0-15 f0 --kernel $F --shape BATCH=4,HEADS=16,SEQ=4096
  fleet 1 16-31 f1 --kernel $F --shape BATCH=16,HEADS=16,SEQ=1024
  fleet 2 32-47 f2 --kernel $F --shape BATCH=1,HEADS=16,SEQ=8192 --shape BATCH=8,HEADS=16,SEQ=512
  fleet 3 48-63 f3 --kernel $F --shape BATCH=4,HEADS=16,SEQ=2048
else
  fleet 0 0-15 g0 --kernel $G --shape M=8,N=4096,K=4096 --shape M=32,N=4096,K=4096 \
    --shape M=64,N=4096,K=4096 --shape M=16,N=4096,K=4096 --shape M=16,N=8192,K=1024 \
    --shape M=4096,N=4096,K=4096
fi
wait
cat "$out/env.txt"

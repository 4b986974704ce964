#!/bin/bash
# The low-clock rule and the finalists' separation on one GPU: the GPU tests
# of per-sample clocks, then gemm_f16 4096^3 (48 random configs) tuned five
# times on one fleet, with each run's winner, its finalist rounds and CV, and
# the samples taken again at a low clock. Run from the repository root after
# TARGETS="tunefleet-coordinator tunefleet-worker tune_bench"
# scripts/gpu-bundle.sh BUILD_DIR bundle. Logs under $OUT.
set -u
out=${OUT:-/tmp/gpu-lowclock}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
bundle/run.sh bundle/bin/cuda_backend_test \
  --gtest_filter='CudaRunner.EverySample*:Kernels/DefaultConfigTest.*:CudaRunner.GemmConfigsAreMeasured' \
  > "$out/gtest.log" 2>&1
grep -E "^\[  |low_clock_fraction|clock [0-9]+ MHz|TFLOP" "$out/gtest.log" | tail -40
timeout 400 bundle/run.sh bundle/bin/tune_bench --backend cuda --bin-dir "$PWD/bundle/bin" \
  --kernel kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096 --strategy random \
  --budget "${BUDGET:-48}" --repeat "${REPEAT:-5}" > "$out/tune.log" 2>&1
echo "tune_bench rc=$?"
grep -v '^\[20\|^20' "$out/tune.log" | tail -25
# The workers log to tune_bench's stderr.
grep -h "finalist rounds\|finalists:" "$out/tune.log" | tail -30
echo "OK trials: $(grep -c 'trial [0-9]*: OK' "$out/tune.log"), with samples taken again at a low clock: $(grep -c 'taken again at a low clock' "$out/tune.log"), with low-clock samples kept: $(grep -c 'kept at a low clock' "$out/tune.log")"
grep -o "at [0-9]* MHz" "$out/tune.log" | sort | uniq -c | sort -rn | head -8

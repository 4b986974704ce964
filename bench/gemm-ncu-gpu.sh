#!/bin/bash
# Nsight Compute's view of one gemm_f16 config beside cuBLAS's kernel at the
# same shape, one GPU, from the repository root after scripts/gpu-bundle.sh:
# each kernel's first launch in one tunefleet-cuda-trial --reference process,
# clocks left to the device (--clock-control none). Prints one table.
#   bench/gemm-ncu-gpu.sh SHAPE CONFIG
set -u
shape=$1 config=$2
out=${OUT:-/tmp/gemm-ncu}
mkdir -p "$out"
trial=(bundle/run.sh bundle/bin/tunefleet-cuda-trial --kernel kernels/cuda/gemm_f16
       --shape "$shape" --reference --budget 0.001 --warmup 0 --config "$config")
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy
          --section LaunchStats --section WarpStateStats)
# The first 40 launches: cuBLAS's (the expected output, then its timing),
# the worker's clock probes (tf_*), ours and the comparison (compare_*).
# cuBLAS's main kernel is the longest of its own; every kernel's first
# duration is listed after the table (cuBLAS splits K into a second kernel
# at decode shapes).
ncu --clock-control none --target-processes all --csv --page details "${sections[@]}" \
  --launch-count 40 "${trial[@]}" > "$out/ncu.csv" 2> "$out/ncu.err"
python3 - "$out/ncu.csv" "$shape" "$config" <<'PY'
import sys
sys.path.insert(0, "bench")
from ncu_table import cell, duration_us, print_table, read_launches
launches = read_launches(sys.argv[1])
ours = next((l for l in launches if l["name"].startswith("gemm_f16")), None)
others = [l for l in launches if not l["name"].startswith(("gemm_f16", "tf_", "compare_"))]
lib = max(others, key=duration_us) if others else None
print(f"shape {sys.argv[2]}, ours: {sys.argv[3]}")
print_table([("cuBLAS " + (lib["name"][:60] if lib else "-"), lib), ("gemm_f16", ours)])
first = {}
for launch in launches:
    first.setdefault(launch["name"], launch)
print("first launch of each kernel: " + "; ".join(
    f"{name[:50]} {cell(launch, 'Duration')}" for name, launch in first.items()))
PY

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
import csv, sys
wanted = ["Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
          "Grid Size", "Block Size", "Registers Per Thread", "Executed Ipc Active",
          "Issue Slots Busy", "Achieved Occupancy"]
launches = {}
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    launch = launches.setdefault(r["ID"], {"name": r["Kernel Name"], "values": {}})
    if r["Metric Name"] in wanted and r["Metric Name"] not in launch["values"]:
        launch["values"][r["Metric Name"]] = (r["Metric Value"], r.get("Metric Unit", ""))
def duration(launch):
    value, unit = launch["values"].get("Duration", ("0", "ns"))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)
    return float(value.replace(",", "")) * scale
ours = next((l for l in launches.values() if l["name"].startswith("gemm_f16")), None)
others = [l for l in launches.values()
          if not l["name"].startswith(("gemm_f16", "tf_", "compare_"))]
lib = max(others, key=duration) if others else None
def cell(launch, metric):
    if launch is None or metric not in launch["values"]:
        return "-"
    value, unit = launch["values"][metric]
    return f"{value} {unit}".strip()
lib_name = lib["name"] if lib else "-"
print(f"shape {sys.argv[2]}, ours: {sys.argv[3]}")
print(f"| | cuBLAS `{lib_name[:60]}` | gemm_f16 |")
print("|---|---|---|")
for metric in wanted:
    print(f"| {metric} | {cell(lib, metric)} | {cell(ours, metric)} |")
first = {}
for launch in launches.values():
    first.setdefault(launch["name"], launch)
print("first launch of each kernel: " + "; ".join(
    f"{name[:50]} {cell(launch, 'Duration')}" for name, launch in first.items()))
PY

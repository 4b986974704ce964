#!/bin/bash
# Nsight Compute's view of one flash_attn_fwd config beside torch's SDPA
# kernels (the flash backend's and cuDNN's) at the same shape, one GPU, from
# the repository root after scripts/gpu-bundle.sh: our kernel's first launch
# in a tunefleet-cuda-trial process, each SDPA backend's first call in one
# python process, clocks left to the device (--clock-control none). Prints
# one table.
#   bench/flash-ncu-gpu.sh SHAPE CONFIG
set -u
shape=$1 config=$2
out=${OUT:-/tmp/flash-ncu}
mkdir -p "$out"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy
          --section LaunchStats --section WarpStateStats)
ncu --clock-control none --target-processes all --csv --page details "${sections[@]}" \
  --kernel-name flash_attn_fwd --launch-count 1 \
  bundle/run.sh bundle/bin/tunefleet-cuda-trial --kernel kernels/cuda/flash_attn_fwd \
  --shape "$shape" --budget 0.001 --warmup 0 --config "$config" > "$out/ours.csv" 2> "$out/ours.err"
cat > "$out/sdpa.py" <<'PY'
import sys, torch
import torch.nn.functional as F
dims = dict(kv.split("=") for kv in sys.argv[1].split(","))
b, h, s = int(dims["BATCH"]), int(dims["HEADS"]), int(dims["SEQ"])
q, k, v = (torch.randn(b, h, s, 128, dtype=torch.float16, device="cuda") for _ in range(3))
for backend in (torch.nn.attention.SDPBackend.FLASH_ATTENTION,
                torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
    with torch.nn.attention.sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
ncu --clock-control none --target-processes all --csv --page details "${sections[@]}" \
  --launch-count 20 python3 "$out/sdpa.py" "$shape" > "$out/sdpa.csv" 2> "$out/sdpa.err"
python3 - "$out/ours.csv" "$out/sdpa.csv" "$shape" "$config" <<'PY'
import csv, sys
wanted = ["Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
          "Grid Size", "Block Size", "Registers Per Thread", "Dynamic Shared Memory Per Block",
          "Executed Ipc Active", "Issue Slots Busy", "Achieved Occupancy"]
launches = {}
for path in sys.argv[1:3]:
    for r in csv.DictReader(l for l in open(path) if l.startswith('"')):
        launch = launches.setdefault((path, r["ID"]), {"name": r["Kernel Name"], "values": {}})
        if r["Metric Name"] in wanted and r["Metric Name"] not in launch["values"]:
            launch["values"][r["Metric Name"]] = (r["Metric Value"], r.get("Metric Unit", ""))
def duration(launch):
    value, unit = launch["values"].get("Duration", ("0", "ns"))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)
    return float(value.replace(",", "")) * scale
ours = next((l for (p, _), l in launches.items() if p == sys.argv[1]), None)
sdpa = sorted((l for (p, _), l in launches.items() if p == sys.argv[2]), key=duration)[-2:]
columns = [("ours", ours)] + [(l["name"][:48], l) for l in sdpa]
def cell(launch, metric):
    if launch is None or metric not in launch["values"]:
        return "-"
    value, unit = launch["values"][metric]
    return f"{value} {unit}".strip()
print(f"shape {sys.argv[3]}, ours: {sys.argv[4]}")
print("| | " + " | ".join(f"`{name}`" for name, _ in columns) + " |")
print("|---" * (len(columns) + 1) + "|")
for metric in wanted:
    print(f"| {metric} | " + " | ".join(cell(l, metric) for _, l in columns) + " |")
PY

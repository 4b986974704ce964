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
import sys
sys.path.insert(0, "bench")
from ncu_table import duration_us, print_table, read_launches
ours = next(iter(read_launches(sys.argv[1])), None)
sdpa = sorted(read_launches(sys.argv[2]), key=duration_us)[-2:]
print(f"shape {sys.argv[3]}, ours: {sys.argv[4]}")
print_table([("ours", ours)] + [(l["name"][:48], l) for l in sdpa])
PY

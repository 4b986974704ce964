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
for attr in ("FLASH_ATTENTION", "CUDNN_ATTENTION"):
    backend = getattr(torch.nn.attention.SDPBackend, attr, None)
    try:
        with torch.nn.attention.sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v)
    except (RuntimeError, TypeError) as e:  # a backend this torch or device lacks
        print(attr, "unavailable:", str(e).splitlines()[0][:120], file=sys.stderr)
torch.cuda.synchronize()
PY
ncu --clock-control none --target-processes all --csv --page details "${sections[@]}" \
  --launch-count 20 python3 "$out/sdpa.py" "$shape" > "$out/sdpa.csv" 2> "$out/sdpa.err"
python3 - "$out/ours.csv" "$out/sdpa.csv" "$shape" "$config" <<'PY'
import sys
sys.path.insert(0, "bench")
from ncu_table import print_table, read_launches
ours = next(iter(read_launches(sys.argv[1])), None)
# SDPA's attention kernels, by name (the inputs' randn kernels are not).
sdpa = [l for l in read_launches(sys.argv[2]) if "flash" in l["name"] or "sdpa" in l["name"]]
print(f"shape {sys.argv[3]}, ours: {sys.argv[4]}")
print_table([("ours", ours)] + [(l["name"][:48], l) for l in sdpa])
PY

#!/bin/bash
# flash_attn_fwd's Hopper path (MMA=1: TMA, a producer warpgroup, wgmma;
# every STAGES, OVERLAP, PINGPONG and PERSISTENT)
# beside the best mma.sync config and torch's SDPA flash backend, on one GPU,
# in one call: the gpu tier's flash test (each config checked against the
# reference kernel), then every MMA=1 config and the mma.sync best timed in
# one tunefleet-cuda-trial process per pass (each checked again), twice, the
# second pass in the reverse order; torch SDPA (the flash backend, and
# cuDNN's where torch and the device have it) timed with CUDA events on the
# same shape after each pass. Logs under $OUT (or
# /tmp/flash-gpu); prints a markdown table of median microseconds last.
# Run from the repository root after scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/flash-gpu.sh [SHAPE]      (default BATCH=4,HEADS=16,SEQ=4096)
set -u
out=${OUT:-/tmp/flash-gpu}
mkdir -p "$out"
R=bundle/run.sh
BIN=bundle/bin
shape=${1:-BATCH=4,HEADS=16,SEQ=4096}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$out/env.txt" 2>&1
date -u +"%Y-%m-%dT%H:%M:%SZ" >> "$out/env.txt"

timeout 300 "$R" "$BIN/cuda_backend_test" --gtest_brief=1 \
  --gtest_filter='CudaSpaces*:CudaRunner.FlashAttn*' > "$out/tests.log" 2>&1
echo "tests: rc=$?" >> "$out/env.txt"

fixed="ASYNC_COPY=1,EAGER_LOAD=1,SWIZZLE=1,Q_TILES=0,K_TILES=0,V_TILES=0,MMA_DB=0,OPT_SOFTMAX=1"
args=()
for br in 128 64; do
  for bc in 128 64; do
    for stages in 2 3; do
      for overlap in 1 0; do
        for pingpong in 1 0; do
          [ $br -eq 64 ] && [ $pingpong -eq 1 ] && continue
          for persistent in 1 0; do
            args+=(--config "MMA=1,B_R=$br,B_C=$bc,N_WARPS=$((br / 16)),STAGES=$stages,OVERLAP=$overlap,PINGPONG=$pingpong,PERSISTENT=$persistent,$fixed")
          done
        done
      done
    done
  done
done
# The best mma.sync config of the earlier runs (docs/benchmarks.md).
args+=(--config "MMA=0,B_R=128,B_C=64,N_WARPS=8,ASYNC_COPY=1,EAGER_LOAD=1,SWIZZLE=1,Q_TILES=0,K_TILES=2,V_TILES=0,MMA_DB=0,OPT_SOFTMAX=1,STAGES=2,OVERLAP=0,PINGPONG=0,PERSISTENT=0")
reversed=()
for ((i = ${#args[@]} - 1; i >= 1; i -= 2)); do reversed+=(--config "${args[i]}"); done

torch_time() {
  python3 - "$shape" <<'PY' >> "$out/torch.txt" 2>&1
import sys, torch
import torch.nn.functional as F
dims = dict(kv.split("=") for kv in sys.argv[1].split(","))
b, h, s = int(dims["BATCH"]), int(dims["HEADS"]), int(dims["SEQ"])
q, k, v = (torch.randn(b, h, s, 128, dtype=torch.float16, device="cuda") for _ in range(3))
def median(fn, n=50):
    for _ in range(5):
        fn()
    times = []
    for _ in range(n):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); fn(); end.record(); end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[n // 2]
for name, attr in (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION")):
    backend = getattr(torch.nn.attention.SDPBackend, attr, None)
    if backend is None:  # a backend this torch lacks
        print("TORCH %s error=not in this torch" % name)
        continue
    try:
        with torch.nn.attention.sdpa_kernel(backend):
            us = median(lambda: F.scaled_dot_product_attention(q, k, v))
        print("TORCH %s median_us=%.1f" % (name, us))
    except Exception as e:  # a backend this torch or GPU lacks
        print("TORCH %s error=%s" % (name, str(e).splitlines()[0][:120]))
print("torch", torch.__version__)
PY
}

: > "$out/torch.txt"
for pass in 1 2; do
  if [ $pass -eq 1 ]; then list=("${args[@]}"); else list=("${reversed[@]}"); fi
  timeout 240 "$R" "$BIN/tunefleet-cuda-trial" --kernel kernels/cuda/flash_attn_fwd \
    --shape "$shape" --budget 0.3 --cache "${CUBIN_CACHE:-/tmp/flash-cubins}" "${list[@]}" \
    > "$out/pass$pass.log" 2>&1
  echo "pass $pass: rc=$?" >> "$out/env.txt"
  torch_time
done

python3 - "$out" "$shape" <<'PY'
import re, sys
out, shape = sys.argv[1], sys.argv[2]
dims = dict(kv.split("=") for kv in shape.split(","))
flops = 4 * int(dims["BATCH"]) * int(dims["HEADS"]) * int(dims["SEQ"]) ** 2 * 128
torch = {}
for name, us in re.findall(r"^TORCH (\w+) median_us=([\d.]+)", open(f"{out}/torch.txt").read(), re.M):
    torch.setdefault(name, []).append(float(us))
flash = min(torch.get("flash", [float("nan")]))
runs = {}
for p in (1, 2):
    try:
        text = open(f"{out}/pass{p}.log").read()
    except OSError:
        continue
    for status, us, cfg in re.findall(r"^RESULT (\S+)\s+median_us=([\d.]+).*?config=(\S+)", text, re.M):
        runs.setdefault(cfg, []).append(float(us) if status == "OK" else status)
print(f"torch SDPA: " + ", ".join(f"{k} {v}" for k, v in torch.items()))
print("| config | pass 1 / 2 µs | TFLOP/s | share of SDPA flash |")
print("|---|---|---|---|")
for cfg, times in runs.items():
    ok = [t for t in times if isinstance(t, float)]
    best = min(ok) if ok else None
    short = re.sub(r",ASYNC_COPY=1,EAGER_LOAD=1,SWIZZLE=1,Q_TILES=0,K_TILES=0,V_TILES=0,MMA_DB=0,OPT_SOFTMAX=1", "", cfg)
    print(f"| {short} | {' / '.join(str(t) for t in times)} | "
          f"{flops / best / 1e6:.0f} | {flash / best:.3f} |" if best else f"| {short} | {times} | - | - |")
PY
cat "$out/env.txt"
tail -n 3 "$out/tests.log"

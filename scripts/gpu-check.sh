#!/bin/bash
# The CUDA backend's checks and timings on the GPU test machine, in one call:
# the gpu test tier, gemm_f16 configs vs cuBLAS at 4096^3, softmax vs the
# device's copy bandwidth, torch cross-checks. Run from the repository root
# after scripts/gpu-bundle.sh; logs under $OUT (or /tmp/gpu-check), a short
# table last.
#   scripts/gpu-check.sh [tests|gemm|softmax|flash|confirm|torch|profile|all]...   (default: all)
# `profile` (tests/gpu/profile_gpu_test.cc: a loopback fleet profiles the gemm's
# fastest config with ncu) needs a bundle built with
#   TARGETS="profile_gpu_test tunefleet-coordinator tunefleet-worker" scripts/gpu-bundle.sh
set -u
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
B=bundle
run() { "$B/run.sh" "$@"; }
want() { [[ " ${STEPS} " == *" $1 "* || " ${STEPS} " == *" all "* ]]; }
STEPS="${*:-all}"
export PYTHONUNBUFFERED=1

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
} > "$out/env.txt" 2>&1

if want tests; then
  timeout 240 "$B/run.sh" "$B/bin/cuda_backend_test" --gtest_color=no > "$out/tests.log" 2>&1
  echo "tests rc=$?" >> "$out/tests.log"
fi

if want profile && [ -x "$B/bin/profile_gpu_test" ]; then
  timeout 900 "$B/run.sh" "$B/bin/profile_gpu_test" --gtest_color=no > "$out/profile.log" 2>&1
  echo "profile rc=$?" >> "$out/profile.log"
fi

if want gemm; then
  # Every wgmma config, and the mma.sync configs that led on an H200 (docs/gpu-notes.md).
  configs=$(python3 - <<'PY'
import itertools
out = []
for mma, bm, bn, bk, s, g in itertools.product([1, 2], [64, 128, 256], [64, 128, 256], [32, 64],
                                               [2, 3, 4, 5, 6, 8], [8]):
    wm = bm // 16; t = 32 * wm
    if mma == 1 and s < 3: continue
    if s * (bm + bn) * bk * 2 + 1024 > 232448 or t * (bn // 2 + 40) > 65536: continue
    if (bm * bk // 8) % t or (bn * bk // 8) % t: continue
    if bk == 64 and s > 5 or bk == 32 and s < 4 or bm * bn < 128 * 128: continue
    out.append(f"MMA={mma},BLOCK_M={bm},BLOCK_N={bn},BLOCK_K={bk},WARPS_M={wm},WARPS_N=1,STAGES={s},GROUP_M={g},SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0")
out += ["MMA=0,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=2,WARPS_N=4,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0",
        "MMA=0,BLOCK_M=256,BLOCK_N=128,BLOCK_K=64,WARPS_M=4,WARPS_N=2,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0",
        "MMA=0,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,WARPS_M=1,WARPS_N=4,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0",
        "MMA=0,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0"]
print(" ".join("--config=" + c for c in out))
PY
)
  timeout 200 "$B/run.sh" "$B/bin/tunefleet-cuda-trial" --kernel kernels/cuda/gemm_f16 \
      --shape M=4096,N=4096,K=4096 --reference --budget 0.1 $configs > "$out/gemm.log" 2>&1
  echo "gemm rc=$?" >> "$out/gemm.log"
fi

if want softmax; then
  timeout 90 "$B/run.sh" "$B/bin/tunefleet-cuda-trial" --kernel kernels/cuda/softmax \
      --shape ROWS=32768,COLS=4096 --set quick --reference --budget 0.1 \
      --config ROWS_PER_BLOCK=1,THREADS=64,VEC=8 --config ROWS_PER_BLOCK=1,THREADS=128,VEC=4 \
      --config ROWS_PER_BLOCK=2,THREADS=128,VEC=8 --config ROWS_PER_BLOCK=4,THREADS=256,VEC=8 \
      > "$out/softmax.log" 2>&1
  echo "softmax rc=$?" >> "$out/softmax.log"
fi

if want flash && [ -d kernels/cuda/flash_attn_fwd ]; then
  for set in tune progression; do
    timeout 100 "$B/run.sh" "$B/bin/tunefleet-cuda-trial" --kernel kernels/cuda/flash_attn_fwd \
        --shape BATCH=4,HEADS=16,SEQ=4096 --set $set --budget 0.1 > "$out/flash-$set.log" 2>&1
    echo "flash $set rc=$?" >> "$out/flash-$set.log"
  done
fi

# The leading gemm configs and cuBLAS again, three times in fresh processes,
# with a longer budget: how stable is the ratio?
if want confirm; then
  for i in 1 2 3; do
    timeout 60 "$B/run.sh" "$B/bin/tunefleet-cuda-trial" --kernel kernels/cuda/gemm_f16 \
        --shape M=4096,N=4096,K=4096 --reference --budget 0.5 \
        --config MMA=1,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,WARPS_N=1,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0 \
        --config MMA=1,BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,WARPS_N=1,STAGES=5,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0 \
        --config MMA=0,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=2,WARPS_N=4,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0 \
        > "$out/confirm-$i.log" 2>&1
    echo "confirm $i rc=$?" >> "$out/confirm-$i.log"
  done
fi

if want torch; then
  timeout 60 python3 - > "$out/torch.log" 2>&1 <<'PY'
import torch
def bench(fn, n=50):
    for _ in range(5): fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(n):
        s.record(); fn(); e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 1e3)
    times.sort(); return times[len(times) // 2]
x = torch.empty(256 * 2**20, dtype=torch.float32, device="cuda").uniform_()
y = torch.empty_like(x)
t = bench(lambda: y.copy_(x))
print(f"torch copy 1 GiB -> 1 GiB: {2 * x.numel() * 4 / t / 1e9:.0f} GB/s (read + write)")
a = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
b = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
t = bench(lambda: a @ b.t())
print(f"torch matmul fp16 4096^3 (A @ B.T): {2 * 4096**3 / t / 1e12:.0f} TFLOP/s")
xs = torch.randn(32768, 4096, dtype=torch.float16, device="cuda")
t = bench(lambda: torch.softmax(xs, dim=-1))
print(f"torch softmax fp16 32768x4096: {2 * xs.numel() * 2 / t / 1e9:.0f} GB/s")
PY
fi

# ---- summary
echo "==== $(head -1 "$out/env.txt")"; sed -n 3p "$out/env.txt"
if [ -f "$out/tests.log" ]; then
  grep -E "^\[  (PASSED|FAILED|SKIPPED)  \]|^\[  FAILED  \] |tests rc=" "$out/tests.log" | head -20
  grep -E "^(faulty|unchecked|gemm 2048|cuBLAS 2048|kernels/)" "$out/tests.log" | head -30
fi
for k in gemm softmax flash-tune flash-progression confirm-1 confirm-2 confirm-3; do
  [ -f "$out/$k.log" ] || continue
  echo "---- $k"; grep -E "^(DEVICE|REFERENCE)|rc=" "$out/$k.log"
  grep -c "^RESULT OK" "$out/$k.log" | sed 's/^/ok configs: /'
  grep "^RESULT" "$out/$k.log" | grep -v "^RESULT OK" | head -5
  awk '/^$/{p=1;next} p' "$out/$k.log" | head -${TOP:-8}
done
[ -f "$out/torch.log" ] && { echo "---- torch"; cat "$out/torch.log"; }
if [ -f "$out/profile.log" ]; then
  echo "---- profile"
  grep -E "^profile |^  duration|^\[  (PASSED|FAILED|SKIPPED)  \]|profile rc=" "$out/profile.log"
fi
true

#!/bin/bash
# The whole-fleet benchmarks on the GPU machine, in one call: a coordinator
# (SQLite) and a CUDA worker on loopback tune each GPU kernel through
# bench/tune_bench, beside references measured in the same run (cuBLAS through
# the runner, device copy bandwidth and torch attention). Run from the
# repository root after TARGETS="tunefleet-coordinator tunefleet-worker
# tune_bench" scripts/gpu-bundle.sh BUILD_DIR bundle. Full logs under $OUT
# (or /tmp/gpu-bench); the tables are printed last. docs/benchmarks.md holds
# the figures. `share` (bench/library_share.py; not in the default list, it
# takes about ten minutes) tunes every kernel at the shapes of its targets
# and prints each one's share of the best library's speed, both timed in the
# same run; SHARE_ARGS passes it options (--only gemm, --gemm-shapes ...).
#   scripts/gpu-bench.sh [tests|refs|gemm|softmax|flash|faulty|share]...
#   (default: all but share)
set -u
STEPS=" ${*:-tests refs gemm softmax flash faulty} "
out=${OUT:-/tmp/gpu-bench}
mkdir -p "$out"
R=bundle/run.sh
BIN=bundle/bin
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,memory.total \
  --format=csv > "$out/env.txt" 2>&1
date -u +"%Y-%m-%dT%H:%M:%SZ" >> "$out/env.txt"

step() {  # step NAME SECONDS COMMAND...: runs, logs (appending), notes the exit code
  local name=$1 limit=$2; shift 2
  [[ "$STEPS" == *" ${name%%-*} "* ]] || return 0
  local start=$SECONDS
  timeout "$limit" "$@" >> "$out/${name%%-*}.log" 2>&1
  echo "$name: rc=$? in $((SECONDS - start)) s" >> "$out/env.txt"
}

step tests 200 "$R" "$BIN/cuda_backend_test" --gtest_brief=1
step refs-cublas 60 "$R" "$BIN/tunefleet-cuda-trial" --kernel kernels/cuda/gemm_f16 \
  --shape M=4096,N=4096,K=4096 --reference --budget 0.3 \
  --config MMA=0,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0,LOAD=0
step refs-torch 120 python3 - <<'PY'
import torch, torch.nn.functional as F
def bench(fn, n=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e) / 1e3)
    times.sort(); return times[len(times) // 2]
x = torch.empty(256 * 2**20, dtype=torch.float32, device="cuda").uniform_(-1, 1); y = torch.empty_like(x)
t = bench(lambda: y.copy_(x)); print(f"copy 1 GiB fp32: {2 * x.numel() * 4 / t / 1e9:.0f} GB/s (read + write), median {t*1e6:.1f} us")
q, k, v = (torch.randn(4, 16, 4096, 128, dtype=torch.float16, device="cuda") for _ in range(3))
flops = 4 * 4 * 16 * 4096 * 4096 * 128
for name, attr in [("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"),
                   ("efficient", "EFFICIENT_ATTENTION"), ("math", "MATH")]:
    backend = getattr(torch.nn.attention.SDPBackend, attr, None)
    try:
        with torch.nn.attention.sdpa_kernel(backend):
            t = bench(lambda: F.scaled_dot_product_attention(q, k, v), n=20)
        print(f"torch sdpa {name}: {flops / t / 1e12:.1f} TFLOP/s, median {t*1e3:.3f} ms")
    except Exception as e:
        print(f"torch sdpa {name}: unavailable ({e.__class__.__name__})")
a = torch.randn(8192, 8192, dtype=torch.float16, device="cuda")
t = bench(lambda: torch.softmax(a, dim=1)); print(f"torch softmax fp16 8192x8192: {2 * a.numel() * 2 / t / 1e9:.0f} GB/s")
PY
TB=("$R" "$BIN/tune_bench" --backend cuda --bin-dir "$PWD/$BIN")
step gemm 330 "${TB[@]}" --kernel kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096 \
  --strategy random --budget 64 --measure-budget 0.05 --repeat 5
step softmax 90 "${TB[@]}" --kernel kernels/cuda/softmax --shape ROWS=8192,COLS=8192 \
  --measure-budget 0.05
step flash 90 "${TB[@]}" --kernel kernels/cuda/flash_attn_fwd --shape BATCH=4,HEADS=16,SEQ=4096 \
  --config-set tune --measure-budget 0.1
step faulty 120 "${TB[@]}" --kernel tests/gpu/faulty --shape N=1048576 --measure-budget 0.05 \
  --finalists 0 --trials
# shellcheck disable=SC2086  # SHARE_ARGS is split into options on purpose
step share 1800 python3 bench/library_share.py --bin-dir "$BIN" --runner "$R" ${SHARE_ARGS:-}

cat "$out/env.txt"
[ -f "$out/tests.log" ] && tail -n 3 "$out/tests.log"
[ -f "$out/refs.log" ] && grep -E "^REFERENCE|^RESULT|GB/s|TFLOP/s" "$out/refs.log"
for name in gemm softmax flash faulty share; do
  [ -f "$out/$name.log" ] && { echo "== $name"; grep -v '^\[20' "$out/$name.log"; }
done

#!/bin/bash
# gemm_f16's TMA producer (MMA=3, LOAD=1) beside the cp.async one (LOAD=0)
# and cuBLAS, on one GPU, in one call: the gpu tier's gemm tests (each config
# checked against cuBLAS), then the same tiles with either producer timed in
# one tunefleet-cuda-trial process per shape (cuBLAS in the same process),
# twice, the second pass in the reverse order. Logs under $OUT (or
# /tmp/gemm-tma); prints a markdown table of median microseconds last.
# Run from the repository root after scripts/gpu-bundle.sh BUILD_DIR bundle.
#   bench/gemm-tma-gpu.sh [SHAPE ...]
set -u
out=${OUT:-/tmp/gemm-tma}
mkdir -p "$out"
R=bundle/run.sh
BIN=bundle/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$out/env.txt" 2>&1
date -u +"%Y-%m-%dT%H:%M:%SZ" >> "$out/env.txt"

timeout 400 "$R" "$BIN/cuda_backend_test" --gtest_brief=1 \
  --gtest_filter='PlanTensorMap*:CudaSpaces*:CudaRunner.Gemm*' > "$out/tests.log" 2>&1
echo "tests: rc=$?" >> "$out/env.txt"

large=(
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,STAGES=8,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=6,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=256,BLOCK_K=64,WARPS_M=4,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=0,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,STAGES=6,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=3,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,WARPS_M=8,STAGES=6,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=1"
  "BLOCK_M=128,BLOCK_N=192,BLOCK_K=64,WARPS_M=8,STAGES=5,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=192,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=2,PERSISTENT=1"
)
decode=(
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=1,EPILOGUE=1,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,EPILOGUE=1,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,WARPS_M=4,STAGES=6,GROUP_M=1,SPLIT_K=2,EPILOGUE=0,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=4,EPILOGUE=0,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,WARPS_M=4,STAGES=6,GROUP_M=1,SPLIT_K=1,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=4,GROUP_M=1,SPLIT_K=4,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,WARPS_M=4,STAGES=6,GROUP_M=1,SPLIT_K=8,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,WARPS_M=4,STAGES=4,GROUP_M=1,SPLIT_K=4,EPILOGUE=2,PERSISTENT=0"
  "BLOCK_M=128,BLOCK_N=64,BLOCK_K=64,WARPS_M=8,STAGES=8,GROUP_M=8,SPLIT_K=2,EPILOGUE=2,PERSISTENT=0"
)
# The swapped decode path (MMA=4), its tiles named by the rows they take.
swapped=(
  "BLOCK_M=16,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=1"
  "BLOCK_M=16,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2"
  "BLOCK_M=16,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=6,GROUP_M=1,SPLIT_K=4"
  "BLOCK_M=16,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=8,GROUP_M=1,SPLIT_K=2"
  "BLOCK_M=16,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=6,GROUP_M=1,SPLIT_K=4"
  "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2"
  "BLOCK_M=64,BLOCK_N=64,BLOCK_K=64,WARPS_M=4,STAGES=8,GROUP_M=1,SPLIT_K=2"
  "BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,WARPS_M=8,STAGES=6,GROUP_M=1,SPLIT_K=2"
)
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(M=4096,N=4096,K=4096 M=8192,N=8192,K=8192
  M=3072,N=5120,K=2048 M=4096,N=4096,K=1024 M=4096,N=4096,K=8192 M=1000,N=1032,K=1000
  M=1,N=4096,K=4096 M=16,N=4096,K=4096 M=64,N=4096,K=4096 M=128,N=4096,K=4096)
for shape in "${shapes[@]}"; do
  m=${shape#M=}; m=${m%%,*}
  if [ "$m" -le 128 ]; then tiles=("${decode[@]}"); else tiles=("${large[@]}"); fi
  args=()
  for t in "${tiles[@]}"; do
    for load in 0 1; do args+=(--config "MMA=3,WARPS_N=1,$t,LOAD=$load"); done
  done
  if [ "$m" -le 128 ]; then
    for t in "${swapped[@]}"; do
      for load in 0 1; do
        args+=(--config "MMA=4,WARPS_N=1,$t,EPILOGUE=0,PERSISTENT=0,LOAD=$load")
      done
    done
  fi
  [ "$m" -gt 128 ] && args+=(--config "MMA=1,WARPS_N=1,BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=8,STAGES=4,GROUP_M=8,SPLIT_K=1,EPILOGUE=1,PERSISTENT=0,LOAD=0")
  reversed=()
  for ((i = ${#args[@]} - 1; i >= 1; i -= 2)); do reversed+=(--config "${args[i]}"); done
  for pass in 1 2; do
    if [ $pass -eq 1 ]; then list=("${args[@]}"); else list=("${reversed[@]}"); fi
    timeout 240 "$R" "$BIN/tunefleet-cuda-trial" --kernel kernels/cuda/gemm_f16 --shape "$shape" \
      --reference --budget 0.15 --cache "${CUBIN_CACHE:-/tmp/gemm-tma-cubins}" "${list[@]}" \
      > "$out/pass$pass-$shape.log" 2>&1
    echo "$shape pass $pass: rc=$?" >> "$out/env.txt"
  done
done

python3 - "$out" "${shapes[@]}" <<'PY'
import re, sys, glob
out, shapes = sys.argv[1], sys.argv[2:]
print("| shape | config (MMA=3 unless named) | LOAD=0 µs | LOAD=1 µs | cuBLAS µs | best share |")
print("|---|---|---|---|---|---|")
for shape in shapes:
    runs, refs = {}, []
    for p in (1, 2):
        try:
            text = open(f"{out}/pass{p}-{shape}.log").read()
        except OSError:
            continue
        refs += [float(x) for x in re.findall(r"^REFERENCE median_us=([\d.]+)", text, re.M)]
        for status, us, cfg in re.findall(r"^RESULT (\S+)\s+median_us=([\d.]+).*?config=(\S+)", text, re.M):
            runs.setdefault(cfg, []).append(us if status == "OK" else status)
    ref = min(refs) if refs else float("nan")
    pairs = {}
    for cfg, times in runs.items():
        key = re.sub(r",?LOAD=\d", "", cfg)
        load = re.search(r"LOAD=(\d)", cfg).group(1)
        pairs.setdefault(key, {})[load] = " / ".join(str(t) for t in times)
    best = min((float(t) for ts in runs.values() for t in ts if re.match(r"^[\d.]+$", str(t))),
               default=float("nan"))
    for key, loads in pairs.items():
        short = key.replace("WARPS_N=1,", "").replace("MMA=3,", "")
        print(f"| {shape} | {short} | {loads.get('0', '-')} | {loads.get('1', '-')} | "
              f"{ref:.1f} | {ref / best:.3f} |")
PY
cat "$out/env.txt"
tail -n 5 "$out/tests.log"

#!/bin/bash
# The fleet's throughput on a host of four GPUs and 64 cores, in one call
# (docs/benchmarks.md, "A fleet faster than its parts"), 16 cores per GPU:
#   pools    a CUDA worker's pool sizes under taskset -c 0, taskset -c 0-15,
#            no pinning, and a cgroup v2 cpu.max of "200000 100000";
#   gemm     gemm_f16 4096^3, 192 random configs, cold then warm, on 1, 2 and
#            4 GPUs (one worker per host, and one per GPU);
#   small    gemm_f16 4096^3, 48 random configs, one GPU, cold then warm;
#   triton   bench/triton_matmul_bench.py (48 configs against
#            @triton.autotune) on one GPU pinned to 16 cores, and on 4 GPUs;
#            SETTLE=S lets the workers run S seconds before the job (a fleet
#            that has been up a while: benchmark children started);
#   sweep    gemm_f16 over six shapes (M = 16 ... 8192, N = K = 4096), 48
#            random configs each, on 4 GPUs: one job after another against
#            one sweep, and the sweep on one GPU.
# With BASE=DIR (the binaries of an earlier build, sharing bundle/lib), the
# gemm, small and triton runs are repeated with them in the same call: the
# baseline measured beside the figures.
# Run from the repository root after TARGETS="tunefleet-coordinator
# tunefleet-worker tune_bench" scripts/gpu-bundle.sh build bundle, with
# build/python copied to bundle/python.
#   bench/fleet-throughput-gpu.sh [pools|gemm|small|triton|sweep]...  (default: all)
# Logs under $OUT (default /tmp/fleet-throughput); tables printed last.
set -u
STEPS=" ${*:-pools gemm small triton sweep} "
out=${OUT:-/tmp/fleet-throughput}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export TUNEFLEET_PYTHON=${TUNEFLEET_PYTHON:-$(command -v python3)}
export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
want() { [[ "$STEPS" == *" $1 "* ]]; }
{ date -u; nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
  stat -fc %T /sys/fs/cgroup; } > "$out/env.txt" 2>&1
cat "$out/env.txt"
builds=("new:$PWD/bundle/bin")
[ -n "${BASE:-}" ] && builds+=("base:$(realpath "$BASE")")
table="$out/table.md"
[ -f "$table" ] || { echo "| build | what | GPUs | layout | run | wall s | ok/trials | device idle s | best ms |"
                     echo "|---|---|---|---|---|---|---|---|---|"; } > "$table"

# pool_gauges PREFIX...: starts a CUDA worker (no coordinator) under PREFIX and
# prints its tunefleet_worker_{usable_cpus,compile_threads} gauges.
pool_gauges() {
  local dir; dir=$(mktemp -d)
  "$@" bundle/bin/tunefleet-worker --backend cuda --insecure \
    --coordinator 127.0.0.1:1 --cache-dir "$dir" --sandbox none --metrics-port 0 \
    --metrics-host 127.0.0.1 --metrics-address-file "$dir/metrics" > "$dir/log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ -s "$dir/metrics" ] && break; sleep 0.1; done
  python3 - "$dir/metrics" <<'PY'
import sys, urllib.request
address = open(sys.argv[1]).read().strip()
text = urllib.request.urlopen("http://%s/metrics" % address, timeout=5).read().decode()
print(" ".join(l for l in text.splitlines()
               if l.startswith(("tunefleet_worker_usable_cpus", "tunefleet_worker_compile_threads"))))
PY
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
}

# gemm BUILD BINDIR WHAT GPUS LAYOUT CONFIGS: one tune_bench of gemm_f16, cold
# then warm, its rows appended to the table.
gemm() {
  local build=$1 bin=$2 what=$3 gpus=$4 layout=$5 configs=$6
  local cpus="0-$((gpus * 16 - 1))" flags=()
  [ "$layout" = per-gpu ] && flags=(--worker-per-gpu "$gpus")
  local log="$out/$what-$build-${gpus}gpu-$layout.log"
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 240 taskset -c "$cpus" \
    "$bin/tune_bench" --backend cuda --bin-dir "$bin" --kernel kernels/cuda/gemm_f16 \
    --shape M=4096,N=4096,K=4096 --strategy random --budget "$configs" \
    --measure-budget 0.1 --repeat 2 "${flags[@]}" > "$log" 2>&1
  # | run | state | wall s | ok/trials | cut | configs/s | compile s | measured s | pool idle | device idle | best config | best ms |
  grep -E '^\| [0-9]+ \| [A-Z]+ \| ' "$log" | awk -F'|' -v b="$build" -v w="$what" -v g="$gpus" -v l="$layout" \
    '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", b, w, g, l, $2+0, $4+0, $5, $11+0, $13+0}' \
    >> "$table"
}

if want pools; then
  echo "== pools"
  { echo "taskset -c 0:"; pool_gauges taskset -c 0
    echo "taskset -c 0-15:"; pool_gauges taskset -c 0-15
    echo "no pinning:"; pool_gauges env
    cg=/sys/fs/cgroup/tunefleet-bench
    if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && mkdir -p $cg 2>/dev/null &&
       { grep -qw cpu $cg/cgroup.controllers || echo +cpu > /sys/fs/cgroup/cgroup.subtree_control; } &&
       echo "200000 100000" > $cg/cpu.max; then
      echo "cgroup v2 cpu.max $(cat $cg/cpu.max):"
      pool_gauges sh -c "echo \$\$ > $cg/cgroup.procs && exec \"\$@\"" sh
      rmdir $cg 2>/dev/null
    else
      echo "cgroup v2 cpu.max: no writable cgroup v2 with the cpu controller here"
    fi; } 2>&1 | tee -a "$out/pools.log"
fi

if want gemm; then
  for b in "${builds[@]}"; do
    gemm "${b%%:*}" "${b#*:}" gemm192 1 shared 192
    gemm "${b%%:*}" "${b#*:}" gemm192 4 shared 192
  done
  gemm new "$PWD/bundle/bin" gemm192 2 shared 192
  gemm new "$PWD/bundle/bin" gemm192 4 per-gpu 192
fi

if want small; then
  for b in "${builds[@]}"; do gemm "${b%%:*}" "${b#*:}" gemm48 1 shared 48; done
fi

if want triton; then
  summary() {  # summary BUILD WHAT DIR: a row of the Triton table
    python3 - "$@" <<'PY' >> "$out/triton.md"
import json, sys
build, what, d = sys.argv[1:4]
try:
    s = json.load(open(d + "/summary.json"))
    print("| %s | %s | %.2f | %.2f | %.2f | %.2fx | %.1f | %.1f | %s |" % (
        build, what, s["fleet_tune_s"], s["autotune_tune_s"], s["fleet_process_s"],
        s["speedup_tune"], s["fleet_tflops"], s["autotune_tflops"],
        "same" if s["fleet_winner"] == s["autotune_winner"] else "gap %.1f%%" % (100 * s["winner_gap"])))
except Exception as e:
    print("| %s | %s | failed: %s |" % (build, what, e))
PY
  }
  echo "| build | run | fleet tune s | autotune s | fleet process s | speed-up | fleet TFLOP/s | autotune TFLOP/s | winners |" > "$out/triton.md"
  echo "|---|---|---|---|---|---|---|---|---|" >> "$out/triton.md"
  TM=("$TUNEFLEET_PYTHON" bench/triton_matmul_bench.py --package-dir bundle/python
      --settle-seconds "${SETTLE:-0}")
  baseline=()
  for b in "${builds[@]}"; do
    name=${b%%:*}
    CUDA_VISIBLE_DEVICES=0 timeout 200 taskset -c 0-15 "${TM[@]}" --bin-dir "${b#*:}" \
      --out "$out/triton-$name-16" "${baseline[@]}" > "$out/triton-$name-16.log" 2>&1
    summary "$name" "1 GPU, 16 cores" "$out/triton-$name-16"
    baseline=(--baseline-from "$out/triton-new-16/summary.json")
  done
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 "${TM[@]}" --bin-dir "$PWD/bundle/bin" \
    --out "$out/triton-new-4gpu" --tune-bench-flag=--worker-per-gpu=4 "${baseline[@]}" \
    > "$out/triton-new-4gpu.log" 2>&1
  summary new "4 GPUs, a worker per GPU, 16 cores each" "$out/triton-new-4gpu"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 "${TM[@]}" --bin-dir "$PWD/bundle/bin" \
    --out "$out/triton-new-4gpu-shared" "${baseline[@]}" > "$out/triton-new-4gpu-shared.log" 2>&1
  summary new "4 GPUs, one worker, 64 cores" "$out/triton-new-4gpu-shared"
  cat "$out/triton.md"
fi
if want sweep; then
  shapes=()
  for m in 16 64 256 1024 4096 8192; do shapes+=(--shape "M=$m,N=4096,K=4096"); done
  SW=(bundle/bin/tune_bench --backend cuda --bin-dir "$PWD/bundle/bin" --kernel kernels/cuda/gemm_f16
      --strategy random --budget 48 --measure-budget 0.1 "${shapes[@]}")
  for run in "4 one-after-another" "4 sweep --sweep" "1 sweep --sweep"; do
    set -- $run
    gpus=$1 name=$2; shift 2
    began=$(date +%s.%N)
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 300 taskset -c "0-$((gpus * 16 - 1))" \
      "${SW[@]}" "$@" > "$out/sweep-$gpus-$name.log" 2>&1
    echo "== $gpus GPU(s), $name: $(python3 -c "import time; print(round(time.time() - $began, 2))") s in all (fleet start included)"
    grep -E '^\| (M=|[0-9]+ \|)|^sweep wall' "$out/sweep-$gpus-$name.log"
  done
fi
cat "$table"

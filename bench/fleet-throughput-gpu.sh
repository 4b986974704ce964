#!/bin/bash
# The fleet's throughput on a host of four GPUs and 64 cores, in one call
# (docs/benchmarks.md, "A fleet faster than its parts"):
#   pools    a CUDA worker's pool sizes under taskset -c 0, taskset -c 0-15
#            and a cgroup v2 cpu.max of "200000 100000";
#   scaling  bench/gpu-scaling.sh: gemm_f16 4096^3, 192 random configs, 1/2/4
#            GPUs, one worker per host or one per GPU, 16 cores per GPU;
#            the same on 1 and 4 GPUs sampling to the budget (--precision=-1,
#            protocol 3's rule) as the baseline;
#   small    gemm_f16 4096^3, 48 random configs, one GPU, cold then warm;
#   triton   bench/triton_matmul_bench.py pinned to 16 cores (the worker's
#            pools by its CPUs, then forced to 64 threads as the host's count
#            gave), and on 4 GPUs (one worker per GPU, 64 cores).
# Run from the repository root after TARGETS="tunefleet-coordinator
# tunefleet-worker tune_bench" scripts/gpu-bundle.sh build bundle and
# build/python copied to bundle/python.
#   bench/fleet-throughput-gpu.sh [pools|scaling|small|triton]...  (default: all)
set -u
STEPS=" ${*:-pools scaling small triton} "
out=${OUT:-/tmp/fleet-throughput}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export TUNEFLEET_PYTHON=${TUNEFLEET_PYTHON:-$(command -v python3)}
want() { [[ "$STEPS" == *" $1 "* ]]; }
{ date -u; nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
  stat -fc %T /sys/fs/cgroup; cat /proc/self/cgroup; } > "$out/env.txt" 2>&1
cat "$out/env.txt"

# pool_gauges PREFIX...: starts a CUDA worker (no coordinator) under PREFIX and
# prints its tunefleet_worker_{usable_cpus,compile_threads} gauges.
pool_gauges() {
  local dir; dir=$(mktemp -d)
  "$@" bundle/run.sh bundle/bin/tunefleet-worker --backend cuda --insecure \
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
  grep -m1 "usable CPUs" "$dir/log"
}

if want pools; then
  echo "== pools" | tee -a "$out/pools.log"
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

if want scaling; then
  echo "== scaling"
  OUT="$out/scaling" bench/gpu-scaling.sh 1 2 4
  echo "== scaling, sampling to the budget (--precision=-1)"
  OUT="$out/scaling-budget" LAYOUTS=shared EXTRA="--worker-flag=--precision=-1" \
    bench/gpu-scaling.sh 1 4
fi

if want small; then
  echo "== small: 48 random configs, one GPU, 16 cores"
  CUDA_VISIBLE_DEVICES=0 timeout 200 taskset -c 0-15 bundle/run.sh bundle/bin/tune_bench \
    --backend cuda --bin-dir "$PWD/bundle/bin" --kernel kernels/cuda/gemm_f16 \
    --shape M=4096,N=4096,K=4096 --strategy random --budget 48 --measure-budget 0.1 \
    --repeat 2 > "$out/small.log" 2>&1
  grep -E '^\| (run|[0-9]+) ' "$out/small.log"
fi

if want triton; then
  export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  TM=("$TUNEFLEET_PYTHON" bench/triton_matmul_bench.py --bin-dir bundle/bin
      --package-dir bundle/python)
  echo "== triton: 16 cores, pools by the worker's CPUs"
  CUDA_VISIBLE_DEVICES=0 timeout 200 taskset -c 0-15 "${TM[@]}" --out "$out/triton-16" \
    > "$out/triton-16.log" 2>&1
  tail -n 22 "$out/triton-16.log" | grep '^|'
  echo "== triton: 16 cores, 64 compile threads (the host's count)"
  CUDA_VISIBLE_DEVICES=0 timeout 200 taskset -c 0-15 "${TM[@]}" --out "$out/triton-16x64" \
    --worker-flag=--compile-threads=64 --baseline-from "$out/triton-16/summary.json" \
    > "$out/triton-16x64.log" 2>&1
  tail -n 22 "$out/triton-16x64.log" | grep '^|'
  echo "== triton: 4 GPUs, one worker per GPU, 64 cores"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 "${TM[@]}" --out "$out/triton-4gpu" \
    --tune-bench-flag=--worker-per-gpu=4 --baseline-from "$out/triton-16/summary.json" \
    > "$out/triton-4gpu.log" 2>&1
  tail -n 22 "$out/triton-4gpu.log" | grep '^|'
fi

#!/bin/bash
# The sandbox on a GPU machine (docs/operations.md, "Job code is sandboxed"):
# every GPU process runs under prlimit + env -i + bwrap. Three checks in one
# call: the CUDA backend tests (bwrap compiles and benchmark children), a
# short gemm_f16 tune through a fleet whose worker runs with its default
# --sandbox=bwrap, and the python tier test with --sandbox=bwrap.
# Run from the repository root after
#   TARGETS="tunefleet-coordinator tunefleet-worker tune_bench" scripts/gpu-bundle.sh build bundle
#   cp -r build/python bundle/python
# Logs under $OUT.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/sandbox-gpu-check}
mkdir -p "$OUT"
export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; which bwrap prlimit env; bwrap --version; uname -r; id -u; } 2>&1
echo "== cuda_backend_test"
timeout 240 bundle/run.sh bundle/bin/cuda_backend_test > "$OUT"/cuda_backend_test.log 2>&1; echo "rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$OUT"/cuda_backend_test.log | head -20
echo "== tune_bench cuda"
timeout 200 bundle/bin/tune_bench --backend cuda --bin-dir bundle/bin --kernel kernels/cuda/gemm_f16 \
  --shape M=2048,N=2048,K=2048 --strategy random --budget 24 --measure-budget 0.05 > "$OUT"/tune.log 2>&1; echo "rc=$?"
tail -30 "$OUT"/tune.log
echo "== python test (bwrap)"
SANDBOX=bwrap TEST_LIMIT=200 OUT="$OUT" bash bench/python_backend_gpu_run.sh test 2>&1 | tail -15
tail -30 "$OUT"/gpu_test.log

#!/bin/bash
# One GPU-machine run of the python backend (docs/benchmarks.md): the cache
# warm-up check, the gpu tier test, then bench/triton_matmul_bench.py.
# Expects a bundle with tunefleet-coordinator, tunefleet-worker, tune_bench
# in bundle/bin (scripts/gpu-bundle.sh, TARGETS=...) and the assembled
# Python package (build/python) in bundle/python.
#   bench/python_backend_gpu_run.sh [warm|test|bench|all]...
# Writes logs and the summary under $OUT (or ./out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out}
mkdir -p "$out"
parts=${*:-all}
want() { [[ " $parts " == *" $1 "* || " $parts " == *" all "* ]]; }
export PATH="$PWD/bundle/bin:$PATH" LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNEFLEET_PYTHON_PACKAGE="$PWD/bundle/python" PYTHONUNBUFFERED=1
export TUNEFLEET_PYTHON=${TUNEFLEET_PYTHON:-$(command -v python3)}
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; nproc
"$TUNEFLEET_PYTHON" -c 'import sys, torch, triton, google.protobuf as p; print(sys.version.split()[0], torch.__version__, triton.__version__, "protobuf", p.__version__)'
PYTHONPATH=bundle/python "$TUNEFLEET_PYTHON" -m tunefleet.backend.probe devices
ls -l "$TUNEFLEET_PYTHON"; readlink -f "$TUNEFLEET_PYTHON"
rc=0
if want warm; then
  echo "== warm"; PYTHONPATH=bundle/python timeout 120 "$TUNEFLEET_PYTHON" bench/python_warm_check.py 2>&1 | tail -20
fi
if want test; then
  echo "== test"; timeout "${TEST_LIMIT:-260}" "$TUNEFLEET_PYTHON" tests/gpu/python_backend_test.py \
      --bin-dir bundle/bin --package-dir bundle/python --sandbox "${SANDBOX:-none}" \
      > "$out/gpu_test.log" 2>&1
  rc=$?
  grep -E '^(ok|FAIL|SKIP|all|[0-9]+ check)' "$out/gpu_test.log"; echo "test exit $rc"
fi
if want bench; then
  echo "== bench"; timeout "${BENCH_LIMIT:-300}" "$TUNEFLEET_PYTHON" bench/triton_matmul_bench.py \
      --bin-dir bundle/bin --package-dir bundle/python --out "$out" --sandbox "${SANDBOX:-none}" \
      --settle-seconds "${SETTLE:-0}" \
      > "$out/bench.log" 2>&1
  echo "bench exit $?"; grep -v '^| [A-Z]*=\|^|---\|^| config' "$out/bench.log" | tail -45
fi
# The fleets' logs of any run that failed (tune_bench keeps its dir then).
logs=$(ls -d /tmp/tunefleet-bench-* 2>/dev/null)
[ -n "$logs" ] && tar czf "$out/fleet-logs.tgz" --exclude='*.zip' --exclude='triton' $logs 2>/dev/null
exit $rc

#!/bin/bash
# An installed GPU worker on a GPU machine: the bundle's programs laid out
# as `cmake --install` lays them out (bin/, libexec/tunefleet/tunefleet-nvrtc,
# the Python package in lib/python3.11/dist-packages; nothing beside the
# worker but the other programs), then:
#   1. tunefleet-worker --preflight for the cuda and the python backends;
#   2. a TLS fleet of that coordinator and a CUDA worker, `tunectl health`,
#      and a short gemm_f16 tune submitted with tunectl and a submit token.
# Run from the repository root after
#   TARGETS="tunefleet-coordinator tunefleet-worker tunectl" scripts/gpu-bundle.sh build bundle
#   cp -r build/python bundle/python
# Logs under $OUT.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/installed-gpu-check}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PWD/bundle/bin:$PATH"  # the bundled bwrap
prefix=$(mktemp -d)/prefix
mkdir -p "$prefix/bin" "$prefix/libexec/tunefleet" "$prefix/lib/python3.11/dist-packages"
cp bundle/bin/tunefleet-coordinator bundle/bin/tunefleet-worker bundle/bin/tunectl "$prefix/bin/"
cp bundle/bin/tunefleet-nvrtc "$prefix/libexec/tunefleet/"
cp -r bundle/python/tunefleet "$prefix/lib/python3.11/dist-packages/"
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; find "$prefix" -maxdepth 3 | sort; } 2>&1

echo "== preflight cuda"
"$prefix/bin/tunefleet-worker" --preflight --backend cuda --cache-dir "$OUT/cache-cuda"; echo "rc=$?"
echo "== preflight python"
"$prefix/bin/tunefleet-worker" --preflight --backend python --python "$(command -v python3)" \
  --cache-dir "$OUT/cache-python" 2>&1 | grep -v "^20"; echo "rc=${PIPESTATUS[0]}"

echo "== fleet"
work=$(mktemp -d)
pids=()
trap 'for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done; wait' EXIT
scripts/dev-ca.sh "$work/ca" coordinator && scripts/dev-ca.sh "$work/ca" worker gpu-worker
"$prefix/bin/tunefleet-coordinator" --listen 127.0.0.1:0 --data-dir "$work/data" \
  --address-file "$work/address" --metrics-listen 127.0.0.1:0 \
  --tls-cert "$work/ca/coordinator.crt" --tls-key "$work/ca/coordinator.key" \
  --tls-client-ca "$work/ca/ca.crt" --admin-token-file "$work/admin.token" \
  >"$OUT/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/address" ] && break; sleep 0.1; done
address=$(cat "$work/address")
"$prefix/bin/tunefleet-worker" --coordinator "$address" --backend cuda \
  --cache-dir "$work/worker-cache" --name gpu-worker --tls-ca "$work/ca/ca.crt" \
  --tls-cert "$work/ca/worker-gpu-worker.crt" --tls-key "$work/ca/worker-gpu-worker.key" \
  >"$OUT/worker.log" 2>&1 &
pids+=($!)
export TUNEFLEET_SERVER="$address" TUNEFLEET_CA_FILE="$work/ca/ca.crt" HOME="$work"
"$prefix/bin/tunectl" health; echo "health rc=$?"
TUNEFLEET_TOKEN=$("$prefix/bin/tunectl" --token-file "$work/admin.token" \
  admin token create --role submit --name gpu-check)
export TUNEFLEET_TOKEN
time timeout 240 "$prefix/bin/tunectl" -q submit kernels/cuda/gemm_f16 \
  --shape M=2048,N=2048,K=2048 --strategy random --budget 16 --seed 1 --wait
echo "submit rc=$?"
"$prefix/bin/tunectl" best gemm_f16 --shape M=2048,N=2048,K=2048
"$prefix/bin/tunectl" workers
tail -5 "$OUT/worker.log"

#!/usr/bin/env bash
# The demo: sets up and builds tunefleet, then a coordinator (embedded SQLite)
# and two workers on loopback tune kernels/cpu/matmul for one shape, and the
# best config, its speed-up over the default and the five best are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BIN="${TUNEFLEET_BUILD_DIR:-build}/bin"
SHAPE="${DEMO_SHAPE:-M=384,N=384,K=384}"
WORK="$(mktemp -d -t tunefleet-demo-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN/tunefleet-coordinator" --listen 127.0.0.1:0 --data-dir "$WORK/data" \
  --address-file "$WORK/address" --metrics-listen 127.0.0.1:0 >"$WORK/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/address" ] && break; sleep 0.1; done
ADDRESS="$(cat "$WORK/address")"
echo "coordinator on $ADDRESS (SQLite in $WORK/data)" >&2
for i in 1 2; do
  "$BIN/tunefleet-worker" --coordinator "$ADDRESS" --cache-dir "$WORK/cache-$i" \
    --name "demo-worker-$i" --compile-threads 1 >"$WORK/worker-$i.log" 2>&1 &
  pids+=($!)
done

export TUNEFLEET_SERVER="$ADDRESS"
"$BIN/tunectl" submit kernels/cpu/matmul --shape "$SHAPE" \
  --strategy random --budget "${DEMO_BUDGET:-40}" --seed 1 --wait
echo
"$BIN/tunectl" best matmul --shape "$SHAPE"

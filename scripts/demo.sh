#!/usr/bin/env bash
# The demo: sets up and builds tunefleet, then a coordinator (embedded SQLite)
# and two workers on loopback tune kernels/cpu/matmul for one shape, and the
# best config, its speed-up over the default and the five best are printed.
# Everything runs over TLS with a development CA: workers present their
# certificates, and the demo's user a submit token the admin created.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: in TUNEFLEET_BUILD_DIR when set, else in the test
# build when scripts/test.sh made one (an incremental build there), else in
# build-demo/ without optimisation or debug information and with the sources
# of each library compiled a batch at a time (a unity build): about three
# times as fast to compile (docs/benchmarks.md). scripts/test.sh builds the
# rest.
PROGRAMS=(tunefleet-coordinator tunefleet-worker tunectl)
BUILD_DIR="${TUNEFLEET_BUILD_DIR:-build}"
if [ -z "${TUNEFLEET_BUILD_DIR:-}" ] && [ ! -x "$BUILD_DIR/bin/tunefleet-coordinator" ]; then
  BUILD_DIR="${TUNEFLEET_DEMO_BUILD_DIR:-build-demo}"
  export TUNEFLEET_BUILD_TYPE="${TUNEFLEET_BUILD_TYPE:-None}"
  export TUNEFLEET_UNITY_BUILD="${TUNEFLEET_UNITY_BUILD:-ON}"
fi
TUNEFLEET_BUILD_DIR="$BUILD_DIR" scripts/setup.sh "${PROGRAMS[@]}"
BIN="$BUILD_DIR/bin"
SHAPE="${DEMO_SHAPE:-M=384,N=384,K=384}"
WORK="$(mktemp -d -t tunefleet-demo-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

CA="$WORK/ca"
scripts/dev-ca.sh "$CA" coordinator
"$BIN/tunefleet-coordinator" --listen 127.0.0.1:0 --data-dir "$WORK/data" \
  --address-file "$WORK/address" --metrics-listen 127.0.0.1:0 \
  --tls-cert "$CA/coordinator.crt" --tls-key "$CA/coordinator.key" --tls-client-ca "$CA/ca.crt" \
  --admin-token-file "$WORK/admin.token" >"$WORK/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/address" ] && break; sleep 0.1; done
ADDRESS="$(cat "$WORK/address")"
echo "coordinator on $ADDRESS (SQLite in $WORK/data)" >&2
for i in 1 2; do
  scripts/dev-ca.sh "$CA" worker "demo-worker-$i"
  "$BIN/tunefleet-worker" --coordinator "$ADDRESS" --cache-dir "$WORK/cache-$i" \
    --name "demo-worker-$i" --compile-threads 1 --tls-ca "$CA/ca.crt" \
    --tls-cert "$CA/worker-demo-worker-$i.crt" --tls-key "$CA/worker-demo-worker-$i.key" \
    >"$WORK/worker-$i.log" 2>&1 &
  pids+=($!)
done

export TUNEFLEET_SERVER="$ADDRESS" TUNEFLEET_CA_FILE="$CA/ca.crt"
# The admin (the token the coordinator wrote) makes the demo user a token.
TUNEFLEET_TOKEN="$("$BIN/tunectl" --token-file "$WORK/admin.token" \
  admin token create --role submit --name demo)"
export TUNEFLEET_TOKEN
"$BIN/tunectl" submit kernels/cpu/matmul --shape "$SHAPE" \
  --strategy random --budget "${DEMO_BUDGET:-40}" --seed 1 --wait
echo
"$BIN/tunectl" best matmul --shape "$SHAPE"

#!/bin/bash
# How soon a worker is back after its coordinator restarts
# (docs/benchmarks.md, "Worker reconnect"): a coordinator (--insecure,
# SQLite) and one CPU worker on loopback; the coordinator is killed (SIGKILL),
# kept down DOWN seconds (default 3), and started again on the same port,
# RUNS times (default 5). Prints, per run, the seconds from the new
# coordinator's start until the worker registered with it again.
#   bench/worker-reconnect.sh [BUILD_DIR]   (default build)
set -u
cd "$(dirname "$0")/.." || exit 1
bin=${1:-build}/bin
runs=${RUNS:-5}
down=${DOWN:-3}
work=$(mktemp -d -t tunefleet-reconnect-XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
coordinator=
worker=
cleanup() {
  [ -n "$worker" ] && kill "$worker" 2>/dev/null
  [ -n "$coordinator" ] && kill "$coordinator" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
start_coordinator() {
  "$bin/tunefleet-coordinator" --insecure --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --heartbeat-ms 1000 >>"$work/coordinator.log" 2>&1 &
  coordinator=$!
}
registrations() {
  local count
  count=$(grep -c "registered as worker" "$work/worker.log" 2>/dev/null)
  echo "${count:-0}"
}

start_coordinator
sleep 1
"$bin/tunefleet-worker" --coordinator "127.0.0.1:$port" --cache-dir "$work/cache" --name reconnect \
  --sandbox none --insecure >"$work/worker.log" 2>&1 &
worker=$!
for _ in $(seq 100); do [ "$(registrations)" -ge 1 ] && break; sleep 0.1; done
echo "| run | coordinator down s | worker back after s |"
echo "|---|---|---|"
for run in $(seq "$runs"); do
  before=$(registrations)
  kill -9 "$coordinator"; wait "$coordinator" 2>/dev/null
  sleep "$down"
  start=$(date +%s.%N)
  start_coordinator
  back=
  for _ in $(seq 600); do
    if [ "$(registrations)" -gt "$before" ]; then back=$(date +%s.%N); break; fi
    sleep 0.05
  done
  if [ -z "$back" ]; then echo "| $run | $down | not back within 30 s |"; continue; fi
  printf '| %d | %s | %.1f |\n' "$run" "$down" "$(echo "$back - $start" | bc -l)"
  sleep 2
done

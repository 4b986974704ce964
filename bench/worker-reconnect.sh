#!/bin/bash
# How soon a worker is back after its coordinator restarts
# (docs/benchmarks.md, "Worker reconnect"): a coordinator (--insecure,
# SQLite) and one CPU worker on loopback; the coordinator is killed (SIGKILL),
# kept down DOWN seconds (default 3), and started again on the same port,
# RUNS times (default 5). Prints, per run, the seconds from the new
# coordinator's start until the worker registered with it again. With
# JOB=1 a long random job (kernels/cpu/matmul) runs across the restarts,
# and each row also gives the leases the new coordinator adopted from their
# receipts and the results measured meanwhile that they kept; at the end,
# the job's stored trials against its distinct configs (every config once).
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
job=
if [ "${JOB:-0}" = 1 ]; then
  job=$("$bin/tunectl" --server "127.0.0.1:$port" --insecure -o json submit kernels/cpu/matmul \
    --shape M=128,N=128,K=128 --strategy random --budget 400 --seed 3 |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  sleep 3
  echo "| run | coordinator down s | worker back after s | leases adopted | results kept |"
  echo "|---|---|---|---|---|"
else
  echo "| run | coordinator down s | worker back after s |"
  echo "|---|---|---|"
fi
# The adoptions the coordinator's log records from line $1 on: "LEASES RESULTS".
adopted() {
  tail -n "+$1" "$work/coordinator.log" | grep "of another coordinator process adopted" |
    sed -E 's/.*: ([0-9]+) result\(s\) measured meanwhile kept/\1/' |
    awk '{n++; r+=$1} END {printf "%d %d", n, r}'
}
for run in $(seq "$runs"); do
  before=$(registrations)
  kill -9 "$coordinator"; wait "$coordinator" 2>/dev/null
  sleep "$down"
  start=$(date +%s.%N)
  log_from=$(( $(wc -l <"$work/coordinator.log") + 1 ))
  start_coordinator
  back=
  for _ in $(seq 600); do
    if [ "$(registrations)" -gt "$before" ]; then back=$(date +%s.%N); break; fi
    sleep 0.05
  done
  if [ -z "$back" ]; then echo "| $run | $down | not back within 30 s |"; continue; fi
  if [ -n "$job" ]; then
    sleep 3  # the worker reports its leases under its new id
    read -r leases results <<<"$(adopted "$log_from")"
    printf '| %d | %s | %.1f | %d | %d |\n' "$run" "$down" "$(echo "$back - $start" | bc -l)" \
      "$leases" "$results"
  else
    printf '| %d | %s | %.1f |\n' "$run" "$down" "$(echo "$back - $start" | bc -l)"
    sleep 2
  fi
done
if [ -n "$job" ]; then
  "$bin/tunectl" --server "127.0.0.1:$port" --insecure -o json trials "$job" 2>/dev/null |
    python3 -c '
import json, sys
rows = json.load(sys.stdin)
rows = rows.get("trials", rows) if isinstance(rows, dict) else rows
search = [r for r in rows if r.get("round", "search") in ("search", "TRIAL_ROUND_SEARCH", 0)]
configs = {json.dumps(r.get("config"), sort_keys=True) for r in search}
print(f"job {sys.argv[1]}: {len(search)} search trials stored, {len(configs)} distinct configs")
' "$job"
fi

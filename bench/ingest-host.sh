#!/usr/bin/env bash
# Coordinator ingest on a many-core host, in one run: the coordinator (SQLite
# in a temporary directory) pinned with taskset to 1, 4 and 16 cores, 1,000
# fake workers of load_bench on the upper half of the cores, for each
# coordinator binary given; then GetBestConfig beside those workers with the
# coordinator on one core.
#
#   OUT=DIR bench/ingest-host.sh NAME=BINARY[:FLAGS] ...
#     BINARY is a file named tunefleet-coordinator (the GetBestConfig part
#     starts it from its directory); FLAGS are space-separated.
#     e.g. base=bundle/base/tunefleet-coordinator
#          new=bundle/bin/tunefleet-coordinator
#          nice0=bundle/bin/tunefleet-coordinator:--report-nice=0
#
# Binaries run through bundle/run.sh (scripts/gpu-bundle.sh with
# TARGETS="tunefleet-coordinator load_bench"). Environment: SECONDS_PER (20),
# WORKERS (1000), LOOPS (32: the fake workers' completion-queue threads; 8
# saturate them beside a 16-core coordinator),
# CORES ("0 0-3 0-15"). Tables go to stdout and $OUT/ingest-host.txt.
set -euo pipefail
set -f  # FLAGS and CORES are split into words, never globbed
cd "$(dirname "$0")/.."

OUT="${OUT:-/tmp/ingest-host}"
SECONDS_PER="${SECONDS_PER:-20}"
WORKERS="${WORKERS:-1000}"
LOOPS="${LOOPS:-32}"
CORES="${CORES:-0 0-3 0-15}"
RUN=bundle/run.sh
LOAD=("${RUN}" bundle/bin/load_bench)
ncpu=$(nproc)
load_cpus="$((ncpu / 2))-$((ncpu - 1))"
mkdir -p "${OUT}"
[[ $# -gt 0 ]] || { echo "usage: ingest-host.sh NAME=BINARY[:FLAGS] ..." >&2; exit 2; }
for cpus in ${CORES}; do
  if (( ${cpus##*-} >= ncpu / 2 )); then
    echo "ingest-host: coordinator CPUs ${cpus} overlap the load's (${load_cpus})" >&2
    exit 2
  fi
done

exec > >(tee "${OUT}/ingest-host.txt") 2>&1
echo "ingest-host: $(date -u '+%Y-%m-%d %H:%M UTC'), ${ncpu} CPUs ($(lscpu | sed -n 's/^Model name: *//p')), load on CPUs ${load_cpus}"

pid=""
dir=""
stop() {
  if [[ -n "${pid}" ]]; then kill "${pid}" 2>/dev/null || true; wait "${pid}" 2>/dev/null || true; fi
  [[ -n "${dir}" ]] && rm -rf "${dir}"
  pid=""; dir=""
}
trap stop EXIT

# start CPUS BINARY FLAGS: a coordinator pinned to CPUS; sets pid, dir, address.
start() {
  dir=$(mktemp -d /tmp/ingest-host-XXXXXX)
  # shellcheck disable=SC2086  # FLAGS is a list of words
  taskset -c "$1" ${RUN} "$2" --listen 127.0.0.1:0 --data-dir "${dir}" \
    --address-file "${dir}/address" --insecure --metrics-listen "" $3 \
    > "${dir}/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    [[ -s "${dir}/address" ]] && break
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -s "${dir}/address" ]]; then
    echo "ingest-host: the coordinator $2 did not start:" >&2
    cat "${dir}/log" >&2
    exit 1
  fi
  address=$(cat "${dir}/address")
}

for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  binary=${rest%%:*}; flags=""; [[ "${rest}" == *:* ]] && flags=${rest#*:}
  for cpus in ${CORES}; do
    echo; echo "== ${name}: coordinator on CPUs ${cpus} ${flags}"
    start "${cpus}" "${binary}" "${flags}"
    taskset -c "${load_cpus}" "${LOAD[@]}" workers --server "${address}" --coordinator-pid "${pid}" \
      --workers "${WORKERS}" --loops "${LOOPS}" --seconds "${SECONDS_PER}" | grep '^|'
    stop
  done
done

# GetBestConfig beside the workers: load_bench starts each coordinator itself
# (on CPU 0; the workers and the callers share CPU ${ncpu/2}), as
# bench/run_load_bench.sh best-with-workers does on a 2-core machine.
LD_LIBRARY_PATH="$(pwd)/bundle/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export LD_LIBRARY_PATH
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  binary=${rest%%:*}; flags=(); shown=""
  if [[ "${rest}" == *:* ]]; then
    shown=${rest#*:}
    for flag in ${shown}; do flags+=("--coordinator-flag=${flag}"); done
  fi
  echo; echo "== ${name}: GetBestConfig beside ${WORKERS} workers, coordinator on CPU 0 ${shown}"
  "${LOAD[@]}" best --shapes 10000 --callers 8 --seconds 5 --with-workers "${WORKERS}" \
    --bin-dir "$(dirname "${binary}")" --coordinator-cpu 0 --load-cpu "$((ncpu / 2))" \
    ${flags[@]+"${flags[@]}"} 2>&1 | grep '^|'
done

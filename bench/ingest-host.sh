#!/usr/bin/env bash
# Coordinator ingest on a many-core host, in one run: the coordinator (SQLite
# in a temporary directory, or PostgreSQL: STORE below) pinned with taskset
# to 1, 4 and 16 cores, 1,000 fake workers of load_bench on the upper half
# of the cores, for each coordinator binary given; then GetBestConfig beside
# those workers with the coordinator on one core.
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
# CORES ("0 0-3 0-15"), IN_FLIGHT (2: the jobs of 32,768 configs kept
# unfinished in the ingest runs; each ends in a finalists round that few
# workers can take; the GetBestConfig part keeps 2), BEST (1; any other
# value leaves out the GetBestConfig part).
# Tables go to stdout and $OUT/ingest-host.txt.
#
# STORE=postgres: the same runs on PostgreSQL 15 instead of SQLite. Each
# coordinator run (and each GetBestConfig run) gets a fresh server from
# scripts/with-postgres.sh with PostgreSQL's durable defaults
# (TUNEFLEET_PG_DURABLE=1: fsync, synchronous_commit and full_page_writes
# on; with-postgres.sh's shared_buffers=32MB and max_connections=200), its
# data under TMPDIR (/tmp); each run prints the server's settings and that
# filesystem. The coordinator gets --database URL (its artifacts go to the
# run's temporary directory). PG_BUNDLE=bundle/postgres.tar.xz (from
# scripts/postgres-bundle.sh bundle bundle/lib, run after gpu-bundle.sh,
# which empties bundle/) is unpacked once under /tmp for a host without
# PostgreSQL, with the libraries it left to bundle/lib copied back in;
# without PG_BUNDLE the machine's own server (PG_BIN) is used.
#
# Core split with STORE=postgres: coordinator on CORES (up to 0-15),
# PostgreSQL (every backend) on PG_CPUS, fake workers on the upper half of
# the cores; PG_CPUS defaults to the cores between the two, e.g. on 128
# CPUs: coordinator 0-15, PostgreSQL 16-63, load 64-127. The GetBestConfig
# part keeps its split (coordinator CPU 0, load CPU ncpu/2), PostgreSQL on
# PG_CPUS.
#
#   STORE=postgres PG_BUNDLE=bundle/postgres.tar.xz OUT=DIR \
#     bench/ingest-host.sh new=bundle/bin/tunefleet-coordinator
set -euo pipefail
set -f  # FLAGS and CORES are split into words, never globbed
cd "$(dirname "$0")/.."

OUT="${OUT:-/tmp/ingest-host}"
SECONDS_PER="${SECONDS_PER:-20}"
WORKERS="${WORKERS:-1000}"
LOOPS="${LOOPS:-32}"
IN_FLIGHT="${IN_FLIGHT:-2}"
CORES="${CORES:-0 0-3 0-15}"
STORE="${STORE:-sqlite}"
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

# cpu_numbers LIST: the CPUs of a taskset list (0-3,8), one a line.
cpu_numbers() {
  local part
  for part in ${1//,/ }; do
    if [[ "${part}" == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "${part}"; fi
  done
}

# The settings that the runs print, as PostgreSQL reports them.
# shellcheck disable=SC2089  # SQL quotes, not shell quotes
SETTINGS_SQL="SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY name)
  FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes',
  'wal_level', 'shared_buffers', 'max_connections', 'max_wal_size', 'jit')"

pg_root=""
pid=""
dir=""
# With STORE=postgres, pid is with-postgres.sh's (a TERM to it stops the
# coordinator, then the server) and coordinator_pid the coordinator's.
stop() {
  if [[ -n "${pid}" ]]; then kill "${pid}" 2>/dev/null || true; wait "${pid}" 2>/dev/null || true; fi
  [[ -n "${dir}" ]] && rm -rf "${dir}"
  pid=""; dir=""
}
# shellcheck disable=SC2317  # run by the EXIT trap
finish() {
  stop
  [[ -n "${pg_root}" ]] && rm -rf "${pg_root}"
  return 0
}
trap finish EXIT

case "${STORE}" in
  sqlite) ;;
  postgres)
    # PostgreSQL's CPUs: by default those above every coordinator's (CORES,
    # and CPU 0 of the GetBestConfig part) and below the load's; never one
    # of theirs.
    coordinator_cpus=$(for cpus in 0 ${CORES}; do cpu_numbers "${cpus}"; done | sort -nu)
    coordinator_top=$(tail -n 1 <<<"${coordinator_cpus}")
    if [[ -z "${PG_CPUS:-}" ]]; then
      if (( coordinator_top + 1 > ncpu / 2 - 1 )); then
        echo "ingest-host: no CPUs left for PostgreSQL between the coordinator's and the load's (${load_cpus}); set CORES" >&2
        exit 2
      fi
      PG_CPUS="$((coordinator_top + 1))-$((ncpu / 2 - 1))"
    fi
    for cpu in $(cpu_numbers "${PG_CPUS}"); do
      if (( cpu >= ncpu / 2 )) || grep -qx "${cpu}" <<<"${coordinator_cpus}"; then
        echo "ingest-host: PG_CPUS ${PG_CPUS} overlap the coordinator's (0 ${CORES}) or the load's (${load_cpus})" >&2
        exit 2
      fi
    done
    if [[ -n "${PG_BUNDLE:-}" ]]; then
      # World-readable: as root, with-postgres.sh runs the server as another user.
      pg_root=$(mktemp -d /tmp/ingest-host-pg-XXXXXX)
      chmod 755 "${pg_root}"
      if command -v xz >/dev/null; then
        tar -xJf "${PG_BUNDLE}" -C "${pg_root}"
      else  # no xz on the host: Python's tarfile reads .tar.xz itself
        python3 -c 'import sys, tarfile
kw = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "${PG_BUNDLE}" "${pg_root}"
      fi
      PG_BIN="${pg_root}/postgresql-15/usr/lib/postgresql/15/bin"
      # A tarball made with LIB_DIR bundle/lib left out what that holds.
      if [[ -f "${PG_BIN}/../deps/FROM-LIB-DIR" ]]; then
        while read -r name; do
          cp "bundle/lib/${name}" "${PG_BIN}/../deps/" \
            || { echo "ingest-host: ${PG_BUNDLE} needs ${name} from bundle/lib" >&2; exit 2; }
        done <"${PG_BIN}/../deps/FROM-LIB-DIR"
        chmod -R go=rX "${PG_BIN}/../deps"
      fi
    fi
    PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
    PG_LIB="${PG_LIB:-}"
    [[ -z "${PG_LIB}" && -d "${PG_BIN}/../deps" ]] && PG_LIB="$(cd "${PG_BIN}/../deps" && pwd)"
    [[ -x "${PG_BIN}/postgres" ]] || { echo "ingest-host: no PostgreSQL in ${PG_BIN} (set PG_BUNDLE or PG_BIN)" >&2; exit 2; }
    # shellcheck disable=SC2090  # SETTINGS_SQL is SQL, passed whole
    export PG_BIN PG_LIB SETTINGS_SQL
    export TUNEFLEET_PG_DURABLE=1
    ;;
  *) echo "ingest-host: STORE is sqlite or postgres, not ${STORE}" >&2; exit 2 ;;
esac

exec > >(tee "${OUT}/ingest-host.txt") 2>&1
echo "ingest-host: $(date -u '+%Y-%m-%d %H:%M UTC'), ${ncpu} CPUs ($(lscpu | sed -n 's/^Model name: *//p')), load on CPUs ${load_cpus}"
if [[ "${STORE}" == postgres ]]; then
  echo "ingest-host: store PostgreSQL ($(env ${PG_LIB:+"LD_LIBRARY_PATH=${PG_LIB}"} "${PG_BIN}/postgres" --version)) on CPUs ${PG_CPUS}, durable defaults (fsync, synchronous_commit, full_page_writes on), a fresh cluster per run under ${TMPDIR:-/tmp} ($(stat -f -c %T "${TMPDIR:-/tmp}"))"
else
  echo "ingest-host: store SQLite, in a temporary directory under /tmp ($(stat -f -c %T /tmp))"
fi

# The inner shell of a PostgreSQL run (with-postgres.sh runs it with
# TUNEFLEET_TEST_POSTGRES_URL set): bash -c PG_SHELL DIR CPUS COMMAND...
# writes the server's settings to DIR/settings, the URL to DIR/url and its
# own pid, which the command keeps (exec), to DIR/pid, then runs COMMAND on
# CPUS with --database URL added.
# shellcheck disable=SC2016  # expanded by the inner shell
PG_SHELL='
  env ${PG_LIB:+"LD_LIBRARY_PATH=${PG_LIB}"} "${PG_BIN}/psql" -X -Atq \
    "${TUNEFLEET_TEST_POSTGRES_URL}" -c "${SETTINGS_SQL}" >"$0/settings" </dev/null
  echo "${TUNEFLEET_TEST_POSTGRES_URL}" >"$0/url"
  echo "$$" >"$0/pid"
  exec taskset -c "$1" "${@:2}" --database "${TUNEFLEET_TEST_POSTGRES_URL}"'

# start CPUS BINARY FLAGS: a coordinator pinned to CPUS; sets pid,
# coordinator_pid, dir, address, store_flags (load_bench's --database, which
# with --server only names the store in its table) and, with PostgreSQL,
# starts the server.
start() {
  dir=$(mktemp -d /tmp/ingest-host-XXXXXX)
  local tries=300
  if [[ "${STORE}" == postgres ]]; then
    tries=1200  # initdb and the server's start come first
    # shellcheck disable=SC2086  # FLAGS is a list of words
    taskset -c "${PG_CPUS}" scripts/with-postgres.sh bash -c "${PG_SHELL}" "${dir}" "$1" \
      ${RUN} "$2" --listen 127.0.0.1:0 --artifact-dir "${dir}/artifacts" \
      --address-file "${dir}/address" --insecure --metrics-listen "" $3 \
      > "${dir}/log" 2>&1 &
  else
    # shellcheck disable=SC2086  # FLAGS is a list of words
    taskset -c "$1" ${RUN} "$2" --listen 127.0.0.1:0 --data-dir "${dir}" \
      --address-file "${dir}/address" --insecure --metrics-listen "" $3 \
      > "${dir}/log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq "${tries}"); do
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
  coordinator_pid="${pid}"
  store_flags=()
  if [[ "${STORE}" == postgres ]]; then
    coordinator_pid=$(cat "${dir}/pid")
    store_flags=(--database "$(cat "${dir}/url")")
    echo "PostgreSQL on CPUs ${PG_CPUS}: $(cat "${dir}/settings")"
  fi
}

for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  binary=${rest%%:*}; flags=""; [[ "${rest}" == *:* ]] && flags=${rest#*:}
  for cpus in ${CORES}; do
    echo; echo "== ${name}: coordinator on CPUs ${cpus} ${flags}"
    start "${cpus}" "${binary}" "${flags}"
    taskset -c "${load_cpus}" "${LOAD[@]}" workers --server "${address}" --coordinator-pid "${coordinator_pid}" \
      --workers "${WORKERS}" --loops "${LOOPS}" --seconds "${SECONDS_PER}" \
      --in-flight "${IN_FLIGHT}" ${store_flags[@]+"${store_flags[@]}"} | grep '^|'
    stop
  done
done

[[ "${BEST:-1}" == 1 ]] || exit 0
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
  best=("${LOAD[@]}" best --shapes 10000 --callers 8 --seconds 5 --with-workers "${WORKERS}"
    --bin-dir "$(dirname "${binary}")" --coordinator-cpu 0 --load-cpu "$((ncpu / 2))"
    ${flags[@]+"${flags[@]}"})
  if [[ "${STORE}" == postgres ]]; then
    # load_bench seeds the database, then starts the coordinator on it; it
    # pins itself and the coordinator, PostgreSQL stays on PG_CPUS.
    dir=$(mktemp -d /tmp/ingest-host-XXXXXX)  # removed by stop, whatever happens
    taskset -c "${PG_CPUS}" scripts/with-postgres.sh bash -c "${PG_SHELL}" "${dir}" \
      "$((ncpu / 2))" "${best[@]}" 2>&1 | grep '^|'
    echo "PostgreSQL on CPUs ${PG_CPUS}: $(cat "${dir}/settings")"
    stop
  else
    "${best[@]}" 2>&1 | grep '^|'
  fi
done

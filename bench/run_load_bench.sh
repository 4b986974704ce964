#!/usr/bin/env bash
# Runs the coordinator load matrix of docs/benchmarks.md and prints every
# table: best (C = 1, 8, 64; exact, nearest, default), workers (10 and
# 1,000), each on SQLite and on PostgreSQL, best beside 1,000 workers, and
# the soak.
#
#   bench/run_load_bench.sh                 # the whole matrix, about 9 minutes
#   bench/run_load_bench.sh best workers    # only these parts (best, workers,
#                                           # best-with-workers, soak)
#
# Environment: BUILD_DIR (default build), SECONDS_PER (the measured seconds
# of one run or phase, default 5 for best, 20 for workers), SOAK_JOBS
# (10000) and SOAK_SECONDS (170), PIN ("--coordinator-cpu 0 --load-cpu 1"
# on a machine with two or more CPUs; set it empty to run unpinned).
# PostgreSQL runs come from scripts/with-postgres.sh: a fresh, throwaway
# database for every run.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${BUILD_DIR:-build}"
BENCH="${BUILD_DIR}/bin/load_bench"
BEST_SECONDS="${SECONDS_PER:-5}"
WORKERS_SECONDS="${SECONDS_PER:-20}"
SOAK_JOBS="${SOAK_JOBS:-10000}"
SOAK_SECONDS="${SOAK_SECONDS:-170}"
if [[ -z "${PIN+set}" ]]; then
  PIN=""
  [[ $(nproc) -ge 2 ]] && PIN="--coordinator-cpu 0 --load-cpu 1"
fi
[[ -x "${BENCH}" ]] || { echo "run_load_bench: no ${BENCH}; build the load_bench target" >&2; exit 2; }

# on_sqlite ARGS...: one run against a coordinator with a temporary SQLite.
on_sqlite() {
  echo "\$ load_bench $* ${PIN}"
  # shellcheck disable=SC2086  # PIN is a list of words
  "${BENCH}" "$@" ${PIN}
}

# on_postgres ARGS...: one run against a fresh PostgreSQL database.
on_postgres() {
  echo "\$ scripts/with-postgres.sh load_bench $* --database \$TUNEFLEET_TEST_POSTGRES_URL ${PIN}"
  # shellcheck disable=SC2016  # expanded by the inner shell
  scripts/with-postgres.sh bash -c '"$0" "$@" --database "${TUNEFLEET_TEST_POSTGRES_URL}"' \
    "${BENCH}" "$@" ${PIN} 2> >(grep -v '^with-postgres: PostgreSQL on' >&2)
}

parts=("$@")
[[ ${#parts[@]} -eq 0 ]] && parts=(best workers best-with-workers soak)
echo "run_load_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
for part in "${parts[@]}"; do
  case "${part}" in
    best)
      for run in on_sqlite on_postgres; do
        ${run} best --shapes 10000 --callers 1,8,64 --seconds "${BEST_SECONDS}"
      done ;;
    workers)
      for run in on_sqlite on_postgres; do
        for n in 10 1000; do ${run} workers --workers "${n}" --seconds "${WORKERS_SECONDS}"; done
      done ;;
    best-with-workers)
      on_sqlite best --shapes 10000 --callers 8 --seconds "${BEST_SECONDS}" --with-workers 1000 ;;
    soak)
      on_sqlite soak --jobs "${SOAK_JOBS}" --seconds "${SOAK_SECONDS}" ;;
    *) echo "run_load_bench: unknown part ${part}" >&2; exit 2 ;;
  esac
done

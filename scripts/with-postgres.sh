#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL started just for it.
#
#   scripts/with-postgres.sh ctest --test-dir build -L integration
#
# Starts a fresh cluster (initdb + pg_ctl) in a temporary directory, listening
# on 127.0.0.1 at a free port, with a superuser `tunefleet` (password
# `secret`) owning a database `tunefleet`. Exports
#   TUNEFLEET_TEST_POSTGRES_URL=postgresql://tunefleet:secret@127.0.0.1:PORT/tunefleet
# runs the command, then stops the server and deletes the directory, whatever
# happens. Exits with the command's exit status (or 1 when PostgreSQL could
# not be started).
#
# Works as a normal user and as root (the server then runs as `postgres`,
# since initdb refuses root). Needs the postgresql-15 package (or set PG_BIN
# to another server's bin directory). Reads nothing from stdin.
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_USER=tunefleet
PG_PASSWORD=secret
PG_DATABASE=tunefleet

die() { echo "with-postgres: $*" >&2; exit 1; }

[[ -x "${PG_BIN}/initdb" ]] || die "no initdb in ${PG_BIN} (install postgresql-15 or set PG_BIN)"

# as_server_user CMD...: runs CMD as the user that owns the cluster.
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user"
  as_server_user() { runuser -u postgres -- "$@" </dev/null; }
else
  as_server_user() { "$@" </dev/null; }
fi

workdir="$(mktemp -d "${TMPDIR:-/tmp}/tunefleet-pg.XXXXXX")"
datadir="${workdir}/data"
logfile="${workdir}/server.log"
started=0

cleanup() {
  if [[ ${started} -eq 1 ]]; then
    as_server_user "${PG_BIN}/pg_ctl" stop -D "${datadir}" -m immediate -s >/dev/null 2>&1 || true
  fi
  rm -rf "${workdir}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[[ $(id -u) -eq 0 ]] && chown postgres: "${workdir}"
chmod 700 "${workdir}"

init_cluster() {
  local pwfile="${workdir}/pwfile"
  printf '%s\n' "${PG_PASSWORD}" >"${pwfile}"
  [[ $(id -u) -eq 0 ]] && chown postgres: "${pwfile}"
  as_server_user "${PG_BIN}/initdb" -D "${datadir}" -U "${PG_USER}" \
    --pwfile="${pwfile}" --auth=scram-sha-256 -E UTF8 --no-locale --no-sync \
    >"${workdir}/initdb.log" 2>&1 || { cat "${workdir}/initdb.log" >&2; return 1; }
  rm -f "${pwfile}"
}

# port_in_use PORT: true when something already accepts connections there.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_server PORT: starts the cluster on PORT; false when it did not come up.
# fsync and synchronous commit are off (the cluster is thrown away
# afterwards), unless TUNEFLEET_PG_DURABLE=1 asks for PostgreSQL's durable
# defaults (benchmarks state which they ran with).
start_server() {
  local speed="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  [[ "${TUNEFLEET_PG_DURABLE:-0}" == 1 ]] && speed=""
  as_server_user "${PG_BIN}/pg_ctl" start -D "${datadir}" -l "${logfile}" -w -t 60 -s \
    -o "-c listen_addresses=127.0.0.1 -c port=$1 -c unix_socket_directories='${workdir}' \
        ${speed} -c max_connections=200 -c shared_buffers=32MB" >/dev/null 2>&1
}

init_cluster || die "initdb failed"

port=""
for _ in $(seq 1 20); do
  candidate=$((20000 + RANDOM % 40000))
  port_in_use "${candidate}" && continue
  started=1  # from here on, cleanup stops whatever did start
  if start_server "${candidate}"; then
    port="${candidate}"
    break
  fi
done
if [[ -z "${port}" ]]; then
  cat "${logfile}" >&2 2>/dev/null || true
  die "could not start PostgreSQL"
fi

PGPASSWORD="${PG_PASSWORD}" "${PG_BIN}/psql" -X -q -h 127.0.0.1 -p "${port}" \
  -U "${PG_USER}" -d postgres -c "CREATE DATABASE ${PG_DATABASE}" </dev/null \
  || die "could not create database ${PG_DATABASE}"

export TUNEFLEET_TEST_POSTGRES_URL="postgresql://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${PG_DATABASE}"
echo "with-postgres: PostgreSQL on 127.0.0.1:${port} (${TUNEFLEET_TEST_POSTGRES_URL})" >&2

# The command runs in the background so that a signal to this script is
# handled at once (bash defers traps while a foreground child runs): it is
# passed on to the command, and the server is stopped when the command ends.
"$@" 0<&0 &
child=$!
trap 'kill -TERM "${child}" 2>/dev/null' INT TERM
status=0
wait "${child}" || status=$?
while kill -0 "${child}" 2>/dev/null; do  # wait was cut short by a signal
  status=0
  wait "${child}" || status=$?
done
exit "${status}"

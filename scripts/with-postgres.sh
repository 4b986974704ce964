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
# Works as a normal user and as root: initdb refuses root, so the server then
# runs as PG_SERVER_USER, by default `postgres`, or `nobody` where there is
# no `postgres` user (PG_BIN must then be readable by that user: unpack a
# bundle under a world-readable directory; so must TMPDIR, where the cluster
# lives). Needs the postgresql-15 package,
# or PG_BIN set to another server's bin directory, e.g. one unpacked from
# scripts/postgres-bundle.sh's tarball: its libraries (PG_LIB, by default
# PG_BIN/../deps where that exists) go on the LD_LIBRARY_PATH of
# PostgreSQL's own programs only, not on the command's. Reads nothing from
# stdin.
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

# A bundled server's shared libraries: PG_LIB, or deps/ beside its bin/.
PG_LIB="${PG_LIB:-}"
if [[ -z "${PG_LIB}" && -d "${PG_BIN}/../deps" ]]; then
  PG_LIB="$(cd "${PG_BIN}/../deps" && pwd)"
fi
# pg_env: the prefix that runs one of PostgreSQL's programs (with PG_LIB).
pg_env=()
[[ -n "${PG_LIB}" ]] && pg_env=(env "LD_LIBRARY_PATH=${PG_LIB}")

# as_server_user CMD...: runs CMD as the user that owns the cluster (root
# cannot: `postgres`, else `nobody`, or PG_SERVER_USER).
if [[ $(id -u) -eq 0 ]]; then
  server_user="${PG_SERVER_USER:-}"
  if [[ -z "${server_user}" ]]; then
    server_user=nobody
    id postgres >/dev/null 2>&1 && server_user=postgres
  fi
  id "${server_user}" >/dev/null 2>&1 || die "no user '${server_user}' to run the server as"
  as_server_user() { runuser -u "${server_user}" -- ${pg_env[@]+"${pg_env[@]}"} "$@" </dev/null; }
  as_server_user test -x "${PG_BIN}/postgres" \
    || die "user ${server_user} cannot run ${PG_BIN}/postgres (make the directories above it world-readable)"
else
  as_server_user() { ${pg_env[@]+"${pg_env[@]}"} "$@" </dev/null; }
fi

workdir="$(mktemp -d "${TMPDIR:-/tmp}/tunefleet-pg.XXXXXX")"
datadir="${workdir}/data"
logfile="${workdir}/server.log"
started=0

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  if [[ ${started} -eq 1 ]]; then
    as_server_user "${PG_BIN}/pg_ctl" stop -D "${datadir}" -m immediate -s >/dev/null 2>&1 || true
  fi
  rm -rf "${workdir}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[[ $(id -u) -eq 0 ]] && chown "${server_user}:" "${workdir}"
chmod 700 "${workdir}"

init_cluster() {
  local pwfile="${workdir}/pwfile"
  printf '%s\n' "${PG_PASSWORD}" >"${pwfile}"
  [[ $(id -u) -eq 0 ]] && chown "${server_user}:" "${pwfile}"
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

PGPASSWORD="${PG_PASSWORD}" ${pg_env[@]+"${pg_env[@]}"} "${PG_BIN}/psql" -X -q -h 127.0.0.1 -p "${port}" \
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

#!/usr/bin/env bash
# A private PostgreSQL 15 cluster that a test can stop and start at will
# (scripts/with-postgres.sh serves a shared one that must stay up).
#
#   scripts/pg-cluster.sh init DIR        # initdb into DIR/data; superuser
#                                          # tunefleet, password secret
#   scripts/pg-cluster.sh start DIR PORT  # start on 127.0.0.1:PORT, wait until up
#   scripts/pg-cluster.sh stop DIR        # stop at once (-m immediate), as a crash
#
# The server runs with PostgreSQL's durable defaults (fsync, synchronous
# commit): it is stopped hard on purpose, and what it acknowledged must
# survive that. The database `postgres` exists from initdb:
#   postgresql://tunefleet:secret@127.0.0.1:PORT/postgres
# As root, the server runs as `postgres` (initdb refuses root) and DIR is
# handed to that user. Reads nothing from stdin.
set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
die() { echo "pg-cluster: $*" >&2; exit 1; }
[[ $# -ge 2 ]] || die "usage: $0 init|start|stop DIR [PORT]"
[[ -x "${PG_BIN}/initdb" ]] || die "no initdb in ${PG_BIN}"
command="$1"
dir="$(cd "$2" && pwd)"

if [[ $(id -u) -eq 0 ]]; then
  as_server_user() { runuser -u postgres -- "$@" </dev/null; }
else
  as_server_user() { "$@" </dev/null; }
fi

case "${command}" in
  init)
    [[ $(id -u) -eq 0 ]] && chown postgres: "${dir}"
    chmod 700 "${dir}"
    printf 'secret\n' >"${dir}/pwfile"
    [[ $(id -u) -eq 0 ]] && chown postgres: "${dir}/pwfile"
    as_server_user "${PG_BIN}/initdb" -D "${dir}/data" -U tunefleet --pwfile="${dir}/pwfile" \
      --auth=scram-sha-256 -E UTF8 --no-locale --no-sync >"${dir}/initdb.log" 2>&1 \
      || { cat "${dir}/initdb.log" >&2; exit 1; }
    rm -f "${dir}/pwfile"
    ;;
  start)
    [[ $# -eq 3 ]] || die "start needs a port"
    as_server_user "${PG_BIN}/pg_ctl" start -D "${dir}/data" -l "${dir}/server.log" -w -t 60 -s \
      -o "-c listen_addresses=127.0.0.1 -c port=$3 -c unix_socket_directories='${dir}' \
          -c max_connections=50 -c shared_buffers=16MB" >/dev/null \
      || { tail -20 "${dir}/server.log" >&2; exit 1; }
    ;;
  stop)
    as_server_user "${PG_BIN}/pg_ctl" stop -D "${dir}/data" -m immediate -s >/dev/null
    ;;
  *) die "unknown command ${command}" ;;
esac

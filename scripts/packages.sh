#!/bin/sh
# Prints the Debian packages of the given roles (build, run, test) from
# scripts/debian-packages.txt, one per line, each once.
#
#   scripts/packages.sh build run
set -eu
list="$(dirname "$0")/debian-packages.txt"
[ $# -gt 0 ] || { echo "usage: $0 ROLE... (build, run, test)" >&2; exit 2; }
for role in "$@"; do
  case "$role" in
    build | run | test) ;;
    *) echo "$0: unknown role '$role' (build, run, test)" >&2; exit 2 ;;
  esac
done
awk -v roles=" $* " 'index(roles, " " $1 " ") && !seen[$2]++ { print $2 }' "$list"

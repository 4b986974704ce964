#!/usr/bin/env bash
# Installs the Debian 12 packages tunefleet needs (only those missing, from
# scripts/debian-packages.txt), then configures and builds it into
# ${TUNEFLEET_BUILD_DIR:-build}.
#
#   scripts/setup.sh              every role's packages; builds everything, tests included
#   scripts/setup.sh TARGET...    the build and run packages; builds only TARGETs (the demo)
# TUNEFLEET_BUILD_TYPE sets CMAKE_BUILD_TYPE (default RelWithDebInfo);
# TUNEFLEET_UNITY_BUILD=ON batches each library's sources into a few
# translation units (CMAKE_UNITY_BUILD; tests and generated code stay one file
# a unit), as scripts/demo.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
roles=(build run)
((${#targets[@]})) || roles+=(test)
packages_text="$(scripts/packages.sh "${roles[@]}")"  # set -e stops here on a bad list
mapfile -t packages <<<"$packages_text"

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

BUILD_DIR="${TUNEFLEET_BUILD_DIR:-build}"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
configure=(-G Ninja -DCMAKE_BUILD_TYPE="${TUNEFLEET_BUILD_TYPE:-RelWithDebInfo}"
           -DCMAKE_UNITY_BUILD="${TUNEFLEET_UNITY_BUILD:-OFF}")
if ((${#targets[@]} == 0)); then
  configure+=(-DTUNEFLEET_BUILD_TESTS=ON)
elif [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # A first build for the demo: the test packages may be missing.
  configure+=(-DTUNEFLEET_BUILD_TESTS=OFF)
fi
cmake -S . -B "$BUILD_DIR" "${configure[@]}" >/dev/null
# Two jobs: gRPC-heavy translation units need about 1 GB of memory each.
ninja -C "$BUILD_DIR" -j "${TUNEFLEET_JOBS:-2}" "${targets[@]}"

#!/usr/bin/env bash
# Installs the Debian 12 packages tunefleet needs (only those missing), then
# configures and builds it into ${TUNEFLEET_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libssl-dev libpqxx-dev libsqlite3-dev libmuparser-dev
  libspdlog-dev libcli11-dev nlohmann-json3-dev prometheus-cpp-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  postgresql postgresql-common prometheus
  bubblewrap help2man libxgboost-dev zlib1g-dev libjs-chart.js chromium
  python3 python3-grpcio python3-protobuf python3-pytest
)

missing=()
for pkg in "${PACKAGES[@]}"; do
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
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Two jobs: gRPC-heavy translation units need about 1 GB of memory each.
ninja -C "$BUILD_DIR" -j "${TUNEFLEET_JOBS:-2}"

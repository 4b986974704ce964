#!/usr/bin/env bash
# Sets up and builds tunefleet, then runs the whole test suite (unit, service,
# integration; gpu tests skip without a GPU) against real SQLite and a
# throwaway PostgreSQL 15.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The demo's own build (scripts/demo.sh: -O0, a unity build of the three
# programs) compiles too: a name that two sources of one library both define
# breaks only that build.
TUNEFLEET_BUILD_DIR=build-demo TUNEFLEET_BUILD_TYPE=None TUNEFLEET_UNITY_BUILD=ON \
  scripts/setup.sh tunefleet-coordinator tunefleet-worker tunectl
BUILD_DIR="${TUNEFLEET_BUILD_DIR:-build}"
export TUNEFLEET_REQUIRE_POSTGRES=1
exec scripts/with-postgres.sh ctest --test-dir "$BUILD_DIR" --output-on-failure \
  -j "${TUNEFLEET_TEST_JOBS:-2}" "$@"

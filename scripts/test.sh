#!/usr/bin/env bash
# Sets up and builds tunefleet, then runs the whole test suite (unit, service,
# integration; gpu tests skip without a GPU) against real SQLite and a
# throwaway PostgreSQL 15.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR="${TUNEFLEET_BUILD_DIR:-build}"
export TUNEFLEET_REQUIRE_POSTGRES=1
exec scripts/with-postgres.sh ctest --test-dir "$BUILD_DIR" --output-on-failure \
  -j "${TUNEFLEET_TEST_JOBS:-2}" "$@"

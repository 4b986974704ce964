#!/usr/bin/env bash
# An application outside this repository, built against an installed
# tunefleet: `cmake --install` into a scratch prefix, then the example
# client/examples/best_config_at_startup.cc as its own CMake project that
# says only find_package(tunefleet) and tunefleet::client. With no
# coordinator to ask, it runs and falls back to its compiled-in config.
#
#   package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for file in include/tunefleet/client.h lib/libtunefleet_client.a \
            lib/cmake/tunefleet/tunefleetConfig.cmake \
            lib/cmake/tunefleet/tunefleetConfigVersion.cmake; do
  [ -e "$work/prefix/$file" ] || { echo "not installed: $file" >&2; exit 1; }
done

mkdir "$work/app"
cp "$source/client/examples/best_config_at_startup.cc" "$work/app/"
cat > "$work/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(app LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(tunefleet 0.1 REQUIRED)
add_executable(app best_config_at_startup.cc)
target_link_libraries(app PRIVATE tunefleet::client)
CMAKE
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$work/app" -B "$work/app/build" "${generator[@]}" \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/app/build"

output=$("$work/app/build/app" matmul M=64,N=64,K=64 127.0.0.1:1 2>&1)
echo "$output"
grep -q "source: compiled-in default" <<<"$output"
echo "package_test: the installed tunefleet::client built and linked an outside application"

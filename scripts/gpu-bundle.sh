#!/bin/bash
# Builds the GPU-side binaries and packs them, with the non-system shared
# libraries they link, into a bundle that runs on the GPU test machine
# (Ubuntu 24.04, its own CUDA driver, NVRTC and cuBLAS; no gRPC/protobuf/absl).
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]
#     BUILD_DIR   CMake build dir (default: build-cuda; configured if empty)
#     BUNDLE_DIR  output (default: bundle/, gitignored), replaced
#   TARGETS="a b"  extra build targets to ship (e.g. tunefleet-worker)
#   JOBS=N         build parallelism (default 2)
#
# Then, on the GPU machine, from the repository root:
#   bundle/run.sh bundle/bin/cuda_backend_test
# run.sh puts bundle/lib first on LD_LIBRARY_PATH and sets
# TUNEFLEET_SOURCE_DIR to the repository root (the tests read kernels/ there).
# Left out of lib/: glibc (libc, libm, libpthread, libdl, librt, the loader),
# libstdc++, libgcc_s, and every CUDA/NVIDIA library (the machine's own are
# used, loaded at run time with dlopen). The bundle must stay under 64 MiB.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build-cuda}")
bundle=$(realpath -m "${2:-$root/bundle}")
targets=(cuda_backend_test tunefleet-nvrtc tunefleet-cuda-trial ${TARGETS:-})
limit=$((64 * 1024 * 1024))

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"

system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libmvec|libpthread|libdl\.|librt\.|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda\.|libnvrtc|libcublas|libcudart|libnvidia|libnvJitLink)'
for target in "${targets[@]}"; do
  binary=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
  if [ -z "$binary" ]; then
    echo "gpu-bundle: built target $target not found under $build" >&2
    exit 1
  fi
  # Debug info stays here; the bundle has to travel.
  objcopy --strip-debug "$binary" "$bundle/bin/$target"
  ldd "$binary" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if [[ "$name" =~ $system_lib ]]; then continue; fi
    if [ ! -f "$bundle/lib/$name" ]; then
      cp -L "$path" "$bundle/lib/$name"
      strip --strip-debug "$bundle/lib/$name" 2>/dev/null || true
    fi
  done
done

# The GPU machine's image has no bubblewrap: ship this machine's, so that
# the worker's kernels run in the same sandbox there.
if bwrap=$(command -v bwrap); then
  cp -L "$bwrap" "$bundle/bin/bwrap"
  ldd "$bwrap" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if [[ "$name" =~ $system_lib ]]; then continue; fi
    [ -f "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
  done
fi

cat > "$bundle/run.sh" <<'RUN'
#!/bin/bash
# Runs a bundled binary with the bundle's libraries: run.sh PROGRAM [ARGS...]
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$here/bin:$PATH"  # the bundled bwrap
export TUNEFLEET_SOURCE_DIR="${TUNEFLEET_SOURCE_DIR:-$(cd "$here/.." && pwd)}"
export TUNEFLEET_BUILD_DIR="${TUNEFLEET_BUILD_DIR:-$here}"
exec "$@"
RUN
chmod +x "$bundle/run.sh"

size=$(du -sb "$bundle" | cut -f1)
echo "gpu-bundle: $bundle: $(ls "$bundle/bin" | wc -l) binaries, $(ls "$bundle/lib" | wc -l) libraries, $((size / 1024 / 1024)) MiB"
if [ "$size" -gt "$limit" ]; then
  echo "gpu-bundle: over the 64 MiB the GPU machine accepts" >&2
  exit 1
fi

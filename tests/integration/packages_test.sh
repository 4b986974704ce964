#!/usr/bin/env bash
# One list of Debian packages (scripts/debian-packages.txt) for the host
# set-up, the image and the docs, checked against what the programs need:
#   - scripts/setup.sh and deploy/Containerfile install only from the list
#     (scripts/packages.sh), never a package list of their own;
#   - every shared library an installed program or helper links comes from
#     a `run` package or a direct dependency of one;
#   - every listed package exists in Debian 12 (where apt has its lists);
#   - with TUNEFLEET_TEST_IMAGE=1 where a container engine runs, the image
#     builds from the Containerfile and its worker passes --preflight (CPU
#     backend); it pulls images, so it is not done by default.
#
#   packages_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "packages_test: $*" >&2; failures=$((failures + 1)); }

mapfile -t run_packages < <("$source/scripts/packages.sh" run)
mapfile -t all_packages < <("$source/scripts/packages.sh" build run test)
((${#run_packages[@]} > 0)) || fail "no run packages listed"

# The set-up script and the image take their packages from the list.
grep -q 'scripts/packages.sh' "$source/scripts/setup.sh" \
  || fail "scripts/setup.sh does not install from scripts/packages.sh"
# The arguments of each `apt-get install` of the Containerfile, continued
# lines joined: only options and $(... packages.sh ROLE).
installs=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$source/deploy/Containerfile" \
             | grep -o 'apt-get install[^&]*' || true)
[ "$(grep -c 'packages.sh build' <<<"$installs")" = 1 ] \
  || fail "the Containerfile's build stage does not install the build role"
[ "$(grep -c 'packages.sh run' <<<"$installs")" = 1 ] \
  || fail "the Containerfile's run stage does not install the run role"
while read -r install; do
  rest=$(sed -e 's/apt-get install//' -e 's/\$([^)]*)//g' -e 's/ -[-a-z]*//g' <<<"$install" \
           | tr -d ' ')
  [ -z "$rest" ] || fail "the Containerfile installs packages of its own: $rest"
done <<<"$installs"

# Every program's and helper's shared libraries, from the installed tree:
# each from a run package or a direct dependency of one (libc6 under
# libstdc++6), so that the run stage holds them.
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mapfile -t provided < <(printf '%s\n' "${run_packages[@]}";
                        apt-cache depends --no-recommends --no-suggests "${run_packages[@]}" \
                          2>/dev/null | awk '$1 == "Depends:" { print $2 }' | tr -d '<>')
provides() {
  local package
  for package in "${provided[@]}"; do [ "${package%:any}" = "$1" ] && return 0; done
  return 1
}
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
declare -A needed_by=()
for program in "$work/prefix/bin/"* "$work/prefix/libexec/tunefleet/"*; do
  [ -f "$program" ] && [ "$(head -c 4 "$program" | tail -c 3)" = ELF ] || continue
  while read -r library; do
    needed_by[$library]=$(basename "$program")
  done < <(objdump -p "$program" | awk '/NEEDED/ { print $2 }')
done
((${#needed_by[@]} > 0)) || fail "no installed program links a shared library"
for library in "${!needed_by[@]}"; do
  program=${needed_by[$library]}
  path=$("$ldconfig" -p | awk -v l="$library" '$1 == l && !found { print $NF; found = 1 }')
  if [ -z "$path" ]; then
    fail "$program: $library is not on this system"
    continue
  fi
  package=""
  for candidate in "$path" "$(realpath "$path")"; do
    package=$(dpkg -S "$candidate" 2>/dev/null | awk -F: 'NR == 1 { print $1 }' || true)
    [ -n "$package" ] && break
  done
  if [ -z "$package" ]; then
    echo "packages_test: $program: $library belongs to no package; not checked"
  elif ! provides "$package"; then
    fail "$program links $library from $package, which no run package brings"
  fi
done

# Every listed package is a Debian 12 package (apt's lists may be empty on
# a machine that never ran apt-get update: then this is not checked).
if apt-cache show bash >/dev/null 2>&1; then
  for package in "${all_packages[@]}"; do
    apt-cache show "$package" >/dev/null 2>&1 || fail "$package is not a Debian package here"
  done
else
  echo "packages_test: apt has no package lists; package names not checked"
fi

# The image, where a container engine runs.
engine=""
for candidate in podman docker; do
  if command -v "$candidate" >/dev/null && "$candidate" info >/dev/null 2>&1; then
    engine=$candidate
    break
  fi
done
if [ -n "$engine" ] && [ "${TUNEFLEET_TEST_IMAGE:-0}" = 1 ]; then
  tag="tunefleet-packages-test:$$"
  if "$engine" build -f "$source/deploy/Containerfile" -t "$tag" "$source" >"$work/image.log" 2>&1; then
    "$engine" run --rm --entrypoint /usr/bin/tunefleet-worker "$tag" --preflight \
        --sandbox none >"$work/preflight.log" 2>&1 \
      || fail "the image's worker failed its preflight: $(cat "$work/preflight.log")"
    "$engine" rmi "$tag" >/dev/null 2>&1 || true
  else
    fail "the image does not build: $(tail -20 "$work/image.log")"
  fi
else
  echo "packages_test: the image was checked against the list only (TUNEFLEET_TEST_IMAGE=1 and" \
       "a running podman or docker build it: it pulls Debian's and NVIDIA's images)"
fi

((failures == 0)) || exit 1
echo "packages_test: the set-up, the image and the installed programs agree with the package list"

#!/usr/bin/env bash
# One list of Debian packages (scripts/debian-packages.txt) for the host
# set-up, the image and the docs, checked against what the programs need:
#   - scripts/setup.sh and deploy/Containerfile install only from the list
#     (scripts/packages.sh), never a package list of their own;
#   - every shared library an installed program or helper links comes from
#     a `run` package or a direct dependency of one;
#   - every listed package exists in Debian 12 (where apt has its lists);
#   - with TUNEFLEET_TEST_IMAGE=1 where a container engine runs, the image
#     builds from the Containerfile, its worker passes --preflight, and a
#     fleet of the image's coordinator and CPU worker (two containers)
#     tunes a kernel that tunectl, run from the image, submits and reads
#     back; it pulls images, so it is not done by default.
#     TUNEFLEET_IMAGE_BUILD_ARGS adds arguments to the build (for example
#     `--build-arg CUDA_IMAGE=... --pull=never` where the base images are
#     local: docs/operations.md, "The container image").
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

# What a worker's container needs for its sandbox: bubblewrap mounts a /proc
# of its own, which the engine's default seccomp profile and its masked
# /proc paths refuse (docs/operations.md, "Deploying").
sandbox_options() {
  case $engine in
    podman) echo "--security-opt seccomp=unconfined --security-opt unmask=/proc/*" ;;
    *) echo "--security-opt seccomp=unconfined --security-opt systempaths=unconfined" ;;
  esac
}

# The image as an operator runs it: the coordinator in one container (the
# image's entrypoint, SQLite in a volume), a CPU worker in another (its
# bubblewrap sandbox inside the container), on the host's loopback with a
# development CA, and tunectl from the image submitting a kernel of
# kernels/ and reading its best. Logs in $work/fleet.log.
image_fleet() {
  local tag=$1 name="tunefleet-packages-test-$$" address="" i
  "$source/scripts/dev-ca.sh" "$work/ca" coordinator >/dev/null
  "$source/scripts/dev-ca.sh" "$work/ca" worker image-worker >/dev/null
  # The containers run as the image's user (10001): the keys are theirs.
  mkdir -p "$work/data"
  if ! chown -R 10001:10001 "$work/ca" "$work/data"; then
    echo "the image's fleet needs a rootful engine here: its keys must belong to the" \
      "image's user (10001)" >"$work/fleet.log"
    return 1
  fi
  "$engine" run -d --name "$name-coordinator" --network host \
      -v "$work/ca:/ca:ro" -v "$work/data:/var/lib/tunefleet" "$tag" \
      --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data-dir /var/lib/tunefleet \
      --address-file /var/lib/tunefleet/address \
      --tls-cert /ca/coordinator.crt --tls-key /ca/coordinator.key --tls-client-ca /ca/ca.crt \
      --admin-token-file /var/lib/tunefleet/admin.token >/dev/null
  for i in $(seq 100); do
    [ -s "$work/data/address" ] && [ -s "$work/data/admin.token" ] && break
    sleep 0.1
  done
  address=$(cat "$work/data/address" 2>/dev/null)
  # shellcheck disable=SC2046  # the options are words
  "$engine" run -d --name "$name-worker" --network host $(sandbox_options) \
      -v "$work/ca:/ca:ro" --entrypoint /usr/bin/tunefleet-worker "$tag" \
      --coordinator "$address" --backend cpu --name image-worker --compile-threads 1 \
      --metrics-port 0 \
      --cache-dir /var/lib/tunefleet/cache --tls-ca /ca/ca.crt \
      --tls-cert /ca/worker-image-worker.crt --tls-key /ca/worker-image-worker.key >/dev/null
  local status=0
  "$engine" run --rm --network host -v "$work/ca:/ca:ro" -v "$work/data:/data:ro" \
      -v "$source/kernels:/kernels:ro" -e TUNEFLEET_SERVER="$address" \
      -e TUNEFLEET_CA_FILE=/ca/ca.crt --entrypoint /bin/sh "$tag" -c '
        set -e
        TUNEFLEET_TOKEN=$(tunectl --token-file /data/admin.token admin token create \
                            --role submit --name image-test)
        export TUNEFLEET_TOKEN
        tunectl submit /kernels/cpu/matmul --shape M=64,N=64,K=64 --strategy random \
          --budget 6 --seed 1 --wait
        tunectl best matmul --shape M=64,N=64,K=64' >"$work/fleet.log" 2>&1 || status=1
  grep -q "BLOCK" "$work/fleet.log" || status=1  # the best config, printed by tunectl
  for i in coordinator worker; do
    { echo "== $i"; "$engine" logs "$name-$i" 2>&1 | tail -20; } >>"$work/fleet.log"
    "$engine" rm -f "$name-$i" >/dev/null 2>&1 || true
  done
  [ "$status" = 0 ] || return 1
  echo "packages_test: the image's fleet tuned kernels/cpu/matmul:"
  sed -n '/^best\|BLOCK/p' "$work/fleet.log" | head -5
}

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
  # shellcheck disable=SC2086  # the extra build arguments are words
  if "$engine" build ${TUNEFLEET_IMAGE_BUILD_ARGS:-} -f "$source/deploy/Containerfile" \
      -t "$tag" "$source" >"$work/image.log" 2>&1; then
    # shellcheck disable=SC2046  # the options are words
    "$engine" run --rm $(sandbox_options) --entrypoint /usr/bin/tunefleet-worker "$tag" \
        --preflight --backend cpu >"$work/preflight.log" 2>&1 \
      || fail "the image's worker failed its preflight: $(cat "$work/preflight.log")"
    image_fleet "$tag" || fail "the image's fleet did not tune: $(cat "$work/fleet.log")"
    "$engine" rmi -f "$tag" >/dev/null 2>&1 || true
  else
    fail "the image does not build: $(tail -20 "$work/image.log")"
  fi
else
  echo "packages_test: the image was checked against the list only (TUNEFLEET_TEST_IMAGE=1 and" \
       "a running podman or docker build it: it pulls Debian's and NVIDIA's images)"
fi

((failures == 0)) || exit 1
echo "packages_test: the set-up, the image and the installed programs agree with the package list"

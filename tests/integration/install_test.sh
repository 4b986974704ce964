#!/usr/bin/env bash
# The installed tree runs on its own: `cmake --install` into a scratch
# prefix, then, from that prefix only (the build tree is not on PATH):
#   - a TLS fleet of the installed coordinator and a CPU worker, tuning
#     kernels/cpu/matmul with the installed tunectl and a submit token;
#   - the installed worker's --preflight for the CUDA backend (when built)
#     finds its tunefleet-nvrtc helper, and for the python backend its
#     package in the prefix's site directory;
#   - the Python package imports (generated stubs included) from there;
#   - tunectl's completions parse, each verb has a man page, and no page
#     names a build path;
#   - `tunectl health` (deploy/k8s's readiness probe) says SERVING (exit 7
#     trusting another CA, 6 in plaintext, each with its hint), and
#     exits 6 once the coordinator is gone;
#   - one client configuration: the C++ example application (from the build
#     tree), the installed Python package and tunectl reach the fleet from
#     TUNEFLEET_*, then from a context of tunectl's config file alone.
#
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "install_test: $*" >&2
  for log in "$work"/*.log; do [ -f "$log" ] && { echo "--- $log"; tail -20 "$log"; } >&2; done
  exit 1
}

prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
bin="$prefix/bin"
for file in bin/tunefleet-coordinator bin/tunefleet-worker bin/tunectl \
            share/bash-completion/completions/tunectl share/zsh/vendor-completions/_tunectl; do
  [ -e "$prefix/$file" ] || fail "not installed: $file"
done

# Completions: valid shell that defines the completion function.
bash -n "$prefix/share/bash-completion/completions/tunectl" || fail "bash completion does not parse"
grep -q "^complete .*-F _tunectl tunectl" "$prefix/share/bash-completion/completions/tunectl" \
  || fail "bash completion registers no function"
[ -e "$prefix/share/man/man1/tunectl-submit.1" ] || fail "no manual page per verb"
home=${HOME:-/nonexistent}
[ "$home" != / ] || home=/nonexistent
for page in "$prefix"/share/man/man1/*.1; do
  if grep -n -e "$build" -e "$home/" "$page"; then
    fail "$(basename "$page") names a path of the machine that built it"
  fi
done

# The CUDA backend's helper: the preflight's compiler step must not miss it
# (NVRTC itself may be missing on a machine without the toolkit's libraries).
if [ -e "$build/bin/tunefleet-nvrtc" ]; then
  [ -x "$prefix/libexec/tunefleet/tunefleet-nvrtc" ] || fail "tunefleet-nvrtc not installed"
  preflight=$(env -i PATH=/usr/bin:/bin HOME="$work" "$bin/tunefleet-worker" --preflight \
                --backend cuda --cache-dir "$work/cuda-cache" 2>&1 || true)
  echo "$preflight"
  grep -q "^compiler: " <<<"$preflight" || fail "the CUDA preflight printed no compiler step"
  if grep "^compiler: " <<<"$preflight" | grep -q "helper"; then
    fail "the installed CUDA worker does not find its NVRTC helper"
  fi
  # A compile-only worker needs no GPU: with NVRTC there, its preflight passes.
  if grep -q "^compiler: ok" <<<"$preflight"; then
    env -i PATH=/usr/bin:/bin HOME="$work" "$bin/tunefleet-worker" --preflight --backend cuda \
      --compile-only --target sm_90 --cache-dir "$work/cuda-cache" \
      || fail "the compile-only preflight failed on a machine with NVRTC"
  fi
fi

# The Python package from the prefix's site directory, stubs included.
site=$(cd "$prefix" && ls -d lib/python3*/dist-packages 2>/dev/null | head -1)
if [ -n "$site" ] && [ -x /usr/bin/python3 ]; then
  PYTHONPATH="$prefix/$site" /usr/bin/python3 -c \
    'import tunefleet, tunefleet.v1.tuning_service_pb2_grpc; print("python: tunefleet from", tunefleet.__file__)' \
    || fail "the installed Python package does not import"
  preflight=$(env -i PATH=/usr/bin:/bin HOME="$work" "$bin/tunefleet-worker" --preflight \
                --backend python --python /usr/bin/python3 --cache-dir "$work/py-cache" 2>&1 || true)
  echo "$preflight"
  grep -q "^python: ok .*package in $prefix/$site" <<<"$preflight" \
    || fail "the installed python worker does not find its package"
fi

# A TLS fleet of the installed programs.
ca="$work/ca"
"$source/scripts/dev-ca.sh" "$ca" coordinator
"$source/scripts/dev-ca.sh" "$ca" worker installed-worker
"$bin/tunefleet-coordinator" --listen 127.0.0.1:0 --data-dir "$work/data" \
  --address-file "$work/address" --metrics-listen 127.0.0.1:0 \
  --tls-cert "$ca/coordinator.crt" --tls-key "$ca/coordinator.key" --tls-client-ca "$ca/ca.crt" \
  --admin-token-file "$work/admin.token" >"$work/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -s "$work/address" ] && break; sleep 0.1; done
[ -s "$work/address" ] || fail "the installed coordinator did not start"
address=$(cat "$work/address")
env -i PATH=/usr/bin:/bin HOME="$work" "$bin/tunefleet-worker" --coordinator "$address" \
  --cache-dir "$work/worker-cache" --name installed-worker --compile-threads 1 \
  --tls-ca "$ca/ca.crt" --tls-cert "$ca/worker-installed-worker.crt" \
  --tls-key "$ca/worker-installed-worker.key" >"$work/worker.log" 2>&1 &
pids+=($!)

export TUNEFLEET_SERVER="$address" TUNEFLEET_CA_FILE="$ca/ca.crt" TUNEFLEET_CONFIG="$work/none"
# The readiness probe of deploy/k8s: gRPC health over TLS, no token.
health=$(HOME="$work" "$bin/tunectl" health) || fail "tunectl health: exit $? ($health)"
[ "$health" = SERVING ] || fail "tunectl health printed '$health'"
# Another fleet's CA, and plaintext: each mismatch named in tunectl's words
# (exit 7 for a certificate not accepted; 6 for a closed connection, with
# the hint to drop --insecure), never gRPC core's own line.
"$source/scripts/dev-ca.sh" "$work/other-ca" coordinator >/dev/null
status=0
said=$(HOME="$work" "$bin/tunectl" --ca-file "$work/other-ca/ca.crt" --timeout 3 health 2>&1) \
  || status=$?
[ "$status" = 7 ] || fail "tunectl trusting another CA: exit $status, not 7 ($said)"
grep -q "certificate was not accepted" <<<"$said" || fail "no word of the certificate: $said"
! grep -q "ssl_transport_security" <<<"$said" || fail "gRPC core's own line: $said"
status=0
said=$(HOME="$work" "$bin/tunectl" --insecure --timeout 3 health 2>&1) || status=$?
[ "$status" = 6 ] || fail "tunectl in plaintext to TLS: exit $status, not 6 ($said)"
grep -q "drop --insecure" <<<"$said" || fail "no hint to drop --insecure: $said"
! grep -q "ssl_transport_security" <<<"$said" || fail "gRPC core's own line: $said"
TUNEFLEET_TOKEN=$("$bin/tunectl" --token-file "$work/admin.token" \
  admin token create --role submit --name installer) || fail "no submit token"
export TUNEFLEET_TOKEN
"$bin/tunectl" -q submit "$source/kernels/cpu/matmul" --shape M=64,N=64,K=64 \
  --strategy random --budget 4 --seed 1 --wait >"$work/submit.log" 2>&1 \
  || fail "the job on the installed fleet failed"
best=$("$bin/tunectl" best matmul --shape M=64,N=64,K=64 -o json) || fail "no best config"
grep -q '"config"' <<<"$best" || fail "the best config has no config: $best"

# One client configuration: the C++ example application, the installed
# Python package and tunectl reach this TLS fleet from the environment, and
# then from a context of tunectl's config file alone.
example="$build/bin/best_config_example"
if [ -x "$example" ]; then
  answer=$("$example" matmul M=64,N=64,K=64 2>&1) || fail "the example failed: $answer"
  grep -q "^source: tunefleet, EXACT" <<<"$answer" \
    || fail "the example did not reach the fleet from TUNEFLEET_*: $answer"
fi
echo "$TUNEFLEET_TOKEN" > "$work/user.token"
from_config=(env -u TUNEFLEET_SERVER -u TUNEFLEET_CA_FILE -u TUNEFLEET_TOKEN -u TUNEFLEET_CONFIG
             -u TUNEFLEET_TOKEN_FILE -u TUNEFLEET_INSECURE -u TUNEFLEET_CONTEXT
             -u XDG_CONFIG_HOME HOME="$work/home")
"${from_config[@]}" "$bin/tunectl" config set-context fleet --server "$address" \
  --ca-file "$ca/ca.crt" --token-file "$work/user.token" >/dev/null \
  || fail "tunectl config set-context failed"
"${from_config[@]}" "$bin/tunectl" config use-context fleet >/dev/null \
  || fail "tunectl config use-context failed"
"${from_config[@]}" "$bin/tunectl" best matmul --shape M=64,N=64,K=64 >/dev/null \
  || fail "tunectl did not reach the fleet from its config file's context"
if [ -x "$example" ]; then
  answer=$("${from_config[@]}" "$example" matmul M=64,N=64,K=64 2>&1)
  grep -q "^source: tunefleet, EXACT" <<<"$answer" \
    || fail "the example did not reach the fleet from the config file's context: $answer"
fi
if [ -n "$site" ]; then
  tier=$("${from_config[@]}" PYTHONPATH="$prefix/$site" /usr/bin/python3 -c \
    'import tunefleet; print(tunefleet.Client().best("matmul", "M=64,N=64,K=64").tier)') \
    || fail "the Python client did not reach the fleet from the config file's context"
  [ "$tier" = exact ] || fail "the Python client's answer: $tier"
fi
# As deploy/k8s mounts it: the admin token 0440, its group one of the
# coordinator's own (the pod's fsGroup); the restarted coordinator takes it.
kill -TERM "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
chmod 0440 "$work/admin.token"
rm -f "$work/address"
"$bin/tunefleet-coordinator" --listen "$address" --data-dir "$work/data" \
  --address-file "$work/address" --metrics-listen 127.0.0.1:0 \
  --tls-cert "$ca/coordinator.crt" --tls-key "$ca/coordinator.key" --tls-client-ca "$ca/ca.crt" \
  --admin-token-file "$work/admin.token" >"$work/coordinator-again.log" 2>&1 &
pids[0]=$!
for _ in $(seq 200); do [ -s "$work/address" ] && break; sleep 0.1; done
[ -s "$work/address" ] || fail "the coordinator refused its 0440 admin token"
HOME="$work" "$bin/tunectl" --token-file "$work/admin.token" workers >/dev/null \
  || fail "the admin token of the 0440 file does not authenticate"
kill -TERM "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
status=0
HOME="$work" "$bin/tunectl" --timeout 2 health >/dev/null 2>&1 || status=$?
[ "$status" = 6 ] || fail "tunectl health against a stopped coordinator: exit $status, not 6"
echo "install_test: the installed coordinator, worker and tunectl tuned a kernel"

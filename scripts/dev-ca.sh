#!/usr/bin/env bash
# Makes a development certificate authority and certificates signed by it,
# for tests and the demo; docs/operations.md says how to use a real CA.
#
#   scripts/dev-ca.sh DIR coordinator [HOST...]   DIR/coordinator.{crt,key}, valid
#                                                  for localhost, 127.0.0.1 and HOSTs
#   scripts/dev-ca.sh DIR worker NAME              DIR/worker-NAME.{crt,key}; NAME is
#                                                  the worker's identity (common name)
#
# DIR/ca.{crt,key} is made on first use and reused after. Keys are P-256 and
# written mode 0600; certificates are valid for 30 days.
set -euo pipefail

usage() {
  sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
(($# >= 2)) || usage
dir="$1" kind="$2"
shift 2
mkdir -p "$dir"
umask 077

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [[ ! -f "$dir/ca.crt" ]]; then
  new_key "$dir/ca.key"
  openssl req -x509 -new -key "$dir/ca.key" -out "$dir/ca.crt" -days 30 \
    -subj "/CN=tunefleet development CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi

# sign NAME SUBJECT EXTENSIONS: DIR/NAME.{crt,key}
sign() {
  local name="$1" subject="$2" extensions="$3"
  new_key "$dir/$name.key"
  openssl req -new -key "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr" 2>/dev/null
  printf '%b' "$extensions" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 30 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
  chmod 644 "$dir/$name.crt" "$dir/ca.crt"
}

case "$kind" in
  coordinator)
    names="DNS:localhost,IP:127.0.0.1,IP:::1"
    for host in "$@"; do
      if [[ "$host" =~ ^[0-9.]+$ ]]; then names+=",IP:$host"; else names+=",DNS:$host"; fi
    done
    sign coordinator "/CN=tunefleet coordinator" \
      "subjectAltName=$names\nextendedKeyUsage=serverAuth\n"
    ;;
  worker)
    (($# == 1)) || usage
    [[ "$1" =~ ^[A-Za-z0-9._@-]{1,64}$ ]] || { echo "dev-ca: bad worker name $1" >&2; exit 2; }
    sign "worker-$1" "/CN=$1" "extendedKeyUsage=clientAuth\n"
    ;;
  *) usage ;;
esac

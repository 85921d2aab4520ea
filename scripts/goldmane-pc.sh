#!/usr/bin/env bash
# Run by hand, not in CI: checks calico-host's flow logs against Project Calico's own Goldmane,
# built from its source (its daemon, what `calico component goldmane` runs, and its
# goldmane/cmd/stream client). Builds our binaries, makes a throwaway CA with a server
# certificate for Goldmane (198.18.0.254 and "goldmane") and a client certificate for felix and
# the stream client, then runs test/e2e/goldmanerun: two simulated hosts in network namespaces,
# felix streaming flow logs to Goldmane over mutual TLS, allowed and denied connections, the
# flows read back with the stream client. Exits non-zero if Goldmane does not show the
# expected flows as felix sent them. Everything runs in namespaces named ccgm<pid>-*.
#
# Usage: sudo GOLDMANE=/path/to/goldmane STREAM=/path/to/stream scripts/goldmane-pc.sh
# GOLDMANE may also be Project Calico's unified binary with its subcommand:
#   GOLDMANE="/path/to/calico component goldmane"
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "goldmane-pc: needs root (network namespaces); run: sudo $0" >&2
  exit 1
fi
: "${GOLDMANE:?set GOLDMANE to Project Calico's goldmane daemon}"
: "${STREAM:?set STREAM to Project Calico's goldmane/cmd/stream client}"
export GOFLAGS="${GOFLAGS:--mod=mod}" CGO_ENABLED=0

work=$(mktemp -d /tmp/calico-goldmane-pc.XXXXXX)
trap 'rm -rf "$work"' EXIT
bin=$work/bin pki=$work/pki
mkdir -p "$bin" "$pki"

echo "Building our binaries into $bin ..."
go build -o "$bin/" ./cmd/calico ./cmd/calico-ipam ./cmd/calico-startup ./cmd/calico-confd ./cmd/calico-felix \
  ./cmd/calicoctl ./test/devetcd ./test/e2e/goldmanerun

echo "Making a throwaway CA, Goldmane's server certificate and a client certificate in $pki ..."
cnf=$pki/ext.cnf
printf '[server]\nsubjectAltName=DNS:goldmane,IP:198.18.0.254\nextendedKeyUsage=serverAuth\n[client]\nextendedKeyUsage=clientAuth\n' >"$cnf"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=goldmane-pc-ca \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
for who in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=goldmane-pc-$who" \
    -keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
    -extfile "$cnf" -extensions "$who" -out "$pki/$who.crt" 2>/dev/null
done

"$bin/goldmanerun" -bin "$bin" -pki "$pki" -stream "$STREAM" -goldmane "$GOLDMANE"

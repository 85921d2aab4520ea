#!/usr/bin/env bash
# Installs what building, testing and the demo need on Debian 12 (idempotent; quick when done).
# Run as root. Go itself (1.26) must already be on PATH.
set -euo pipefail

packages=(
  nftables          # nft, to inspect rulesets in tests
  bird2             # BGP daemon driven by calico-confd
  iproute2          # ip netns, veth, vxlan
  iputils-ping      # connectivity checks between namespaces
  netcat-openbsd    # TCP/UDP checks between namespaces
  etcd-server       # etcd binary: grpc-proxy and multi-member tests
  etcd-client       # etcdctl
  debootstrap       # packaging test: a Debian 12 root
  systemd-container # packaging test: systemd-nspawn --boot
  rpm               # packaging test: rpm -qip / --root installs
  lintian           # packaging test: .deb lint
  ca-certificates
  protobuf-compiler # protoc: go generate ./pkg/flowlog/goldmane/goldmanepb (the plugins are go tools)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Debian etcd-server package may start a system etcd on 127.0.0.1:2379; tests and the demo
# run their own, so keep it from holding the port where systemd runs it.
if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
  systemctl disable --now etcd >/dev/null 2>&1 || true
fi

cd "$(dirname "$0")/.."
GOFLAGS=-mod=mod go mod download

#!/usr/bin/env bash
# calico-felix side by side with Project Calico's felix (nftables mode) on the same etcd data:
# time from start to a programmed dataplane, peak and current RSS, ruleset size, then a series
# of changes and the RSS after them; the medians of several runs and the ratios (see
# test/e2e/felixcompare). Everything runs in network namespaces (fc<pid>-*), removed at the end.
#
# Usage: sudo scripts/felix-compare.sh [felixcompare flags]
#   e.g. scripts/felix-compare.sh -runs 3 -changes 60                    (calcbench: 1,000 local
#        + 10,000 remote endpoints, 1,000 policies, 100 network sets)
#        scripts/felix-compare.sh -data ../shared/reference/packet-path/etcd-data.json.gz -prefix calb
# Environment: CALICO_FELIX is Project Calico's calico-felix binary, or CALICO_SRC a source tree of
# projectcalico/calico to build it from; without either only ours is measured. BENCH_FELIX uses
# a prebuilt calico-felix of ours.
# Project Calico's felix needs, even in nftables mode: the iptables and ipset commands (it
# cleans up their state at start; apt install iptables ipset), and a build with cgo and libbpf
# (without, it panics in its BPF cleanup): libbpf's source of the version in its metadata.mk
# (v1.6.2) built in felix/bpf-gpl/libbpf/src (make BUILD_STATIC_ONLY=y OBJDIR=amd64), with
# libelf-dev, zlib1g-dev and libpcap-dev installed; CALICO_SRC builds with CGO_ENABLED=1.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "felix-compare: needs root (network namespaces)" >&2; exit 1; }
command -v etcd >/dev/null || { echo "felix-compare: needs etcd (scripts/install-deps.sh)" >&2; exit 1; }
export GOFLAGS="${GOFLAGS:--mod=mod}" CGO_ENABLED=0
bin=$(mktemp -d /tmp/felix-compare-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./test/e2e/felixcompare
ours=${BENCH_FELIX:-}
if [ -z "$ours" ]; then
  ours=$bin/calico-felix
  go build -trimpath -o "$ours" ./cmd/calico-felix
fi
theirs=${CALICO_FELIX:-}
if [ -z "$theirs" ] && [ -n "${CALICO_SRC:-}" ]; then
  theirs=$bin/project-calico-felix
  (cd "$CALICO_SRC" && CGO_ENABLED=1 go build -o "$theirs" ./felix/cmd/calico-felix)
fi
if [ -n "$theirs" ]; then
  for c in iptables-nft-save ipset; do
    command -v "$c" >/dev/null || { echo "felix-compare: Project Calico's felix needs $c (apt install iptables ipset)" >&2; exit 1; }
  done
fi
"$bin/felixcompare" -ours "$ours" -theirs "$theirs" "$@"

#!/usr/bin/env bash
# Scale measurements of calico-felix and of etcd under many felix syncers (see
# test/e2e/scale/main.go): calcbench's data set (1,000 local and 10,000 remote workload
# endpoints, 1,000 policies) in an etcd; felix's time to a programmed dataplane and its RSS; the
# latency from a policy or endpoint change in etcd to the kernel (p50, p99 over 200 changes);
# 50 felix syncers on etcd directly and through "etcd grpc-proxy" (the Debian etcd binary).
# Everything runs in network namespaces (ccscale<pid>-*) removed at the end, also on Ctrl-C.
#
# Usage: sudo scripts/scale.sh [-local N] [-remote N] [-policies N] [-changes N] [-syncers N]
#        [-burst N] [-skip-felix] [-keep]
# Environment: SKIP_DEPS=1 skips scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "scale: needs root (network namespaces)" >&2; exit 1; }
if [ "${SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi
export GOFLAGS="${GOFLAGS:--mod=mod}" CGO_ENABLED=0
bin=$(mktemp -d /tmp/calico-scale-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./test/devetcd ./test/e2e/scale ./cmd/calicoctl
go build -o "$bin/" ./cmd/calico-felix
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
"$bin/scale" -bin "$bin" "$@"

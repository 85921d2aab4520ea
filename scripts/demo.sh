#!/usr/bin/env bash
# The calico-host demo (make demo): installs what is missing, builds, then runs three simulated
# hosts in network namespaces joined by a bridge, with an embedded etcd (test/devetcd),
# calico-startup, calico-confd + BIRD and calico-felix on each, two workloads per host created
# through the CNI plugin and a policy applied with calicoctl. It prints which connections
# succeed and which are denied, calicoctl trace and the flow log lines of one allowed and one
# denied connection, the BGP sessions and where the logs are, then removes every namespace and
# process it created (also on Ctrl-C). Nothing touches the machine's own network:
# everything runs in namespaces named ccdemo<pid>-*.
#
# Usage: sudo scripts/demo.sh [-mode bgp|vxlan] [-hosts N] [-keep-running]
# Environment: SKIP_DEPS=1 skips scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "demo: needs root (network namespaces); run: sudo $0 $*" >&2
  exit 1
fi
if [ "${SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi
export GOFLAGS="${GOFLAGS:--mod=mod}" CGO_ENABLED=0

bin=$(mktemp -d /tmp/calico-demo-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
echo "Building the binaries into $bin ..."
start=$(date +%s)
go build -o "$bin/" ./cmd/calico ./cmd/calico-ipam ./cmd/calico-startup ./cmd/calico-confd ./cmd/calico-felix \
  ./cmd/calicoctl ./test/devetcd ./test/e2e/demo
echo "Built in $(( $(date +%s) - start ))s."
"$bin/demo" -bin "$bin" "$@"

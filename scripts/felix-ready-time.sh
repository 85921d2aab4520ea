#!/usr/bin/env bash
# Time from calico-felix's start to ready (first full dataplane apply after the datastore sync)
# and its memory, against an etcd loaded with bench data. etcd and felix run inside a fresh
# network namespace that the script creates and deletes (root only); the workloads' interfaces
# are veth pairs in it, so every endpoint is programmed and comes up.
#
# Usage: scripts/felix-ready-time.sh [WORKLOADS [POLICIES]]     (defaults 1000 and 100)
# Environment: BENCH_FELIX / BENCH_CALICOCTL use prebuilt binaries (default: built here, felix
# with -tags felixdataplane); KEEP=1 keeps the temporary directory (felix.log, etcd.log).
# Output: one line, e.g.
#   workloads=1000 policies=100 keys=1105 load=3.2s ready=1.84s rss=41.2MiB hwm=55.0MiB
set -euo pipefail

WORKLOADS=${1:-1000}
POLICIES=${2:-100}
HOST=bench-host
HEALTH_PORT=9099

[ "$(id -u)" = 0 ] || { echo "felix-ready-time: needs root (network namespaces)" >&2; exit 1; }
command -v etcd >/dev/null || { echo "felix-ready-time: needs etcd (scripts/install-deps.sh)" >&2; exit 1; }
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"

tmp=$(mktemp -d /tmp/felix-ready.XXXXXX)
ns=felix-ready-$$
etcd_pid= felix_pid=
cleanup() {
  [ -n "$felix_pid" ] && kill "$felix_pid" 2>/dev/null && wait "$felix_pid" 2>/dev/null || true
  [ -n "$etcd_pid" ] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
in_ns() { ip netns exec "$ns" "$@"; }
# Background processes are started with ip netns exec directly (not through in_ns, which would
# add a subshell): ip execs them, so $! is their pid.

# --- binaries ---------------------------------------------------------------------------------
felix_bin=${BENCH_FELIX:-}
if [ -z "$felix_bin" ]; then
  felix_bin=$tmp/calico-felix
  go build -tags felixdataplane -o "$felix_bin" ./cmd/calico-felix
fi
calicoctl_bin=${BENCH_CALICOCTL:-}
if [ -z "$calicoctl_bin" ]; then
  calicoctl_bin=$tmp/calicoctl
  go build -o "$calicoctl_bin" ./cmd/calicoctl
fi

# --- namespace and etcd -----------------------------------------------------------------------
ip netns add "$ns"
in_ns ip link set lo up
ip netns exec "$ns" etcd --name bench --data-dir "$tmp/etcd" --unsafe-no-fsync \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster bench=http://127.0.0.1:2380 >"$tmp/etcd.log" 2>&1 &
etcd_pid=$!
export ETCD_ENDPOINTS=http://127.0.0.1:2379
for _ in $(seq 100); do
  in_ns etcdctl --endpoints "$ETCD_ENDPOINTS" endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done

# --- bench data -------------------------------------------------------------------------------
# Workload i: interface cali<i, 11 digits>, address 10.65.x.y, labels app=app-<i % POLICIES> and
# role=fe-<i % 7>. Policy j selects app-j and allows TCP 80 and 443 from role fe-<j % 7>.
gen_yaml() {
  cat <<EOF
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: $HOST}
spec: {bgp: {ipv4Address: 198.18.0.1/24}}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench-pool}
spec: {cidr: 10.65.0.0/16, natOutgoing: true, vxlanMode: Never, ipipMode: Never}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: bench-net}
spec:
  ingress: [{action: Allow, source: {selector: has(bench-net)}}]
  egress: [{action: Allow}]
  labelsToApply: {bench-net: ""}
EOF
  awk -v n="$POLICIES" 'BEGIN { for (j = 0; j < n; j++) printf \
    "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: bench-%d}\n" \
    "spec:\n  selector: app == \"app-%d\"\n  ingress:\n  - action: Allow\n    protocol: TCP\n" \
    "    source: {selector: role == \"fe-%d\"}\n    destination: {ports: [80, 443]}\n", j, j, j % 7 }'
  awk -v n="$WORKLOADS" -v p="$POLICIES" -v host="${HOST//-/--}" -v node="$HOST" 'BEGIN { for (i = 0; i < n; i++) {
    cid = sprintf("%011d", i)
    printf "---\napiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n" \
      "metadata:\n  name: %s-cni-%s-eth0\n  namespace: default\n  labels: {app: app-%d, role: fe-%d}\n" \
      "spec:\n  orchestrator: cni\n  node: %s\n  containerID: \"%s\"\n  endpoint: eth0\n" \
      "  interfaceName: cali%s\n  ipNetworks: [10.65.%d.%d/32]\n  profiles: [bench-net]\n", \
      host, cid, i % p, i % 7, node, cid, cid, int((i + 1) / 256), (i + 1) % 256 } }'
}
t0=$(now)
# ClusterInformation is read-only for calicoctl: written as calico-node's startup writes it.
in_ns etcdctl --endpoints "$ETCD_ENDPOINTS" put /calico/resources/v3/projectcalico.org/clusterinformations/default \
  '{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default","uid":"6f1d1c9e-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"clusterGUID":"0123456789abcdef0123456789abcdef","clusterType":"bench","calicoVersion":"bench","datastoreReady":true}}' >/dev/null
gen_yaml >"$tmp/bench.yaml"
in_ns "$calicoctl_bin" apply -f "$tmp/bench.yaml" >"$tmp/apply.log"
keys=$(in_ns etcdctl --endpoints "$ETCD_ENDPOINTS" get --prefix /calico/ --keys-only | grep -c . || true)
load=$(elapsed "$t0" "$(now)")

# The workloads' interfaces (veth pairs; the peer stands for the container side), up, so that
# every endpoint is programmed and reported up.
awk -v n="$WORKLOADS" 'BEGIN { for (i = 0; i < n; i++) printf \
  "link add cali%011d type veth peer name wl%011d\nlink set wl%011d up\nlink set cali%011d up\n", i, i, i, i }' \
  >"$tmp/links.batch"
in_ns ip -batch "$tmp/links.batch"

# --- felix ------------------------------------------------------------------------------------
ready() { # GET /readiness over bash's /dev/tcp, inside the namespace
  in_ns bash -c "exec 3<>/dev/tcp/127.0.0.1/$HEALTH_PORT && printf 'GET /readiness HTTP/1.0\r\n\r\n' >&3 && head -1 <&3" \
    2>/dev/null | grep -q ' 200 '
}
t0=$(now)
ip netns exec "$ns" env FELIX_FELIXHOSTNAME=$HOST FELIX_HEALTHENABLED=true FELIX_HEALTHHOST=127.0.0.1 FELIX_HEALTHPORT=$HEALTH_PORT \
  FELIX_IPV6SUPPORT=false FELIX_LOGSEVERITYSCREEN=Info CALICO_LOG_FORMAT=text \
  "$felix_bin" --config "$tmp/none.toml" >"$tmp/felix.log" 2>&1 &
felix_pid=$!
until ready; do
  if ! kill -0 "$felix_pid" 2>/dev/null; then
    echo "felix-ready-time: calico-felix exited before it was ready:" >&2
    tail -20 "$tmp/felix.log" >&2
    exit 1
  fi
  sleep 0.02
done
t_ready=$(elapsed "$t0" "$(now)")
rss() { awk -v k="$1" '$1 == k":" { printf "%.1fMiB", $2 / 1024 }' "/proc/$felix_pid/status"; }
echo "workloads=$WORKLOADS policies=$POLICIES keys=$keys load=${load}s ready=${t_ready}s rss=$(rss VmRSS) hwm=$(rss VmHWM)"

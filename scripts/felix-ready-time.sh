#!/usr/bin/env bash
# Time from calico-felix's start to ready (first full dataplane apply after the datastore sync)
# and its memory, against an etcd loaded with bench data. etcd and felix run inside a fresh
# network namespace that the script creates and deletes (root only); the local workloads'
# interfaces are veth pairs in it, so every local endpoint is programmed and comes up.
#
# Usage: scripts/felix-ready-time.sh [LOCAL [REMOTE [POLICIES [NETSETS]]]]
#        (defaults 500 local and 5000 remote workload endpoints, 500 policies, 50 network sets)
# Environment: BENCH_FELIX uses a prebuilt calico-felix (default: built here); KEEP=1 keeps the
# temporary directory (felix.log, etcd.log); READY_TIMEOUT (seconds, default 600).
# Output: one line, e.g.
#   local=500 remote=5000 policies=500 netsets=50 keys=5843 load=3.20s ready=1.84s rss=41.2MiB hwm=55.0MiB nft_lines=9012
# (nft_lines: `nft list ruleset | wc -l` in the namespace once felix is ready)
set -euo pipefail

LOCAL=${1:-500}
REMOTE=${2:-5000}
POLICIES=${3:-500}
NETSETS=${4:-50}
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
  go build -o "$felix_bin" ./cmd/calico-felix
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
# calcbench's data set (pkg/felix/calc/calcbench.BenchData): LOCAL workloads on this host, REMOTE
# ones on other hosts, POLICIES policies, NETSETS network sets, with their nodes, host endpoints,
# pools, blocks, profiles, tiers and configuration; written by the loader in pkg/felix.
t0=$(now)
in_ns env BENCH_ETCD_ENDPOINTS="$ETCD_ENDPOINTS" BENCH_SPEC="$HOST,$LOCAL,$REMOTE,$POLICIES,$NETSETS" \
  BENCH_IFACES="$tmp/ifaces" go test -count=1 -run '^TestLoadBenchData$' ./pkg/felix/ >"$tmp/load.log" 2>&1 ||
  { cat "$tmp/load.log" >&2; exit 1; }
keys=$(in_ns etcdctl --endpoints "$ETCD_ENDPOINTS" get --prefix /calico/ --keys-only | grep -c . || true)
load=$(elapsed "$t0" "$(now)")

# The local workloads' interfaces (veth pairs; the peer stands for the container side), up, so
# that every local endpoint is programmed and reported up.
awk '{ printf "link add %s type veth peer name p%s\nlink set p%s up\nlink set %s up\n", $1, substr($1, 5), substr($1, 5), $1 }' \
  "$tmp/ifaces" >"$tmp/links.batch"
# The host's own interface with its address (calcbench's first node, 198.18.0.1/16): the VXLAN
# device's parent and the host endpoint's interface.
printf 'link add eth0 type veth peer name eth0-peer\naddress add 198.18.0.1/16 dev eth0\nlink set eth0-peer up\nlink set eth0 up\n' \
  >>"$tmp/links.batch"
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
deadline=$(( $(date +%s) + ${READY_TIMEOUT:-600} ))
until ready; do
  if ! kill -0 "$felix_pid" 2>/dev/null || [ "$(date +%s)" -gt "$deadline" ]; then
    echo "felix-ready-time: calico-felix exited or was not ready within ${READY_TIMEOUT:-600}s:" >&2
    tail -20 "$tmp/felix.log" >&2
    exit 1
  fi
  sleep 0.02
done
t_ready=$(elapsed "$t0" "$(now)")
rss() { awk -v k="$1" '$1 == k":" { printf "%.1fMiB", $2 / 1024 }' "/proc/$felix_pid/status"; }
rss_ready=$(rss VmRSS) hwm_ready=$(rss VmHWM)
lines=$(in_ns nft list ruleset | wc -l)
echo "local=$LOCAL remote=$REMOTE policies=$POLICIES netsets=$NETSETS keys=$keys load=${load}s ready=${t_ready}s rss=$rss_ready hwm=$hwm_ready nft_lines=$lines"

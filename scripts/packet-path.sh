#!/usr/bin/env bash
# Per-packet cost of our ruleset against Project Calico's, side by side on the same data and the
# same kernel (the data set and Project Calico's ruleset: ../shared/reference/packet-path).
#
# Four identical "hosts" (network namespaces), each with a client and a server workload behind
# veth pairs (calbppc 10.80.200.2 -> calbpps 10.80.200.1, routed through the host namespace as
# Calico wires workloads) and the 200 other local workload interfaces of the data set:
#   ours      etcd loaded with the data set, calico-felix programs the host, then felix and etcd stop
#             (the ruleset stays in force, as with `systemctl stop calico-felix`)
#   calico    Project Calico's felix ruleset for the same data, loaded with nft -f
#   conntrack only a conntrack "established" rule (what any stateful ruleset costs)
#   none      no ruleset at all
#   calnflog  (FLOWLOGS=1) Project Calico's ruleset with flow logs on: the NFLOG statement felix
#             puts on an allow rule, on the two rules these connections hit (pp-final egress and
#             ingress; a log on a rule that does not match costs nothing), and a reader of NFLOG
#             groups 1 and 2 (packetpath nflog) in that host
#   oursflow  (FLOWLOGS=1) ours with flow logs on (FlowLogsFileEnabled): calico-felix renders its
#             log statements into every verdict rule; felix and etcd stop as for ours, and the
#             same reader as calnflog reads groups 1 and 2
# Then new TCP connections/s client -> server (connect + 1 byte + close with RST, 4 dialers) in
# each, alternating, several rounds. Everything runs in namespaces pp<pid>-* removed at the end.
#
# Usage: sudo scripts/packet-path.sh [ROUNDS [SECONDS]]      (defaults 3 rounds of 5 s)
# Environment: PACKET_PATH_DATA (default ../shared/reference/packet-path beside the clone, or
# /work/shared/reference/packet-path), KEEP=1 keeps the temporary directory, FLOWLOGS=1 adds
# the calnflog variant.
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-5}
[ "$(id -u)" = 0 ] || { echo "packet-path: needs root (network namespaces)" >&2; exit 1; }
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}" CGO_ENABLED=0
data=${PACKET_PATH_DATA:-}
for d in "$data" ../shared/reference/packet-path /work/shared/reference/packet-path; do
  [ -n "$d" ] && [ -f "$d/etcd-data.json.gz" ] && { data=$d; break; }
done
[ -f "$data/etcd-data.json.gz" ] || { echo "packet-path: no data set (set PACKET_PATH_DATA)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/packet-path.XXXXXX)
tag=pp$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in $(ip netns list | awk -v t="$tag-" 'index($1, t) == 1 { print $1 }'); do ip netns del "$ns"; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap "exit 1" INT TERM

go build -o "$tmp/" ./cmd/calico-felix ./test/packetpath
zcat "$data/project-calico-ruleset.nft.gz" >"$tmp/calico.nft"
variants="ours calico conntrack none"
if [ "${FLOWLOGS:-0}" = 1 ]; then
  variants="$variants calnflog oursflow"
  # felix's prefixes for rule 0 of pp-final: egress logs to group 2, ingress to group 1.
  sed -e '/GlobalNetworkPolicy pp-final egress/s/tcp dport 5201 /&log prefix "API0|gnp\/pp-final" snaplen 80 group 2 /' \
    -e '/GlobalNetworkPolicy pp-final ingress/s/tcp dport 5201 /&log prefix "API0|gnp\/pp-final" snaplen 80 group 1 /' \
    "$tmp/calico.nft" >"$tmp/calnflog.nft"
  [ "$(grep -c 'log prefix "API0|gnp/pp-final"' "$tmp/calnflog.nft")" = 4 ] || { echo "packet-path: pp-final rules not found" >&2; exit 1; }
fi
nsx() { local ns=$1; shift; ip netns exec "$tag-$ns" "$@"; }
# Background processes are started with ip netns exec directly (not through nsx, which would add
# a subshell): ip execs them, so $! is their pid.

# workload NS VARIANT IFACE IP MAC: a workload namespace behind host interface IFACE.
workload() {
  local ns=$1-$2 v=$2 ifc=$3 ip=$4 mac=$5
  ip netns add "$tag-$ns"
  ip -n "$tag-$v" link add "$ifc" type veth peer name eth0 netns "$tag-$ns"
  ip -n "$tag-$v" link set "$ifc" address ee:ee:ee:ee:ee:ee up
  ip -n "$tag-$ns" link set lo up
  ip -n "$tag-$ns" link set eth0 address "$mac" up
  ip -n "$tag-$ns" addr add "$ip/32" dev eth0
  ip -n "$tag-$ns" route add 169.254.1.1 dev eth0 scope link
  ip -n "$tag-$ns" route add default via 169.254.1.1 dev eth0
  for k in proxy_arp=1 route_localnet=1 rp_filter=1 forwarding=1; do
    nsx "$v" sysctl -qw "net.ipv4.conf.$ifc.$k"
  done
  nsx "$v" sysctl -qw "net.ipv4.neigh.$ifc.proxy_delay=0"
}

# host VARIANT: the host namespace with both workloads and the other 200 local interfaces.
host() {
  local v=$1
  ip netns add "$tag-$v"
  nsx "$v" ip link set lo up
  nsx "$v" sysctl -qw net.ipv4.ip_forward=1
  {
    echo "link add eth0 type veth peer name eth0-peer"
    echo "address add 198.19.0.1/16 dev eth0"
    echo "link set eth0 up"
    # A default route out of eth0: proxy ARP answers a workload's ARP for 169.254.1.1 only when
    # the host routes that address out of another interface.
    echo "route add default via 198.19.255.254 dev eth0"
    echo "link set eth0-peer up"
    for i in $(seq -f %06g 0 199); do
      echo "link add calb$i type veth peer name p$i"
      echo "link set calb$i up"
      echo "link set p$i up"
    done
  } >"$tmp/links-$v.batch"
  nsx "$v" ip -batch "$tmp/links-$v.batch"
  workload srv "$v" calbpps 10.80.200.1 02:00:0a:50:c8:01
  workload cli "$v" calbppc 10.80.200.2 02:00:0a:50:c8:02
}

static_routes() {
  nsx "$1" ip route add 10.80.200.1 dev calbpps scope link
  nsx "$1" ip route add 10.80.200.2 dev calbppc scope link
}

# program_ours VARIANT [ENV...]: etcd + felix (with ENV) in the host namespace until the dataplane
# is programmed, then both stop.
program_ours() {
  local v=$1
  shift
  ip netns exec "$tag-$v" bash -c "exec etcd --name pp --data-dir $tmp/etcd-$v --unsafe-no-fsync \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster pp=http://127.0.0.1:2380 >$tmp/etcd-$v.log 2>&1" &
  local etcd=$!
  pids+=("$etcd")
  for _ in $(seq 100); do nsx "$v" etcdctl --endpoints http://127.0.0.1:2379 endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
  nsx "$v" "$tmp/packetpath" load -endpoints http://127.0.0.1:2379 -data "$data/etcd-data.json.gz"
  : >"$tmp/none.toml"
  ip netns exec "$tag-$v" env ETCD_ENDPOINTS=http://127.0.0.1:2379 FELIX_FELIXHOSTNAME=bench-host FELIX_INTERFACEPREFIX=calb \
    FELIX_HEALTHENABLED=true FELIX_HEALTHHOST=127.0.0.1 FELIX_HEALTHPORT=9099 CALICO_LOG_FORMAT=text "$@" \
    "$tmp/calico-felix" --config "$tmp/none.toml" >"$tmp/felix-$v.log" 2>&1 &
  local felix=$!
  pids+=("$felix")
  local t0=$SECONDS
  until nsx "$v" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9099 && printf "GET /readiness HTTP/1.0\r\n\r\n" >&3 && head -1 <&3' 2>/dev/null | grep -q ' 200 '; do
    kill -0 "$felix" 2>/dev/null && [ $((SECONDS - t0)) -lt 120 ] || { tail -20 "$tmp/felix-$v.log" >&2; exit 1; }
    sleep 0.1
  done
  # Felix programs the workload routes itself; wait for them (they need the interfaces up).
  until nsx "$v" ip route show 10.80.200.1 | grep -q calbpps && nsx "$v" ip route show 10.80.200.2 | grep -q calbppc; do
    [ $((SECONDS - t0)) -lt 120 ] || { echo "packet-path: felix programmed no workload routes" >&2; exit 1; }
    sleep 0.1
  done
  [ "${DEBUG:-0}" = 1 ] && return
  kill "$felix" "$etcd"
  wait "$felix" "$etcd" 2>/dev/null || true
}

for v in $variants; do host "$v"; done
for v in $variants; do [[ $v == ours* ]] || static_routes "$v"; done
nsx calico nft -f "$tmp/calico.nft"
if [[ " $variants " == *" calnflog "* ]]; then
  nsx calnflog nft -f "$tmp/calnflog.nft"
  ip netns exec "$tag-calnflog" "$tmp/packetpath" nflog >"$tmp/nflog.out" &
  nflog_reader=$!
  pids+=("$nflog_reader")
fi
nsx conntrack nft -f - <<'EOF'
table inet ctonly {
	chain forward {
		type filter hook forward priority filter; policy accept;
		ct state established,related accept
		ct state invalid drop
	}
}
EOF
program_ours ours
if [[ " $variants " == *" oursflow "* ]]; then
  program_ours oursflow FELIX_FLOWLOGSFILEENABLED=true FELIX_FLOWLOGSFILEDIRECTORY="$tmp/flows"
  [ "$(nsx oursflow nft list ruleset | grep -c 'log prefix .* group [12] snaplen 80')" -gt 0 ] ||
    { echo "packet-path: oursflow has no NFLOG statement" >&2; exit 1; }
  ip netns exec "$tag-oursflow" "$tmp/packetpath" nflog >"$tmp/nflog-ours.out" &
  nflog_ours=$!
  pids+=("$nflog_ours")
fi
if [ "${DEBUG:-0}" = 1 ]; then
  echo "DEBUG: namespaces $tag-*, directory $tmp; kill $$ to clean up"; sleep infinity & wait $!; exit 0
fi
echo "ruleset lines: ours $(nsx ours nft list ruleset | wc -l), Project Calico $(nsx calico nft list ruleset | wc -l)"
echo "load average: $(cat /proc/loadavg)"

for v in $variants; do
  ip netns exec "$tag-srv-$v" "$tmp/packetpath" serve -addr 10.80.200.1:5201 >/dev/null &
  pids+=("$!")
done
sleep 0.5
declare -A rates
for r in $(seq "$ROUNDS"); do
  order=$variants
  [ $((r % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$variants" | tac | tr '\n' ' ')
  for v in $order; do
    out=$(nsx "cli-$v" "$tmp/packetpath" dial -addr 10.80.200.1:5201 -c 4 -d "${SECS}s")
    rate=$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' <<<"$out")
    rates[$v]="${rates[$v]:-} $rate"
    echo "round $r $v: $out"
  done
done
summary() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ a[NR] = $1 } END { printf "min %d median %d max %d", a[1], a[int((NR + 1) / 2)], a[NR] }'; }
for v in $variants; do echo "$v: $(summary "${rates[$v]}") conns/s"; done
if [ -n "${nflog_reader:-}" ]; then
  kill "$nflog_reader"; wait "$nflog_reader" 2>/dev/null || true
  echo "calnflog NFLOG reader: $(cat "$tmp/nflog.out")"
fi
if [ -n "${nflog_ours:-}" ]; then
  kill "$nflog_ours"; wait "$nflog_ours" 2>/dev/null || true
  echo "oursflow NFLOG reader: $(cat "$tmp/nflog-ours.out")"
fi
echo "load average: $(cat /proc/loadavg)"
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
awk -v o="$(med "${rates[ours]}")" -v c="$(med "${rates[calico]}")" 'BEGIN { printf "ours / Project Calico (medians): %.2fx\n", o / c }'
if [[ " $variants " == *" oursflow "* ]]; then
  awk -v f="$(med "${rates[oursflow]}")" -v o="$(med "${rates[ours]}")" 'BEGIN { printf "ours with flow logs / without (medians): %.2fx\n", f / o }'
fi

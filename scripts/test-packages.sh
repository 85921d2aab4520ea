#!/usr/bin/env bash
# Packaging test (make test-packages): install our .deb files into a booted Debian 12
# (systemd-nspawn --boot, private network), run the daemons under systemd and check what an
# operator would: units reach "active (running)" through sd_notify READY, calicoctl sees the
# node, the watchdog restarts a hung felix, an invalid configuration file makes a daemon exit 78
# and stay failed (no restart loop), stopping felix keeps the nftables rules, reinstalling and
# upgrading keep the owner and mode an admin gave the configuration files, apt remove keeps the
# configuration and says what stays in force, apt purge removes it with felix's nftables tables,
# routes and VXLAN devices, confd's BIRD config and startup's nodename file; the man pages are
# installed. The .rpm files are checked with rpm -qip, rpm -qlp and an install into a scratch
# root; the .debs with lintian (no errors, no warnings).
#
# The Debian root is built once with debootstrap and cached in $CALICO_PKGTEST_CACHE
# (default /var/cache/calico-host, outside the clone); each run boots a copy of it.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CALICO_PKGTEST_CACHE:-/var/cache/calico-host}
BASE=$CACHE/debian12-base
BASE_STAMP=$BASE/.calico-pkgtest-v2
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DIST=${DIST:-dist}
WORK=$(mktemp -d /var/tmp/calico-pkgtest.XXXXXX)
MACHINE=calico-pkgtest
LEADER=""
NSPAWN=""
failures=0

log() { printf '\n=== %s\n' "$*"; }
pass() { printf 'PASS: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
check() { local desc=$1; shift; if "$@"; then pass "$desc"; else fail "$desc"; fi; }
in_ct() { nsenter -t "$LEADER" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C "$@"; }

cleanup() {
  if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
    kill "$NSPAWN" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$NSPAWN" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# wait_for TIMEOUT_SECONDS DESCRIPTION COMMAND...: retry COMMAND until it succeeds.
wait_for() {
  local timeout=$1 desc=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after ${timeout}s waiting for: $desc"; return 1; fi
    sleep 1
  done
}

ensure_base() {
  [ -f "$BASE_STAMP" ] && return 0
  log "Building the Debian 12 root with debootstrap (cached in $BASE)"
  rm -rf "$BASE.tmp"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,iproute2,nftables,bird2,etcd-server,etcd-client,ca-certificates,procps,kmod,iputils-ping \
    bookworm "$BASE.tmp" "$MIRROR"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$BASE.tmp/etc/hosts"
  echo pkgtest-host >"$BASE.tmp/etc/hostname"
  # A single-member etcd on loopback only.
  cat >"$BASE.tmp/etc/default/etcd" <<'EOF'
ETCD_NAME=pkgtest
ETCD_LISTEN_CLIENT_URLS=http://127.0.0.1:2379
ETCD_ADVERTISE_CLIENT_URLS=http://127.0.0.1:2379
ETCD_LISTEN_PEER_URLS=http://127.0.0.1:2380
ETCD_INITIAL_ADVERTISE_PEER_URLS=http://127.0.0.1:2380
ETCD_INITIAL_CLUSTER=pkgtest=http://127.0.0.1:2380
EOF
  chroot "$BASE.tmp" systemctl disable etcd.service bird.service >/dev/null 2>&1 || true
  rm -rf "$BASE"
  mv "$BASE.tmp" "$BASE"
  touch "$BASE_STAMP"
}

boot() {
  log "Booting a copy of the root with systemd-nspawn --boot --private-network"
  cp -a "$BASE" "$WORK/root"
  mkdir -p "$WORK/root/debs"
  cp "$DIST"/*.deb "$WORK/root/debs/"
  systemd-nspawn --boot --private-network --register=no --keep-unit --machine="$MACHINE" \
    --directory="$WORK/root" >"$WORK/console.log" 2>&1 </dev/null &
  NSPAWN=$!
  wait_for 30 "container init" pgrep -P "$NSPAWN" -x systemd
  LEADER=$(pgrep -P "$NSPAWN" -x systemd)
  wait_for 60 "systemd in the container" sh -c \
    "nsenter -t $LEADER -a systemctl is-system-running 2>/dev/null | grep -Eq 'running|degraded'"
  # The container's network: a veth pair inside its own namespace, a 198.18.0.0/15 address
  # and a default route, so address autodetection has something to find.
  in_ct ip link add eth0 type veth peer name eth0-peer
  in_ct ip addr add 198.18.0.10/24 dev eth0
  in_ct ip link set eth0 up
  in_ct ip link set eth0-peer up
  in_ct ip route add default via 198.18.0.1 dev eth0
  pass "container booted"
}

unit_running() { [ "$(in_ct systemctl show -p ActiveState --value "$1")" = active ] &&
  [ "$(in_ct systemctl show -p SubState --value "$1")" = running ]; }

install_and_start() {
  log "apt install ./*.deb; systemctl enable --now etcd calico-startup calico-confd calico-felix"
  in_ct systemctl enable --now etcd.service
  wait_for 60 "etcd healthy" in_ct etcdctl --endpoints=http://127.0.0.1:2379 endpoint health
  in_ct sh -c 'cd /debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb' >"$WORK/apt.log" 2>&1 ||
    { cat "$WORK/apt.log"; fail "apt install of our packages"; return 1; }
  pass "apt install ./*.deb"
  check "nothing enabled by installing" sh -c "! nsenter -t $LEADER -a systemctl is-enabled -q calico-felix.service"
  in_ct mkdir -p /etc/systemd/system/calico-felix.service.d
  printf '[Service]\nWatchdogSec=6s\nRestartSec=1s\n' | in_ct tee /etc/systemd/system/calico-felix.service.d/10-test.conf >/dev/null
  in_ct systemctl daemon-reload
  in_ct systemctl enable --now calico-startup.service calico-confd.service calico-felix.service || true
  for u in calico-startup calico-confd calico-bird calico-felix; do
    if wait_for 90 "$u active (running)" unit_running "$u.service"; then
      pass "$u.service is active (running)"
    else
      fail "$u.service is active (running)"
      in_ct journalctl -u "$u.service" --no-pager -n 40 || true
    fi
  done
}

check_node() {
  log "calicoctl get nodes"
  local out
  out=$(in_ct calicoctl get nodes -o wide 2>&1) || true
  echo "$out"
  check "calicoctl get nodes shows the host" grep -q pkgtest-host <<<"$out"
}

check_workload() {
  log "A workload interface: felix (hardened unit) writes its sysctls, route and policy chains"
  in_ct ip link add calipkgtest0 type veth peer name calipkgtest0p
  in_ct ip link set calipkgtest0 up
  in_ct ip link set calipkgtest0p up
  in_ct calicoctl apply -f - <<'EOF2'
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata:
  name: pkgtest--host-cni-pkgtest-eth0
  namespace: default
spec:
  node: pkgtest-host
  orchestrator: cni
  containerID: pkgtest
  workload: pkgtest
  endpoint: eth0
  interfaceName: calipkgtest0
  ipNetworks: [10.65.0.5/32]
EOF2
  check "felix set proxy_arp on the workload interface" wait_for 30 "proxy_arp" \
    sh -c "[ \"\$(nsenter -t $LEADER -a cat /proc/sys/net/ipv4/conf/calipkgtest0/proxy_arp)\" = 1 ]"
  check "felix routed the workload address" wait_for 30 "route" \
    sh -c "nsenter -t $LEADER -a ip route show 10.65.0.5 | grep -q calipkgtest0"
  check "felix programmed the workload's policy chains" wait_for 30 "chains" \
    sh -c "nsenter -t $LEADER -a nft list table ip calico | grep -q 'calipkgtest0'"
}

check_watchdog() {
  log "SIGSTOP calico-felix: the watchdog (WatchdogSec=6s) must get it killed and restarted"
  local pid restarts
  pid=$(in_ct systemctl show -p MainPID --value calico-felix.service)
  restarts=$(in_ct systemctl show -p NRestarts --value calico-felix.service)
  in_ct kill -STOP "$pid"
  if wait_for 60 "felix restarted" sh -c \
    "[ \"\$(nsenter -t $LEADER -a systemctl show -p NRestarts --value calico-felix.service)\" -gt $restarts ]" &&
    wait_for 60 "felix running again" unit_running calico-felix.service; then
    pass "watchdog restarted a hung calico-felix (NRestarts $restarts -> $(in_ct systemctl show -p NRestarts --value calico-felix.service))"
  else
    fail "watchdog restarted a hung calico-felix"
  fi
  in_ct journalctl -u calico-felix.service --no-pager | grep -i watchdog | tail -2 || true
}

check_stop_keeps_rules() {
  log "systemctl stop calico-felix leaves the nftables rules in place"
  wait_for 30 "felix table" in_ct nft list table ip calico || true
  local before after
  before=$(in_ct nft list table ip calico 2>/dev/null | grep -c 'chain ' || true)
  in_ct systemctl stop calico-felix.service
  after=$(in_ct nft list table ip calico 2>/dev/null | grep -c 'chain ' || true)
  echo "chains before stop: $before, after: $after"
  check "nftables table kept after stop" test "$before" -gt 0 -a "$after" = "$before"
}

# check_bad_config UNIT FILE LINE: with LINE appended to FILE the unit's daemon exits 78
# (EX_CONFIG) and, by RestartPreventExitStatus=78, the unit stays failed instead of being
# restarted every few seconds; with the file restored it starts again.
check_bad_config() {
  local unit=$1 file=$2 line=$3
  log "Invalid $file: $unit exits 78 and is not restarted"
  in_ct cp -a "$file" "$file.pkgtest"
  printf '%s\n' "$line" | in_ct tee -a "$file" >/dev/null
  # A manual restart resets NRestarts to 0; any automatic restart after the failure counts.
  in_ct systemctl restart "$unit" >/dev/null 2>&1 || true
  if wait_for 30 "$unit failed" sh -c \
    "[ \"\$(nsenter -t $LEADER -a systemctl show -p SubState --value $unit)\" = failed ]"; then
    pass "$unit stays failed on an invalid $file"
  else
    fail "$unit stays failed on an invalid $file (state $(in_ct systemctl show -p ActiveState -p SubState --value "$unit" | tr '\n' ' '))"
  fi
  check "$unit exited with status 78" test "$(in_ct systemctl show -p ExecMainStatus --value "$unit")" = 78
  check "$unit was not restarted" test "$(in_ct systemctl show -p NRestarts --value "$unit")" = 0
  in_ct journalctl -u "$unit" --no-pager -n 3 || true
  in_ct mv "$file.pkgtest" "$file"
  in_ct systemctl reset-failed "$unit"
  in_ct systemctl start "$unit" || true
  check "$unit runs again with the file fixed" wait_for 90 "$unit running" unit_running "$unit"
}

# make_newer_debs PACKAGE...: repack our .debs with version <version>+pkgtest1 into /debs-newer.
make_newer_debs() {
  local p d out=$WORK/root/debs-newer
  mkdir -p "$out"
  for p in "$@"; do
    d=$WORK/repack-$p
    dpkg-deb -R "$DIST/${p}"_*.deb "$d"
    sed -i -E 's/^Version: (.*)$/Version: \1+pkgtest1/' "$d/DEBIAN/control"
    dpkg-deb -b "$d" "$out/" >/dev/null
  done
}

# modes_kept DESCRIPTION: the admin's stricter owner/mode of the configuration files is intact.
modes_kept() {
  check "$1: datastore.toml still 600 root:root" test "$(in_ct stat -c '%a %U:%G' /etc/calico/datastore.toml)" = "600 root:root"
  check "$1: felix.toml still 600 root:root" test "$(in_ct stat -c '%a %U:%G' /etc/calico/felix.toml)" = "600 root:root"
}

check_upgrade_keeps_modes() {
  log "Reinstalls and upgrades keep the owner and mode an admin gave the configuration files"
  check "first install: datastore.toml is 640 root:calico" \
    test "$(in_ct stat -c '%a %U:%G' /etc/calico/datastore.toml)" = "640 root:calico"
  in_ct chmod 0600 /etc/calico/datastore.toml /etc/calico/felix.toml
  in_ct chgrp root /etc/calico/datastore.toml /etc/calico/felix.toml
  in_ct sh -c 'cd /debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall ./*.deb' >>"$WORK/apt.log" 2>&1 ||
    fail "apt install --reinstall of the same packages"
  modes_kept "reinstall of the same version"
  make_newer_debs calico-common calico-felix calico-confd calico-startup
  in_ct sh -c 'cd /debs-newer && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb' >>"$WORK/apt.log" 2>&1 ||
    fail "apt install of newer packages"
  check "calico-common upgraded to the newer version" \
    sh -c "nsenter -t $LEADER -a dpkg-query -W -f='\${Version}' calico-common | grep -q '+pkgtest1\$'"
  modes_kept "upgrade to a newer version"
}

# felix_leftovers lists felix's tables, routes (protocol 80 anywhere, boot through cali*: felix's
# DeviceRouteProtocol) and VXLAN devices.
felix_leftovers() {
  in_ct sh -c 'nft list tables; ip -4 route show table all proto 80 | sed "s/^/felix route: /"
    ip -6 route show table all proto 80 | sed "s/^/felix route: /"
    for d in $(ip -o link show | sed -n "s/^[0-9]*: \(cali[^:@ ]*\).*/\1/p"); do
      ip -4 route show dev "$d" proto boot | sed "s/^/felix route: dev $d /"
      ip -6 route show dev "$d" proto boot | sed "s/^/felix route: dev $d /"
    done; ip -br link show type vxlan' 2>/dev/null |
    grep -E 'table ip6? calico$|^felix route: |^vxlan(-v6)?\.calico' || true
}

# leftovers_complete LIST: felix_leftovers output with both tables, a route and vxlan.calico.
leftovers_complete() { [ "$(grep -cE 'calico$|^felix route: ' <<<"$1")" -ge 3 ] && grep -q '^vxlan\.calico' <<<"$1"; }

check_remove_purge() {
  log "apt remove keeps configuration and says what stays in force; apt purge removes configuration, felix's tables, routes and devices, confd's BIRD config, startup's nodename"
  in_ct systemctl start calico-felix.service
  wait_for 30 "felix route" sh -c "nsenter -t $LEADER -a ip route show proto boot | grep -q calipkgtest0" || true
  # Not felix's: must survive the purge.
  in_ct ip link add vxlan.other type vxlan id 77 dstport 4790 dev eth0
  in_ct ip route add 198.18.77.0/24 dev eth0 proto static
  in_ct nft add table ip other
  local out
  out=$(in_ct env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q calico-node calico-felix calico-confd calico-startup 2>&1)
  echo "$out" >>"$WORK/apt.log"
  echo "$out" | grep -A5 'stays in force' || true
  for u in calico-startup calico-confd calico-bird calico-felix; do
    check "$u stopped by apt remove" sh -c "! nsenter -t $LEADER -a systemctl is-active -q $u.service"
  done
  check "apt remove says the nftables tables stay in force" grep -q 'nftables tables: ip calico,ip6 calico' <<<"$out"
  check "apt remove says the routes stay in force" grep -qE '[0-9]+ routes with protocol 80 or' <<<"$out"
  check "configuration kept after remove" in_ct test -f /etc/calico/felix.toml -a -f /etc/calico/node.toml -a -f /etc/calico/confd.toml
  check "felix's tables and routes still in force after remove" sh -c "[ \"\$(nsenter -t $LEADER -a nft list tables | grep -c 'calico\$')\" = 2 ]"
  check "rendered BIRD config and nodename present before purge" in_ct test -f /etc/calico/confd/config/bird.cfg -a -f /var/lib/calico/nodename
  # vxlan.calico stands in for the device felix creates with VXLAN pools (this test's pool has
  # none, and a running felix deletes it), to show that the purge removes it by name.
  in_ct ip link add vxlan.calico type vxlan id 4096 dstport 4789 dev eth0
  local before
  before=$(felix_leftovers)
  echo "before purge:"; echo "$before"
  check "before purge: felix's two tables, a route of felix's and vxlan.calico are there" leftovers_complete "$before"
  in_ct env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q calico-felix calico-confd calico-startup calico-common >>"$WORK/apt.log" 2>&1
  check "configuration removed by purge" in_ct sh -c '! test -e /etc/calico/felix.toml && ! test -e /etc/calico/datastore.toml'
  local left
  left=$(felix_leftovers)
  echo "after purge: ${left:-nothing}"
  check "purge removed felix's nftables tables, routes and VXLAN devices" test -z "$left"
  check "purge removed the rendered BIRD config" in_ct sh -c '! ls /etc/calico/confd/config/*.cfg 2>/dev/null | grep -q .'
  check "purge removed the nodename file and endpoint status files" in_ct sh -c '! test -e /var/lib/calico/nodename && ! test -e /var/run/calico/endpoint-status'
  check "purge left others' table, route and device alone" in_ct sh -c \
    'nft list table ip other >/dev/null && ip route show 198.18.77.0/24 proto static | grep -q eth0 && ip link show vxlan.other >/dev/null'
}

check_man_pages() {
  log "man pages installed, one per binary and configuration file"
  local p
  for p in man8/calico-felix.8 man8/calico-confd.8 man8/calico-startup.8 man8/calico.8 man8/calico-ipam.8 man1/calicoctl.1 \
    man5/calico-felix.toml.5 man5/calico-confd.toml.5 man5/calico-node.toml.5 man5/calico-datastore.toml.5; do
    check "$p.gz installed" in_ct sh -c "zcat /usr/share/man/$p.gz | grep -q '^\.SH NAME'"
  done
}

check_lintian() {
  log "lintian on the .deb files"
  local out
  out=$(lintian --tag-display-limit 0 "$DIST"/*.deb 2>&1 || true)
  echo "$out" | grep -E '^(E|W):' | sort | uniq -c | sort -rn | head -30 || true
  if grep -q '^E:' <<<"$out"; then fail "lintian reports no errors"; else pass "lintian reports no errors"; fi
  if grep -q '^W:' <<<"$out"; then fail "lintian reports no warnings"; else pass "lintian reports no warnings"; fi
}

check_rpms() {
  log "rpm -qip / -qlp and an install into a scratch root"
  local n=0
  for f in "$DIST"/*.rpm; do
    rpm -qip "$f" >/dev/null && rpm -qlp "$f" >/dev/null && n=$((n + 1))
  done
  check "rpm -qip and -qlp read all $n rpm files" [ "$n" -eq "$(ls "$DIST"/*.rpm | wc -l)" ]
  rpm -qlp "$DIST"/calico-felix-*.rpm
  mkdir -p "$WORK/rpmroot"
  rpm --root "$WORK/rpmroot" --initdb
  rpm --root "$WORK/rpmroot" -i --nodeps --noscripts "$DIST"/*.rpm
  check "rpm install put the binaries and units in place" test -x "$WORK/rpmroot/usr/bin/calico-felix" -a \
    -f "$WORK/rpmroot/lib/systemd/system/calico-felix.service" -a -x "$WORK/rpmroot/opt/cni/bin/calico"
  check "rpm database lists 7 packages" [ "$(rpm --root "$WORK/rpmroot" -qa | grep -c calico)" -eq 7 ]
}

# check_rpm_keeps_modes: rpm resets a %config(noreplace) file's mode on reinstall and upgrade;
# the scriptlets (run by rpm --root in a copy of the Debian root) must put the admin's back.
check_rpm_keeps_modes() {
  log "rpm -i, chmod 0600, rpm -U --replacepkgs: the scriptlets keep the admin's mode"
  local r=$WORK/rpmchroot
  cp -a "$BASE" "$r"
  rpm --root "$r" --initdb
  rpm --root "$r" -i --nodeps "$DIST"/calico-common-*.rpm 2>&1 | grep -v '^rpm: ' || true
  check "rpm first install: datastore.toml is 640 root:calico" \
    test "$(chroot "$r" stat -c '%a %U:%G' /etc/calico/datastore.toml)" = "640 root:calico"
  chroot "$r" chmod 0600 /etc/calico/datastore.toml
  chroot "$r" chgrp root /etc/calico/datastore.toml
  rpm --root "$r" -U --replacepkgs --nodeps "$DIST"/calico-common-*.rpm 2>&1 | grep -v '^rpm: ' || true
  check "rpm reinstall: datastore.toml still 600 root:root" \
    test "$(chroot "$r" stat -c '%a %U:%G' /etc/calico/datastore.toml)" = "600 root:root"
}

main() {
  [ "$(id -u)" = 0 ] || { echo "test-packages must run as root"; exit 1; }
  ls "$DIST"/*.deb >/dev/null 2>&1 || { echo "no packages in $DIST: run make packages"; exit 1; }
  check "7 .deb and 7 .rpm files" test "$(ls "$DIST"/*.deb | wc -l)" -eq 7 -a "$(ls "$DIST"/*.rpm | wc -l)" -eq 7
  check_lintian
  check_rpms
  ensure_base
  check_rpm_keeps_modes
  boot
  install_and_start
  check_node
  check_man_pages
  check_workload
  check_watchdog
  check_bad_config calico-startup.service /etc/calico/node.toml 'bogus_key = 1'
  check_bad_config calico-confd.service /etc/calico/confd.toml 'bogus_key = 1'
  check_bad_config calico-felix.service /etc/calico/felix.toml 'InterfacePrefix = = 1'
  check_stop_keeps_rules
  check_upgrade_keeps_modes
  check_remove_purge
  log "$failures check(s) failed"
  [ "$failures" -eq 0 ]
}

main "$@"

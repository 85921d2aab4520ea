#!/bin/sh
# calico-felix postrm. Stopping or removing felix leaves its dataplane in force on purpose (policy
# keeps being enforced, workloads keep their routes): "remove" says so; "purge" takes it away:
# the nftables tables ip calico and ip6 calico, felix's routes (those with its route protocol 80,
# and with protocol boot, felix's default DeviceRouteProtocol, through workload interfaces cali*;
# routes through the VXLAN devices go with them), the VXLAN devices vxlan.calico and
# vxlan-v6.calico, the WireGuard devices wireguard.cali and wg-v6.cali and felix's routing rules
# for them (priority 99, "not fwmark", WireguardRoutingRulePriority's default), the addresses felix
# gave the IPIP device tunl0 (the kernel's fallback device, which cannot be deleted), and felix's
# state files (WireGuard private keys included). Only objects with calico-felix's names (and
# protocol numbers) are touched: a boot route through another interface is not felix's. With
# another DeviceRouteProtocol or InterfacePrefix, remove those routes by hand. rpm's erase
# ($1 = 0) is a remove.
set -e
PROTO=80
tables() { command -v nft >/dev/null 2>&1 || return 0; for f in ip ip6; do nft list table "$f" calico >/dev/null 2>&1 && echo "$f calico"; done; return 0; }
vxlans() { for d in vxlan.calico vxlan-v6.calico; do ip -d link show "$d" 2>/dev/null | grep -qw vxlan && echo "$d"; done; return 0; }
wgs() { for d in wireguard.cali wg-v6.cali; do ip -d link show "$d" 2>/dev/null | grep -qw wireguard && echo "$d"; done; return 0; }
wgrules() { for f in -4 -6; do ip $f rule show priority 99 2>/dev/null | sed -n "s/^99:[[:space:]]*not from all fwmark \([0-9a-fx\/]*\) lookup \([0-9a-z]*\).*/$f \1 \2/p"; done; return 0; }
calis() { ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: \(cali[^:@ ]*\).*/\1/p'; return 0; }
devroutes() { for d in $(calis); do ip -4 route show dev "$d" proto boot; ip -6 route show dev "$d" proto boot; done 2>/dev/null; return 0; }
nroutes() { command -v ip >/dev/null 2>&1 || { echo 0; return 0; }; { ip -4 route show table all proto $PROTO; ip -6 route show table all proto $PROTO; devroutes; } 2>/dev/null | wc -l; }

case "$1" in
  remove|0)
    t=$(tables | tr '\n' ',' | sed 's/,$//'); v=$(vxlans | tr '\n' ' '); r=$(nroutes); w=$(wgs | tr '\n' ' ')
    if [ -n "$t" ] || [ -n "$v" ] || [ -n "$w" ] || [ "$r" -gt 0 ]; then
      echo "calico-felix is removed, but its dataplane stays in force until reboot:"
      [ -n "$t" ] && echo "  nftables tables: $t (policy is still enforced)"
      [ "$r" -gt 0 ] && echo "  $r routes with protocol $PROTO or, through cali* interfaces, boot (ip route show proto $PROTO; ip route show proto boot)"
      [ -n "$v" ] && echo "  VXLAN devices: $v"
      [ -n "$w" ] && echo "  WireGuard devices: $w (and their routing rules)"
      echo "apt purge calico-felix removes them."
    fi
    ;;
  purge)
    tables | while read -r fam name; do nft delete table "$fam" "$name" || true; done
    if command -v ip >/dev/null 2>&1; then
      ip -4 route flush table all proto $PROTO 2>/dev/null || true
      ip -6 route flush table all proto $PROTO 2>/dev/null || true
      for d in $(calis); do
        ip -4 route flush dev "$d" proto boot 2>/dev/null || true
        ip -6 route flush dev "$d" proto boot 2>/dev/null || true
      done
      vxlans | while read -r d; do ip link delete "$d" || true; done
      wgs | while read -r d; do ip link delete "$d" || true; done
      wgrules | while read -r f mark table; do ip "$f" rule del priority 99 not fwmark "$mark" table "$table" 2>/dev/null || true; done
      if ip -d link show tunl0 2>/dev/null | grep -qw ipip; then
        ip addr flush dev tunl0 2>/dev/null || true
        ip link set tunl0 down 2>/dev/null || true
      fi
    fi
    rm -rf /var/run/calico/endpoint-status /var/lib/calico/mtu /var/lib/calico/wireguard-private-key /var/lib/calico/wireguard-private-key-v6
    echo "calico-felix purged: its nftables tables, routes (protocol $PROTO, and boot through cali* interfaces), VXLAN and WireGuard devices, WireGuard routing rules and state files are removed."
    ;;
esac
[ -x /usr/lib/calico-host/maint ] && /usr/lib/calico-host/maint postrm
exit 0

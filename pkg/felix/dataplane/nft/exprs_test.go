package nft

import (
	"net"
	"net/netip"
	"testing"
)

func TestPrimitiveText(t *testing.T) {
	mac, _ := net.ParseMAC("aa:bb:cc:dd:ee:ff")
	for _, tc := range []struct {
		x    Expr
		want string
	}{
		{IIFName("cali1"), `iifname "cali1"`},
		{IIFName("cali*"), `iifname "cali*"`},
		{Not(OIFName("cali*")), `oifname != "cali*"`},
		{IIFNameInSet("ifs"), `iifname @ifs`},
		{Not(OIFNameInSet("ifs")), `oifname != @ifs`},
		{L4Proto(ProtoTCP), `meta l4proto tcp`},
		{L4Proto(4), `meta l4proto 4`},
		{Not(L4Proto(ProtoUDP)), `meta l4proto != udp`},
		{SAddr(netip.MustParsePrefix("10.65.0.5/32")), `ip saddr 10.65.0.5`},
		{DAddr(netip.MustParsePrefix("10.65.0.0/16")), `ip daddr 10.65.0.0/16`},
		{Not(DAddr(netip.MustParsePrefix("fd5c::/16"))), `ip6 daddr != fd5c::/16`},
		{SAddrInSet(IPv4, "cali40s-x"), `ip saddr @cali40s-x`},
		{Not(DAddrInSet(IPv6, "cali60s-x")), `ip6 daddr != @cali60s-x`},
		{DPort(ProtoTCP, Port(80)), `tcp dport 80`},
		{SPort(ProtoUDP, Ports(1000, 2000)), `udp sport 1000-2000`},
		{DPort(ProtoSCTP, Port(443), Ports(1000, 2000), Port(80)), `sctp dport { 80, 443, 1000-2000 }`},
		{Not(DPort(ProtoUDPLite, Port(80), Port(443))), `udplite dport != { 80, 443 }`},
		{DPort(ProtoTCP, Port(80), Port(81)), `tcp dport 80-81`},
		{DPort(0, Port(53)), `th dport 53`},
		{InSet("cali40n-x", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)), `ip daddr . meta l4proto . th dport @cali40n-x`},
		{ICMPType(IPv4, 8), `icmp type echo-request`},
		{ICMPCode(IPv4, 0), `icmp code net-unreachable`},
		{ICMPType(IPv6, 135), `icmpv6 type nd-neighbor-solicit`},
		{Not(ICMPType(IPv6, 200)), `icmpv6 type != 200`},
		{CTStateIn(CTStateRelated | CTStateEstablished), `ct state established,related`},
		{CTStateIn(CTStateInvalid), `ct state invalid`},
		{CTStatusDNAT(), `ct status dnat`},
		{Not(CTStatusDNAT()), `ct status ! dnat`},
		{MarkMatch(0x10000, 0x10000), `meta mark & 0x00010000 == 0x00010000`},
		{Not(MarkMatch(0x20000, 0x20000)), `meta mark & 0x00020000 != 0x00020000`},
		{MarkMatch(0x30000, 0), `meta mark & 0x00030000 == 0x00000000`},
		{MarkMatch(0xffffffff, 1), `meta mark 0x00000001`},
		{FibNoRoute(FibSAddr | FibMark | FibIIF), `fib saddr . mark . iif oif 0`},
		{FibAddrType(FibDAddr, AddrTypeLocal), `fib daddr type local`},
		{Not(FibAddrType(FibSAddr|FibOIF, AddrTypeLocal)), `fib saddr . oif type != local`},
		{NFProto(IPv4), `meta nfproto ipv4`},
		{NFProto(IPv6), `meta nfproto ipv6`},
		{EtherSAddr(mac), `ether saddr aa:bb:cc:dd:ee:ff`},
		{Counter(), `counter`},
		{Accept(), `accept`},
		{Drop(), `drop`},
		{Return(), `return`},
		{Jump("cali-x"), `jump cali-x`},
		{Goto("cali-pi-gnp/allow-web"), `goto cali-pi-gnp/allow-web`},
		{Jump("9 bad"), `jump "9 bad"`},
		{Reject(), `reject`},
		{AndMark(0xfffcffff), `meta mark set meta mark & 0xfffcffff`},
		{OrMark(0x10000), `meta mark set meta mark | 0x00010000`},
		{SetMark(0xfffcffff, 0x10000), `meta mark set meta mark & 0xfffdffff | 0x00010000`},
		{SetMark(0, 0x1), `meta mark set 0x00000001`},
		{Log("calico-packet: "), `log prefix "calico-packet: " level info`},
		{Masquerade(), `masquerade`},
		{MasqueradeFullyRandom(), `masquerade fully-random`},
		{MasqueradeToPorts(Ports(1024, 65535), false), `masquerade to :1024-65535`},
		{MasqueradeToPorts(Ports(4790, 65535), true), `masquerade to :4790-65535 fully-random`},
		{SNAT(netip.MustParseAddr("198.18.0.1")), `snat ip to 198.18.0.1`},
		{DNAT(netip.MustParseAddr("198.18.0.1"), 8775), `dnat ip to 198.18.0.1:8775`},
		{DNAT(netip.MustParseAddr("fd5c::1"), 80), `dnat ip6 to [fd5c::1]:80`},
		{SNATToPorts(netip.MustParseAddr("198.18.0.1"), Ports(1024, 65535)), `snat ip to 198.18.0.1:1024-65535`},
		{SNATToPorts(netip.MustParseAddr("fd5c::1"), Ports(32768, 65535)), `snat ip6 to [fd5c::1]:32768-65535`},
		{Notrack(), `notrack`},
		{IIFNameVmap("cali-from-wl-dispatch"), `iifname vmap @cali-from-wl-dispatch`},
		{OIFNameVmap("m"), `oifname vmap @m`},
	} {
		if got := tc.x.String(); got != tc.want {
			t.Errorf("%#v: got %q, want %q", tc.x, got, tc.want)
		}
	}
}

func TestRuleText(t *testing.T) {
	r := NewRule(L4Proto(ProtoTCP), DPort(ProtoTCP, Port(80)), Counter(), Accept()).WithComment(`allow "web"`)
	want := `meta l4proto tcp tcp dport 80 counter accept comment "allow _web_"`
	if got := r.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPrimitivesComparable guards the Applier's cheap chain comparison:
// comparing two rules with == must never panic.
func TestPrimitivesComparable(t *testing.T) {
	mac, _ := net.ParseMAC("aa:bb:cc:dd:ee:ff")
	all := []Expr{
		IIFName("a"), IIFNameInSet("s"), InSet("s", FieldDAddr(IPv4), FieldL4Proto), L4Proto(6),
		SAddr(netip.MustParsePrefix("10.0.0.0/8")), DPort(6, Port(1), Port(5)), ICMPType(IPv4, 8),
		CTStateIn(CTStateNew), CTStatusDNAT(), MarkMatch(1, 1), FibNoRoute(FibSAddr), NFProto(IPv4),
		EtherSAddr(mac), Counter(), Accept(), Jump("x"), Reject(), OrMark(1), Log("x"), Masquerade(),
		SNAT(netip.MustParseAddr("1.2.3.4")), Notrack(), IIFNameVmap("m"),
	}
	for _, x := range all {
		a := []Rule{NewRule(x)}
		b := []Rule{NewRule(x)}
		if !rulesEqual(a, b) {
			t.Errorf("%s is not equal to itself", x)
		}
		if rulesEqual(a, []Rule{NewRule(Drop())}) && x != Expr(Drop()) {
			t.Errorf("%s equals drop", x)
		}
	}
}

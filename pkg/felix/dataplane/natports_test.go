package dataplane

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
)

// natPool is a natOutgoing pool of the test workloads, with VXLAN when vxlan is set.
func natPool(vxlan bool) calc.Update {
	p := &calc.IPPool{Name: "pool1", CIDR: pfx("10.65.0.0/16"), NATOutgoing: true}
	if vxlan {
		p.VXLANMode = "Always"
	}
	return calc.IPPoolUpdate{Pool: p}
}

// tcpFromPort connects from ns with the given local port and reports the peer the server saw.
func tcpFromPort(t *testing.T, ns *netnstest.NS, port int, srv *tcpServer, addr string, dport int) netip.AddrPort {
	t.Helper()
	ns.Do(t, func() {
		d := net.Dialer{LocalAddr: &net.TCPAddr{Port: port}, Timeout: time.Second}
		c, err := d.Dial("tcp", net.JoinHostPort(addr, strconv.Itoa(dport)))
		if err != nil {
			t.Fatalf("tcp from port %d: %v", port, err)
		}
		_ = echo(c)
		c.Close()
	})
	return srv.lastRemote()
}

// natCase is one configuration of TestKernelNATOutgoingPorts and the source ports the fabric
// must see.
type natCase struct {
	name      string
	portRange nft.PortRange
	vxlan     bool
	udp, tcp  [2]int // every UDP / TCP source port the fabric sees is in this range (tcp zero: not checked)
	udpSome   [2]int // at least one UDP source port is in this range (zero: not checked)
}

// TestKernelNATOutgoingPorts sends real UDP flows (and a TCP connection) from a workload of a
// natOutgoing pool to the fabric and looks at the source ports the fabric sees. NAT outgoing is
// fully random, so each UDP case sends 10 flows: NATPortRange confines both protocols; with
// VXLAN on, UDP never gets the VXLAN port, and a NATPortRange around it shrinks to the larger
// side; without VXLAN that same range does hand out ports below the VXLAN port (so the checks
// can tell the difference).
func TestKernelNATOutgoingPorts(t *testing.T) {
	for _, tc := range []natCase{
		{name: "NATPortRange", portRange: nft.Ports(20000, 20009), udp: [2]int{20000, 20009}, tcp: [2]int{20000, 20009}},
		{name: "VXLAN and a range around its port", portRange: nft.Ports(4780, 4800), vxlan: true, udp: [2]int{4790, 4800}, tcp: [2]int{4780, 4800}},
		{name: "VXLAN", vxlan: true, udp: [2]int{4790, 65535}},
		{name: "no VXLAN, range around 4789", portRange: nft.Ports(4780, 4800), udp: [2]int{4780, 4800}, udpSome: [2]int{4780, 4789}},
	} {
		t.Run(tc.name, func(t *testing.T) { testNATOutgoingPorts(t, tc) })
	}
}

func testNATOutgoingPorts(t *testing.T, tc natCase) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	usrv := listenUDP(t, tp.fabric, "198.18.0.2", 7000)
	tsrv := listenTCP(t, tp.fabric, "198.18.0.2", 7001)
	ups := []calc.Update{egressAll(), kwep("a", ifA, ipA), natPool(tc.vxlan)}
	if tc.vxlan {
		ups = append(ups, calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), VXLANTunnelAddrV4: addr("10.65.63.1"), VXLANTunnelMAC: "66:00:00:00:00:01"})
	}
	startDataplane(t, tp, Config{NATPortRange: tc.portRange}, ups...)
	in := func(p netip.AddrPort, r [2]int) bool { return int(p.Port()) >= r[0] && int(p.Port()) <= r[1] }
	some := false
	for sport := 40001; sport <= 40010; sport++ { // at most as many flows as the smallest range has ports
		if !canUDP(t, a, ipA+":"+strconv.Itoa(sport), "198.18.0.2", 7000) {
			t.Fatalf("UDP from port %d got no answer", sport)
		}
		p := usrv.lastPeer()
		if p.Addr() != netip.MustParseAddr("198.18.0.1") || !in(p, tc.udp) {
			t.Errorf("UDP from port %d arrived from %s, want 198.18.0.1 and a port in %v", sport, p, tc.udp)
		}
		some = some || in(p, tc.udpSome)
	}
	if tc.udpSome != [2]int{} && !some {
		t.Errorf("no UDP flow got a port in %v", tc.udpSome)
	}
	if tc.tcp != [2]int{} {
		if p := tcpFromPort(t, a, 40100, tsrv, "198.18.0.2", 7001); !in(p, tc.tcp) {
			t.Errorf("TCP from port 40100 arrived from %s, want a port in %v", p, tc.tcp)
		}
	}
}

// TestNATOutgoingOfOneVersionOnly: natOutgoing on the IPv6 pool and then off again, while the
// IPv4 pool keeps it: the ip6 table's NAT outgoing chain goes with its pool sets (the chain of
// the same name in the ip table stays). Before, the ip6 chain stayed, referring to the deleted
// sets, and every later transaction was refused (found by test/e2e TestIPv6/dual).
func TestNATOutgoingOfOneVersionOnly(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	pool6 := func(nat bool) calc.Update {
		return calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p6", CIDR: pfx("fd5c::/48"), NATOutgoing: nat}}
	}
	h.send(natPool(false), pool6(true))
	nat := "nat-cali-nat-outgoing"
	if !strings.Contains(h.fake.Dump(), "table ip6 calico") || h.chainRulesIn(1, nat) == "" {
		t.Fatalf("no IPv6 NAT outgoing chain:\n%s", h.fake.Dump())
	}
	h.send(pool6(false))
	if h.chainRulesIn(1, nat) != "" || strings.Contains(h.fake.Dump(), "cali60masq-ipam-pools") {
		t.Errorf("the ip6 table kept NAT outgoing:\n%s", h.fake.Dump())
	}
	if h.chainRulesIn(0, nat) == "" {
		t.Errorf("the ip table lost NAT outgoing:\n%s", h.fake.Dump())
	}
	h.send(pool6(true))
	if h.chainRulesIn(1, nat) == "" {
		t.Errorf("no IPv6 NAT outgoing chain after turning it on again:\n%s", h.fake.Dump())
	}
}

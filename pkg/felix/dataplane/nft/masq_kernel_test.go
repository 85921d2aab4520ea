package nft

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// natTopology is client -- router -- server: the client (10.65.0.2) routes through the router
// (10.65.0.1 / 198.18.0.1), which forwards to the server (198.18.0.2) and has our table.
type natTopology struct {
	client, router, server *testNetNS
}

func newNATTopology(t *testing.T) *natTopology {
	n := &natTopology{client: newNetNS(t), router: newNetNS(t), server: newNetNS(t)}
	run(t, "ip", "link", "add", "vethC", "netns", n.client.name, "type", "veth", "peer", "name", "vethRC", "netns", n.router.name)
	run(t, "ip", "link", "add", "vethS", "netns", n.server.name, "type", "veth", "peer", "name", "vethRS", "netns", n.router.name)
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.65.0.2/24", "dev", "vethC"}, {"ip", "link", "set", "vethC", "up"},
		{"ip", "route", "add", "default", "via", "10.65.0.1"},
	} {
		n.client.exec(t, c...)
	}
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.65.0.1/24", "dev", "vethRC"}, {"ip", "link", "set", "vethRC", "up"},
		{"ip", "addr", "add", "198.18.0.1/24", "dev", "vethRS"}, {"ip", "link", "set", "vethRS", "up"},
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
	} {
		n.router.exec(t, c...)
	}
	n.server.exec(t, "ip", "addr", "add", "198.18.0.2/24", "dev", "vethS")
	n.server.exec(t, "ip", "link", "set", "vethS", "up")
	return n
}

// masqRuleset masquerades what leaves the router towards the server with the given statement
// for UDP.
func masqRuleset(udp Expr) *Ruleset {
	rs := NewRuleset()
	rs.AddChain(&Chain{Name: "nat-POSTROUTING", Base: &BaseChain{Type: TypeNAT, Hook: HookPostrouting, Priority: PrioritySrcNAT + 10},
		Rules: []Rule{
			NewRule(OIFName("vethRS"), L4Proto(ProtoUDP), Counter(), udp),
			NewRule(OIFName("vethRS"), Counter(), Masquerade()),
		}})
	return rs
}

// udpSourcePorts sends one datagram from each client port to the server and returns the
// source address and ports the server saw.
func (n *natTopology) udpSourcePorts(t *testing.T, clientPorts []int) (netip.Addr, []int) {
	t.Helper()
	var srv *net.UDPConn
	inNetNS(t, n.server, func() {
		var err error
		if srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(198, 18, 0, 2), Port: 9999}); err != nil {
			t.Fatal(err)
		}
	})
	defer srv.Close()
	for _, p := range clientPorts {
		inNetNS(t, n.client, func() {
			c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 65, 0, 2), Port: p}, &net.UDPAddr{IP: net.IPv4(198, 18, 0, 2), Port: 9999})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
		})
	}
	var from netip.Addr
	var ports []int
	buf := make([]byte, 64)
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range clientPorts {
		_, addr, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("server received %d of %d datagrams: %v", len(ports), len(clientPorts), err)
		}
		from = addr.Addr()
		ports = append(ports, int(addr.Port()))
	}
	return from, ports
}

// TestKernelMasqueradePortRange sends real UDP datagrams through a router that masquerades
// them to a port range: every source port the server sees lies in the range, while plain
// masquerade keeps the client's ports (so the range, not chance, moved them). nft shows the
// range and the flags nft itself would send.
func TestKernelMasqueradePortRange(t *testing.T) {
	n := newNATTopology(t)
	a, _ := n.router.applier(t)
	clientPorts := []int{40001, 40002, 40003, 40004, 40005, 40006}

	n.router.apply(t, a, masqRuleset(Masquerade()))
	from, ports := n.udpSourcePorts(t, clientPorts)
	if from != netip.MustParseAddr("198.18.0.1") {
		t.Fatalf("plain masquerade: server saw source %s, want the router's 198.18.0.1", from)
	}
	if !equalInts(ports, clientPorts) {
		t.Fatalf("plain masquerade changed the source ports: %v, want %v", ports, clientPorts)
	}

	for i, fullyRandom := range []bool{false, true} {
		clientPorts := []int{41001 + 10*i, 41002 + 10*i, 41003 + 10*i, 41004 + 10*i} // new flows: no conntrack entries yet
		n.router.apply(t, a, masqRuleset(MasqueradeToPorts(Ports(20000, 20009), fullyRandom)))
		out := n.router.exec(t, "nft", "list", "chain", "inet", "calico", "nat-POSTROUTING")
		want := `meta l4proto udp counter packets 0 bytes 0 masquerade to :20000-20009 comment`
		if fullyRandom {
			want = strings.Replace(want, " comment", " fully-random comment", 1)
		}
		if !strings.Contains(out, want) {
			t.Errorf("nft list shows no %q:\n%s", want, out)
		}
		debug := n.router.exec(t, "nft", "--debug=netlink", "list", "chain", "inet", "calico", "nat-POSTROUTING")
		flags := map[bool]string{false: "flags 0x2 ]", true: "flags 0x12 ]"}[fullyRandom]
		if !strings.Contains(debug, "[ masq proto_min reg 1 proto_max reg 2 "+flags) {
			t.Errorf("netlink encoding lacks %q:\n%s", flags, debug)
		}
		from, ports := n.udpSourcePorts(t, clientPorts)
		for _, p := range ports {
			if p < 20000 || p > 20009 || from != netip.MustParseAddr("198.18.0.1") {
				t.Errorf("fully-random=%t: server saw %s:%d, want 198.18.0.1 and a port in 20000-20009 (all: %v)", fullyRandom, from, p, ports)
			}
		}
	}
	// A restarted Applier reads back exactly what it wrote: nothing to do.
	a2, _ := n.router.applier(t)
	if st := n.router.apply(t, a2, masqRuleset(MasqueradeToPorts(Ports(20000, 20009), true))); st.Ops != 0 {
		t.Errorf("full sync after restart: %+v, want no operations", st)
	}
}

// TestKernelMasqueradePortRangeNeedsLeanSender: the per-message-acks mode cannot splice, so it
// refuses the transaction instead of programming a masquerade that ignores its range.
func TestKernelMasqueradePortRangeNeedsLeanSender(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applierWith(t, NetlinkConfig{PerMessageAcks: true})
	if _, err := a.Apply(t.Context(), masqRuleset(MasqueradeToPorts(Ports(20000, 20009), false))); err == nil ||
		!strings.Contains(err.Error(), "lean sender") {
		t.Errorf("Apply = %v, want the lean sender error", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

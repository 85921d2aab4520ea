package kernel

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// natTopology is client -- router -- server: the client (10.65.0.2) routes
// through the router (10.65.0.1 / 198.18.0.1), which forwards to the server
// (198.18.0.2) and holds our table.
type natTopology struct {
	client, router, server *nstest.NS
}

func newNATTopology(t *testing.T) *natTopology {
	n := &natTopology{client: nstest.New(t), router: nstest.New(t), server: nstest.New(t)}
	netnstest.Run(t, "ip", "link", "add", "vethC", "netns", n.client.Name, "type", "veth", "peer", "name", "vethRC", "netns", n.router.Name)
	netnstest.Run(t, "ip", "link", "add", "vethS", "netns", n.server.Name, "type", "veth", "peer", "name", "vethRS", "netns", n.router.Name)
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.65.0.2/24", "dev", "vethC"}, {"ip", "link", "set", "vethC", "up"},
		{"ip", "route", "add", "default", "via", "10.65.0.1"},
	} {
		n.client.Exec(t, c...)
	}
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.65.0.1/24", "dev", "vethRC"}, {"ip", "link", "set", "vethRC", "up"},
		{"ip", "addr", "add", "198.18.0.1/24", "dev", "vethRS"}, {"ip", "link", "set", "vethRS", "up"},
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
	} {
		n.router.Exec(t, c...)
	}
	n.server.Exec(t, "ip", "addr", "add", "198.18.0.2/24", "dev", "vethS")
	n.server.Exec(t, "ip", "link", "set", "vethS", "up")
	return n
}

// masqTable masquerades what leaves the router towards the server, UDP
// with the given statement.
func masqTable(t *testing.T, udp nft.Expr) *nft.Table {
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutChain(&nft.Chain{Name: "nat-POSTROUTING",
		Base: &nft.BaseChain{Type: nft.ChainNAT, Hook: nft.HookPostrouting, Priority: nft.PrioritySrcNAT + 10},
		Rules: []nft.Rule{
			nft.NewRule(nft.OIFName("vethRS"), nft.L4Proto(nft.ProtoUDP), nft.Counter(), udp),
			nft.NewRule(nft.OIFName("vethRS"), nft.Counter(), nft.Masquerade()),
		}}))
	return tb
}

// udpSourcePorts sends one datagram from each client port to the server
// and returns the source address and ports the server saw.
func (n *natTopology) udpSourcePorts(t *testing.T, clientPorts []int) (netip.Addr, []int) {
	t.Helper()
	var srv *net.UDPConn
	n.server.Do(t, func() {
		var err error
		if srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(198, 18, 0, 2), Port: 9999}); err != nil {
			t.Fatal(err)
		}
	})
	defer srv.Close()
	for _, p := range clientPorts {
		n.client.Do(t, func() {
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

// TestKernelMasqueradePortRange sends real UDP datagrams through a router
// that masquerades them to a port range: every source port the server sees
// lies in the range, while plain masquerade keeps the client's ports (so
// the range, not chance, moved them). nft shows the range and nft's own
// encoding, flags included (google/nftables v0.3.0 loses them).
func TestKernelMasqueradePortRange(t *testing.T) {
	n := newNATTopology(t)
	k := newBackend(t, n.router)
	a := newApplier(t, k, masqTable(t, nft.Masquerade()))
	applyOK(t, a, masqTable(t, nft.Masquerade()))
	clientPorts := []int{40001, 40002, 40003, 40004, 40005, 40006}
	from, ports := n.udpSourcePorts(t, clientPorts)
	if from != a4("198.18.0.1") || !slices.Equal(ports, clientPorts) {
		t.Fatalf("plain masquerade: server saw %s %v, want 198.18.0.1 and the client's ports", from, ports)
	}
	for i, fullyRandom := range []bool{false, true} {
		clientPorts := []int{41001 + 10*i, 41002 + 10*i, 41003 + 10*i, 41004 + 10*i} // new flows: no conntrack entries yet
		applyOK(t, a, masqTable(t, nft.MasqueradeToPorts(nft.Ports(20000, 20009), fullyRandom)))
		out := n.router.Exec(t, "nft", "list", "chain", "ip", "calico", "nat-POSTROUTING")
		want := "masquerade to :20000-20009"
		if fullyRandom {
			want += " fully-random"
		}
		if !strings.Contains(out, want+"\n") {
			t.Errorf("nft list shows no %q:\n%s", want, out)
		}
		debug := n.router.Exec(t, "nft", "--debug=netlink", "list", "chain", "ip", "calico", "nat-POSTROUTING")
		flags := map[bool]string{false: "flags 0x2 ]", true: "flags 0x12 ]"}[fullyRandom]
		if !strings.Contains(debug, "[ masq proto_min reg 1 proto_max reg 2 "+flags) {
			t.Errorf("netlink encoding lacks %q:\n%s", flags, debug)
		}
		from, ports := n.udpSourcePorts(t, clientPorts)
		for _, p := range ports {
			if p < 20000 || p > 20009 || from != a4("198.18.0.1") {
				t.Errorf("fully-random=%t: server saw %s:%d, want 198.18.0.1 and a port in 20000-20009 (all: %v)", fullyRandom, from, p, ports)
			}
		}
	}
	// A restarted Applier reads back exactly what it wrote: nothing to do.
	tb := masqTable(t, nft.MasqueradeToPorts(nft.Ports(20000, 20009), true))
	if st := applyOK(t, newApplier(t, k, tb), tb); st.Ops != 0 {
		t.Errorf("full sync after restart: %+v, want no operations", st)
	}
}

package hostfib_test

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/nft/sim/hostfib"
)

// A namespace with x0 (198.18.1.1/24, a route to 10.65.1.0/24 via
// 198.18.1.2) and x1 (198.18.2.1/24, fd5c:2::1/64); forwarding off.
func TestHostFIB(t *testing.T) {
	ns := nstest.New(t)
	ns.Exec(t, "ip", "link", "add", "x0", "type", "veth", "peer", "name", "y0")
	ns.Exec(t, "ip", "link", "add", "x1", "type", "veth", "peer", "name", "y1")
	for _, c := range [][]string{
		{"ip", "addr", "add", "198.18.1.1/24", "dev", "x0"}, {"ip", "addr", "add", "198.18.2.1/24", "dev", "x1"},
		{"ip", "addr", "add", "fd5c:2::1/64", "dev", "x1", "nodad"},
		{"ip", "link", "set", "x0", "up"}, {"ip", "link", "set", "y0", "up"}, {"ip", "link", "set", "x1", "up"}, {"ip", "link", "set", "y1", "up"},
		{"ip", "route", "add", "10.65.1.0/24", "via", "198.18.1.2"},
	} {
		ns.Exec(t, c...)
	}
	f, err := hostfib.New(ns.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x0, _ := f.Iface("x0")
	x1, ok := f.Iface("x1")
	lo, _ := f.Iface("lo")
	if !ok || !lo.Loopback() || x1.Loopback() {
		t.Fatalf("interfaces: x1 %+v lo %+v", x1, lo)
	}
	a := netip.MustParseAddr
	for _, c := range []struct {
		addr string
		dev  *sim.Iface
		want nft.AddrType
	}{
		{"198.18.2.1", nil, nft.AddrTypeLocal}, {"198.18.2.1", &x1, nft.AddrTypeLocal}, {"198.18.2.1", &x0, nft.AddrTypeUnicast},
		{"10.65.1.9", nil, nft.AddrTypeUnicast}, {"198.18.2.255", nil, nft.AddrTypeBroadcast}, {"224.0.0.1", nil, nft.AddrTypeMulticast},
		{"fd5c:2::1", nil, nft.AddrTypeLocal}, {"fd5c:2::1", &x0, nft.AddrTypeUnicast}, {"fd5c:9::1", nil, nft.AddrTypeUnreach},
	} {
		if got := f.AddrType(a(c.addr), c.dev); got != c.want {
			t.Errorf("AddrType(%s, %v) = %s, want %s", c.addr, c.dev, got, c.want)
		}
	}
	for _, c := range []struct {
		q   sim.RouteQuery
		ok  bool
		typ nft.AddrType
		oif string
		src string
	}{
		{sim.RouteQuery{Dst: a("10.65.1.9")}, true, nft.AddrTypeUnicast, "x0", "198.18.1.1"},
		{sim.RouteQuery{Dst: a("198.18.2.1")}, true, nft.AddrTypeLocal, "lo", "198.18.1.1"}, // masquerade through lo: the first interface's
		{sim.RouteQuery{Dst: a("10.66.0.1")}, false, 0, "", ""},
		{sim.RouteQuery{Dst: a("198.18.2.1"), Src: a("198.18.1.2"), Input: true, IIF: &x0}, true, nft.AddrTypeLocal, "lo", "198.18.1.1"},
		{sim.RouteQuery{Dst: a("10.65.1.9"), Src: a("198.18.2.2"), Input: true, IIF: &x1}, false, 0, "", ""}, // not forwarding
	} {
		r, ok := f.Route(c.q)
		if ok != c.ok || ok && (r.Type != c.typ || r.OIFs[0].Name != c.oif || r.Src.String() != c.src) {
			t.Errorf("Route(%+v) = %+v %v, want %v %s via %s from %s", c.q, r, ok, c.ok, c.typ, c.oif, c.src)
		}
	}
}

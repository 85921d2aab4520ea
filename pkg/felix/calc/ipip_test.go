package calc

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func ipipNode(name, ipv4, tunnel string) syncer.Update {
	return up(resKey("nodes", "", name), &api.Node{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: ipv4, IPv4IPIPTunnelAddr: tunnel}}})
}

func ipipPool(name, cidr, mode string) syncer.Update {
	return up(resKey("ippools", "", name), &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.IPPoolSpec{CIDR: cidr, IPIPMode: mode}})
}

// TestIPIPRoutes: routes to remote blocks of IPIP pools carry the pool's ipipMode, the owning
// node's address and whether it shares this host's subnet (CrossSubnet decides encapsulation on
// that); a node's IPIP tunnel address gets a tunnel route only outside its own block, as Project
// Calico's route resolver; this host's tunnel address reaches the dataplane's host config.
func TestIPIPRoutes(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		ipipNode("h1", "198.18.0.1/24", "10.65.0.1"),
		ipipNode("h2", "198.18.0.2/24", "10.65.1.1"), // inside its own block: no route of its own
		ipipNode("h3", "198.18.5.3/24", "10.65.2.9"), // in h2's block: a tunnel route to h3
		ipipPool("always", "10.65.0.0/17", "Always"),
		ipipPool("cross", "10.65.128.0/17", "CrossSubnet"),
		block("10.65.0.0/26", "h1", map[int]string{1: "h1"}),
		block("10.65.1.0/26", "h2", map[int]string{1: "h2"}),
		block("10.65.2.0/26", "h2", map[int]string{9: "h3"}),
		block("10.65.128.0/26", "h2", nil),
		block("10.65.129.0/26", "h3", nil))
	flushInto(t, g, m)
	r := func(dst string, typ RouteType, n, nodeIP string, same bool, pool, mode string) *Route {
		return &Route{Dst: netip.MustParsePrefix(dst), Type: typ, DstNode: n, DstNodeIP: netip.MustParseAddr(nodeIP),
			SameSubnet: same, PoolName: pool, PoolType: PoolIPIP, VXLANMode: "Never", IPIPMode: mode}
	}
	want := map[netip.Prefix]*Route{}
	for _, rt := range []*Route{
		r("10.65.0.0/26", RouteLocalWorkload, "h1", "198.18.0.1", true, "always", "Always"),
		r("10.65.1.0/26", RouteRemoteWorkload, "h2", "198.18.0.2", true, "always", "Always"),
		r("10.65.2.0/26", RouteRemoteWorkload, "h2", "198.18.0.2", true, "always", "Always"),
		r("10.65.2.9/32", RouteRemoteTunnel, "h3", "198.18.5.3", false, "always", "Always"),
		r("10.65.128.0/26", RouteRemoteWorkload, "h2", "198.18.0.2", true, "cross", "CrossSubnet"),
		r("10.65.129.0/26", RouteRemoteWorkload, "h3", "198.18.5.3", false, "cross", "CrossSubnet"),
	} {
		want[rt.Dst] = rt
	}
	if diff := cmp.Diff(want, m.Routes, addrCmp, prefixCmp); diff != "" {
		t.Fatalf("routes (-want +got):\n%s", diff)
	}
	if m.Config == nil || m.Config.IPIPTunnelAddr != netip.MustParseAddr("10.65.0.1") {
		t.Errorf("host config %+v, want IPIPTunnelAddr 10.65.0.1", m.Config)
	}

	// h3's tunnel address no longer allocated in the block: still its tunnel route.
	feed(g, block("10.65.2.0/26", "h2", nil))
	flushInto(t, g, m)
	if rt := m.Routes[netip.MustParsePrefix("10.65.2.9/32")]; rt == nil || rt.Type != RouteRemoteTunnel || rt.IPIPMode != "Always" {
		t.Errorf("tunnel route for h3 = %+v", rt)
	}
	// The pool goes to Never: the routes say so.
	feed(g, ipipPool("always", "10.65.0.0/17", "Never"))
	flushInto(t, g, m)
	if rt := m.Routes[netip.MustParsePrefix("10.65.1.0/26")]; rt == nil || rt.IPIPMode != "Never" {
		t.Errorf("route after the pool left IPIP = %+v", rt)
	}
}

package calc

import (
	"crypto/sha1"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
var prefixCmp = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func TestRoutesFromBlocks(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		node("h1", "198.18.0.1/24", "10.65.0.0"),
		node("h2", "198.18.0.2/24", "10.65.1.0"),
		node("h3", "198.18.5.3/24", "10.65.0.9"), // tunnel address in h1's block
		pool("p4", "10.65.0.0/16", "CrossSubnet", true),
		block("10.65.0.0/26", "h1", map[int]string{0: "h1", 5: "h2"}), // local block, one IP borrowed by h2
		block("10.65.1.0/26", "h2", map[int]string{0: "h2", 7: "h3"}), // h2's block, one IP held by h3
		block("10.65.2.0/26", "h3", nil),                              // h3 is in another subnet
		block("10.99.0.0/26", "h2", nil),                              // outside every pool
		block("10.65.3.0/26", "", map[int]string{1: "h2"}))            // no affinity: only the held IP
	flushInto(t, g, m)
	r := func(dst string, typ RouteType, n, nodeIP string, same bool, poolName string) *Route {
		rt := &Route{Dst: netip.MustParsePrefix(dst), Type: typ, DstNode: n, SameSubnet: same}
		if nodeIP != "" {
			rt.DstNodeIP = netip.MustParseAddr(nodeIP)
		}
		if poolName != "" {
			rt.PoolName, rt.PoolType, rt.VXLANMode, rt.IPIPMode, rt.NATOutgoing = poolName, PoolVXLAN, "CrossSubnet", "Never", true
		}
		return rt
	}
	want := map[netip.Prefix]*Route{}
	for _, rt := range []*Route{
		r("10.65.0.0/26", RouteLocalWorkload, "h1", "198.18.0.1", true, "p4"),
		r("10.65.0.5/32", RouteRemoteWorkload, "h2", "198.18.0.2", true, "p4"),
		r("10.65.1.0/26", RouteRemoteWorkload, "h2", "198.18.0.2", true, "p4"),
		r("10.65.0.9/32", RouteRemoteTunnel, "h3", "198.18.5.3", false, "p4"),
		// no 10.65.1.0/32: h2's tunnel address is inside h2's own block (Project Calico programs
		// no route for it either)
		r("10.65.1.7/32", RouteRemoteWorkload, "h3", "198.18.5.3", false, "p4"),
		r("10.65.2.0/26", RouteRemoteWorkload, "h3", "198.18.5.3", false, "p4"),
		r("10.65.3.1/32", RouteRemoteWorkload, "h2", "198.18.0.2", true, "p4"),
		r("10.99.0.0/26", RouteRemoteWorkload, "h2", "198.18.0.2", true, ""),
	} {
		want[rt.Dst] = rt
	}
	if diff := cmp.Diff(want, m.Routes, addrCmp, prefixCmp); diff != "" {
		t.Fatalf("routes (-want +got):\n%s", diff)
	}
	steps := []struct {
		name  string
		ups   []syncer.Update
		check func(t *testing.T)
	}{
		{"borrowed IP released", []syncer.Update{block("10.65.1.0/26", "h2", map[int]string{0: "h2"})}, func(t *testing.T) {
			if _, ok := m.Routes[netip.MustParsePrefix("10.65.1.7/32")]; ok {
				t.Error("route to released IP remains")
			}
		}},
		{"block holding the tunnel address deleted", []syncer.Update{del(block("10.65.1.0/26", "h2", nil).ID.Key())}, func(t *testing.T) {
			if rt := m.Routes[netip.MustParsePrefix("10.65.1.0/32")]; rt == nil || rt.Type != RouteRemoteTunnel {
				t.Errorf("tunnel route without its block = %+v", rt)
			}
		}},
		{"block holding the tunnel address back", []syncer.Update{block("10.65.1.0/26", "h2", map[int]string{0: "h2"})}, func(t *testing.T) {
			if rt, ok := m.Routes[netip.MustParsePrefix("10.65.1.0/32")]; ok {
				t.Errorf("tunnel route inside its node's block remains: %+v", rt)
			}
		}},
		{"node moves subnet", []syncer.Update{node("h3", "198.18.0.3/24", "")}, func(t *testing.T) {
			rt := m.Routes[netip.MustParsePrefix("10.65.2.0/26")]
			if !rt.SameSubnet || rt.DstNodeIP != netip.MustParseAddr("198.18.0.3") {
				t.Errorf("route after node update = %+v", rt)
			}
		}},
		{"pool changes mode", []syncer.Update{pool("p4", "10.65.0.0/16", "Always", false)}, func(t *testing.T) {
			if rt := m.Routes[netip.MustParsePrefix("10.65.2.0/26")]; rt.VXLANMode != "Always" || rt.NATOutgoing {
				t.Errorf("route after pool update = %+v", rt)
			}
		}},
		{"block deleted", []syncer.Update{del(block("10.65.2.0/26", "h3", nil).ID.Key())}, func(t *testing.T) {
			if _, ok := m.Routes[netip.MustParsePrefix("10.65.2.0/26")]; ok {
				t.Error("route of deleted block remains")
			}
		}},
		{"tunnel address removed", []syncer.Update{node("h2", "198.18.0.2/24", ""), del(block("10.65.1.0/26", "h2", nil).ID.Key())}, func(t *testing.T) {
			if _, ok := m.Routes[netip.MustParsePrefix("10.65.1.0/32")]; ok {
				t.Error("tunnel route remains")
			}
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			flushInto(t, g, m)
			st.check(t)
		})
	}
}

func TestVTEPsAndHosts(t *testing.T) {
	macOf := func(s string) string {
		sum := sha1.Sum([]byte(s))
		return net.HardwareAddr(append([]byte{0x66}, sum[:5]...)).String()
	}
	h3 := &api.Node{ObjectMeta: api.ObjectMeta{Name: "h3", Labels: map[string]string{"rack": "r3"}}, Spec: api.NodeSpec{
		BGP:                 &api.NodeBGPSpec{IPv4Address: "198.18.0.3/24", IPv6Address: "fd00:198::3/64"},
		IPv4VXLANTunnelAddr: "10.65.3.0", IPv6VXLANTunnelAddr: "fd5c::3", VXLANTunnelMACAddrV6: "66:00:00:00:00:03"}}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		node("h1", "198.18.0.1/24", "10.65.1.0"),
		node("h2", "198.18.0.2/24", "10.65.2.0"),
		up(resKey("nodes", "", "h3"), h3),
		node("h4", "", "10.65.4.0")) // no parent address: no VTEP
	flushInto(t, g, m)
	v := func(n, mac, tun, parent string) *VTEP {
		return &VTEP{Node: n, MAC: mac, TunnelAddr: netip.MustParseAddr(tun), ParentDeviceAddr: netip.MustParseAddr(parent)}
	}
	want := map[string]*VTEP{
		vtepKey("h2", false): v("h2", macOf("h2"), "10.65.2.0", "198.18.0.2"),
		vtepKey("h3", false): v("h3", macOf("h3"), "10.65.3.0", "198.18.0.3"),
		vtepKey("h3", true):  v("h3", "66:00:00:00:00:03", "fd5c::3", "fd00:198::3"),
	}
	if diff := cmp.Diff(want, m.VTEPs, addrCmp); diff != "" {
		t.Errorf("VTEPs (-want +got):\n%s", diff)
	}
	if len(m.Hosts) != 4 || m.Hosts["h3"].IPv6Addr != netip.MustParsePrefix("fd00:198::3/64") || m.Hosts["h3"].Labels["rack"] != "r3" {
		t.Errorf("hosts = %+v", m.Hosts)
	}
	if m.Config.VXLANTunnelMAC != macOf("h1") || m.Config.VXLANTunnelMACV6 != macOf("h1-v6") {
		t.Errorf("local MACs = %q %q", m.Config.VXLANTunnelMAC, m.Config.VXLANTunnelMACV6)
	}
	feed(g, node("h2", "198.18.0.2/24", ""), del(resKey("nodes", "", "h3")))
	flushInto(t, g, m)
	if len(m.VTEPs) != 0 || len(m.Hosts) != 3 {
		t.Errorf("after removals: VTEPs %+v, hosts %d", m.VTEPs, len(m.Hosts))
	}
}

func TestPools(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, pool("p4", "10.65.0.0/16", "", true), pool("p6", "fd5c::/48", "Always", false))
	flushInto(t, g, m)
	want := map[string]*IPPool{
		"p4": {Name: "p4", CIDR: netip.MustParsePrefix("10.65.0.0/16"), NATOutgoing: true, VXLANMode: "Never", IPIPMode: "Never", Type: PoolNoEncap},
		"p6": {Name: "p6", CIDR: netip.MustParsePrefix("fd5c::/48"), VXLANMode: "Always", IPIPMode: "Never", Type: PoolVXLAN},
	}
	if diff := cmp.Diff(want, m.Pools, prefixCmp); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	feed(g, del(resKey("ippools", "", "p6")), pool("bad", "not-a-cidr", "", false))
	flushInto(t, g, m)
	if len(m.Pools) != 1 {
		t.Errorf("pools = %+v", m.Pools)
	}
}

// TestHostsCarryWireguardKeys: a Node's published WireGuard keys and tunnel addresses reach the
// dataplane in HostMetadata, and a key change is sent as an update.
func TestHostsCarryWireguardKeys(t *testing.T) {
	h2 := &api.Node{ObjectMeta: api.ObjectMeta{Name: "h2"}, Spec: api.NodeSpec{
		BGP:       &api.NodeBGPSpec{IPv4Address: "198.18.0.2/24", IPv6Address: "fd00:198::2/64"},
		Wireguard: &api.NodeWireguard{InterfaceIPv4Address: "10.65.2.7", InterfaceIPv6Address: "fd5c::2:7"}},
		Status: api.NodeStatus{WireguardPublicKey: "k4", WireguardPublicKeyV6: "k6"}}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, node("h1", "198.18.0.1/24", ""), up(resKey("nodes", "", "h2"), h2))
	flushInto(t, g, m)
	got := m.Hosts["h2"]
	if got == nil || got.WireguardPublicKey != "k4" || got.WireguardPublicKeyV6 != "k6" ||
		got.WireguardAddrV4 != netip.MustParseAddr("10.65.2.7") || got.WireguardAddrV6 != netip.MustParseAddr("fd5c::2:7") {
		t.Fatalf("h2 = %+v", got)
	}
	cleared := *h2
	cleared.Status = api.NodeStatus{}
	feed(g, up(resKey("nodes", "", "h2"), &cleared))
	flushInto(t, g, m)
	if got := m.Hosts["h2"]; got.WireguardPublicKey != "" || got.WireguardPublicKeyV6 != "" {
		t.Errorf("cleared keys still sent: %+v", got)
	}
}

package startup

import (
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func (h *harness) setPoolIPIP(name, mode string) {
	h.updatePool(name, func(s *api.IPPoolSpec) { s.IPIPMode = mode })
}

// checkIPIP asserts the node's IPIP tunnel address (spec.bgp.ipv4IPIPTunnelAddr) is in within
// and allocated in IPAM under Project Calico's handle and attributes.
func (h *harness) checkIPIP(node string, within netip.Prefix) netip.Addr {
	h.t.Helper()
	n := h.node(node)
	if n.Spec.BGP == nil {
		h.t.Fatalf("node %s has no BGP spec", node)
	}
	a, err := netip.ParseAddr(n.Spec.BGP.IPv4IPIPTunnelAddr)
	if err != nil || !within.Contains(a) {
		h.t.Fatalf("ipv4IPIPTunnelAddr %q is not in %s", n.Spec.BGP.IPv4IPIPTunnelAddr, within)
	}
	h.wantTunnelIPAM(a, node, "ipip-tunnel-addr-"+node, "ipipTunnelAddress")
	return a
}

func (h *harness) checkNoIPIP(node string, old netip.Addr) {
	h.t.Helper()
	if n := h.node(node); n.Spec.BGP != nil && n.Spec.BGP.IPv4IPIPTunnelAddr != "" {
		h.t.Fatalf("ipv4IPIPTunnelAddr not cleared: %q", n.Spec.BGP.IPv4IPIPTunnelAddr)
	}
	h.checkReleased(IPIPHandle(node), old)
}

// TestIPIPTunnelAddressFollowsPools: an IPIP pool (Always or CrossSubnet) selecting the node gives
// it spec.bgp.ipv4IPIPTunnelAddr from handle ipip-tunnel-addr-<node>; the BGP spec's other fields
// stay; a pool whose nodeSelector leaves the node out gives nothing; none left releases it.
func TestIPIPTunnelAddressFollowsPools(t *testing.T) {
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_CIDR"] = "10.65.0.0/17"
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	env["CALICO_IPV4POOL_IPIP"] = "Always"
	h := newHarness(t, env, fixtureHost())
	s := h.startup()
	ctx := ctxT(t, 60*time.Second)
	if err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	addr := h.checkIPIP("host-z", pfx("10.65.0.0/17"))
	n := h.node("host-z")
	if n.Spec.BGP.IPv4Address != "198.18.255.2/30" || n.Spec.IPv4VXLANTunnelAddr != "" {
		t.Errorf("BGP address %q, VXLAN address %q", n.Spec.BGP.IPv4Address, n.Spec.IPv4VXLANTunnelAddr)
	}
	raw := h.values(datastore.ResourcePrefix + "nodes/host-z")
	if len(raw) != 1 {
		t.Fatalf("stored node keys: %v", raw)
	}
	for _, v := range raw {
		spec, _ := v["spec"].(map[string]any)
		bgp, _ := spec["bgp"].(map[string]any)
		if got := bgp["ipv4IPIPTunnelAddr"]; got != addr.String() {
			t.Errorf("stored spec.bgp.ipv4IPIPTunnelAddr %v, want %s", got, addr)
		}
	}

	h.setPoolIPIP(DefaultIPv4PoolName, api.EncapCrossSubnet)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if again := h.checkIPIP("host-z", pfx("10.65.0.0/17")); again != addr {
		t.Errorf("CrossSubnet must keep the address: %s -> %s", addr, again)
	}

	// A second IPIP pool that selects only labelled nodes.
	sel := &api.IPPool{TypeMeta: api.TypeMeta{Kind: "IPPool", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: "rack-b"},
		Spec: api.IPPoolSpec{CIDR: "10.65.128.0/17", BlockSize: 26, IPIPMode: api.EncapAlways,
			VXLANMode: api.EncapNever, NodeSelector: "rack == 'b'"}}
	if _, err := h.ds.Create(ctx, sel); err != nil {
		t.Fatal(err)
	}
	h.setPoolIPIP(DefaultIPv4PoolName, api.EncapNever)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkNoIPIP("host-z", addr)
	if n := h.node("host-z"); n.Spec.BGP == nil || n.Spec.BGP.IPv4Address != "198.18.255.2/30" {
		t.Errorf("releasing the IPIP address lost the BGP spec: %+v", n.Spec.BGP)
	}

	if err := s.updateNode(ctx, func(n *api.Node) (bool, error) {
		n.Labels = map[string]string{"rack": "b"}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkIPIP("host-z", pfx("10.65.128.0/17"))
}

// TestIPIPAndVXLANTunnelsTogether: an IPIP pool and a VXLAN pool both selecting the node give it
// both addresses, each under its own handle.
func TestIPIPAndVXLANTunnelsTogether(t *testing.T) {
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_CIDR"] = "10.65.0.0/17"
	h := newHarness(t, env, fixtureHost())
	s := h.startup()
	ctx := ctxT(t, 60*time.Second)
	if err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	p := &api.IPPool{TypeMeta: api.TypeMeta{Kind: "IPPool", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: "ipip"},
		Spec: api.IPPoolSpec{CIDR: "10.65.128.0/17", BlockSize: 26, IPIPMode: api.EncapAlways,
			VXLANMode: api.EncapNever, NodeSelector: "all()"}}
	if _, err := h.ds.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkIPIP("host-z", pfx("10.65.128.0/17"))
	h.checkTunnel("host-z", pfx("10.65.0.0/17"))
}

// TestNormalizeBGP: removing the IPIP address from a BGP spec that held nothing else drops the
// spec, as Project Calico does; a spec with other fields stays.
func TestNormalizeBGP(t *testing.T) {
	s := api.NodeSpec{}
	*ipipAddr(&s) = ""
	normalizeSpec(&s)
	if s.BGP != nil {
		t.Errorf("empty BGP spec kept: %+v", s.BGP)
	}
	s = api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.0.1/24", IPv4IPIPTunnelAddr: "10.65.0.1"}}
	*ipipAddr(&s) = ""
	normalizeSpec(&s)
	if s.BGP == nil || s.BGP.IPv4Address != "198.18.0.1/24" {
		t.Errorf("BGP spec lost: %+v", s.BGP)
	}
}

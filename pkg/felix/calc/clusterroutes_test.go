package calc

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func encapPool(name, cidr, vxlan, ipip string, uses ...string) syncer.Update {
	return up(resKey("ippools", "", name), &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.IPPoolSpec{CIDR: cidr, VXLANMode: vxlan, IPIPMode: ipip, AllowedUses: uses}})
}

func clusterRoutesConfig(name string, v *string) syncer.Update {
	return up(resKey("bgpconfigurations", "", name), &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.BGPConfigurationSpec{ProgramClusterRoutes: v}})
}

// TestRoutePoolTypes: every route carries the type of its pool as Project Calico's route resolver
// classifies it (VXLAN before IPIP, LoadBalancer-only pools none), the type the dataplane decides
// on with ProgramClusterRoutes; Facts lists the IPIP and no-encap types present.
func TestRoutePoolTypes(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		node("h1", "198.18.0.1/24", ""), node("h2", "198.18.0.2/24", ""),
		encapPool("vx", "10.65.0.0/24", "Always", "", ""),
		encapPool("vxcross", "10.65.1.0/24", "CrossSubnet", "Never"),
		encapPool("ipip", "10.65.2.0/24", "", "Always"),
		encapPool("ipipcross", "10.65.3.0/24", "Never", "CrossSubnet"),
		encapPool("plain", "10.65.4.0/24", "Never", "Never"),
		encapPool("lb", "10.65.5.0/24", "", "", api.UseLoadBalancer),
		block("10.65.0.0/26", "h2", nil), block("10.65.1.0/26", "h2", nil), block("10.65.2.0/26", "h2", nil),
		block("10.65.3.0/26", "h1", nil), block("10.65.4.0/26", "h2", nil), block("10.65.5.0/26", "h2", nil),
		block("10.66.0.0/26", "h2", nil))
	flushInto(t, g, m)
	want := map[string]PoolType{
		"10.65.0.0/26": PoolVXLAN, "10.65.1.0/26": PoolVXLAN, "10.65.2.0/26": PoolIPIP, "10.65.3.0/26": PoolIPIP,
		"10.65.4.0/26": PoolNoEncap, "10.65.5.0/26": PoolNone, "10.66.0.0/26": PoolNone,
	}
	for dst, typ := range want {
		if r := m.Routes[netip.MustParsePrefix(dst)]; r == nil || r.PoolType != typ {
			t.Errorf("route %s = %+v, want pool type %s", dst, r, typ)
		}
	}
	if f := g.Facts(); f.ClusterRoutePools != ClusterRoutesIPIP|ClusterRoutesNoEncap {
		t.Errorf("ClusterRoutePools = %s, want Enabled (both)", f.ClusterRoutePools)
	}
	// The IPIP pools leave IPIP: their routes follow, and no IPIP pool is left.
	feed(g, encapPool("ipip", "10.65.2.0/24", "", ""), encapPool("ipipcross", "10.65.3.0/24", "Always", "Never"))
	flushInto(t, g, m)
	for dst, typ := range map[string]PoolType{"10.65.2.0/26": PoolNoEncap, "10.65.3.0/26": PoolVXLAN} {
		if r := m.Routes[netip.MustParsePrefix(dst)]; r == nil || r.PoolType != typ {
			t.Errorf("after the change, route %s = %+v, want pool type %s", dst, r, typ)
		}
	}
	if f := g.Facts(); f.ClusterRoutePools != ClusterRoutesNoEncap {
		t.Errorf("ClusterRoutePools = %s, want EnabledNoEncapOnly", f.ClusterRoutePools)
	}
}

// TestClusterRoutesPrograms: each value of programClusterRoutes names the pool types its component
// programs (Project Calico's table); VXLAN pools' routes are always felix's, a route without a
// pool nobody's.
func TestClusterRoutesPrograms(t *testing.T) {
	want := map[string][3]bool{ // IPIP, no-encap, VXLAN
		"Enabled":            {true, true, true},
		"Disabled":           {false, false, true},
		"EnabledIPIPOnly":    {true, false, true},
		"EnabledNoEncapOnly": {false, true, true},
	}
	if len(ClusterRouteValues) != len(want) {
		t.Fatalf("%d values, want %d", len(ClusterRouteValues), len(want))
	}
	for _, v := range ClusterRouteValues {
		got := [3]bool{v.Value.Programs(PoolIPIP), v.Value.Programs(PoolNoEncap), v.Value.Programs(PoolVXLAN)}
		if got != want[v.Name] || v.Value.Programs(PoolNone) || v.Value.String() != v.Name {
			t.Errorf("%s: programs (IPIP, no-encap, VXLAN) %v, want %v; none %t; String %q",
				v.Name, got, want[v.Name], v.Value.Programs(PoolNone), v.Value)
		}
	}
}

// TestBIRDClusterRoutes: Facts says which pools BIRD programs as calico-confd reads BGPConfiguration
// default's programClusterRoutes: absent, unknown or deleted is EnabledNoEncapOnly (Project
// Calico's default); other BGPConfigurations do not count.
func TestBIRDClusterRoutes(t *testing.T) {
	s := func(v string) *string { return &v }
	g := newTestGraph("h1")
	if f := g.Facts(); f.BIRDClusterRoutes != ClusterRoutesNoEncap {
		t.Errorf("without BGPConfiguration: %s", f.BIRDClusterRoutes)
	}
	steps := []struct {
		update syncer.Update
		want   ClusterRoutes
	}{
		{clusterRoutesConfig("default", s("Enabled")), ClusterRoutesIPIP | ClusterRoutesNoEncap},
		{clusterRoutesConfig("node.h1", s("Disabled")), ClusterRoutesIPIP | ClusterRoutesNoEncap},
		{clusterRoutesConfig("default", s("Disabled")), 0},
		{clusterRoutesConfig("default", s("EnabledIPIPOnly")), ClusterRoutesIPIP},
		{clusterRoutesConfig("default", s("enabled")), ClusterRoutesNoEncap},
		{clusterRoutesConfig("default", s("EnabledIPIPOnly")), ClusterRoutesIPIP},
		{clusterRoutesConfig("default", nil), ClusterRoutesNoEncap},
		{clusterRoutesConfig("default", s("Disabled")), 0},
		{del(resKey("bgpconfigurations", "", "default")), ClusterRoutesNoEncap},
	}
	snapshot(g)
	for i, st := range steps {
		feed(g, st.update)
		g.Flush()
		if got := g.Facts().BIRDClusterRoutes; got != st.want {
			t.Errorf("step %d (%s): BIRD programs %s, want %s", i, st.update.ID, got, st.want)
		}
	}
}

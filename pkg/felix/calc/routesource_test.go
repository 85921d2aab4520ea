package calc

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// routeSummary renders the model's routes as "dst type node" lines, sorted.
func routeSummary(m *dpModel) []string {
	var out []string
	for dst, r := range m.Routes {
		out = append(out, dst.String()+" "+[...]string{"remote", "local", "tunnel"}[r.Type]+" "+r.DstNode)
	}
	slices.Sort(out)
	return out
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

// specRouteSource stands in for felix's configuration, which resolves RouteSource (package
// config; its tests cover the spellings and the precedence of every source): the routeSource of
// the highest-ranking FelixConfiguration that sets it, node.<host>, the scoped one, default.
func specRouteSource(dc DatastoreConfig) RouteSource {
	for _, s := range []*api.FelixConfigurationSpec{dc.Node, dc.Scoped, dc.Global} {
		if s != nil && s.RouteSource != "" {
			return map[string]RouteSource{"WorkloadIPs": RouteSourceWorkloadIPs}[s.RouteSource]
		}
	}
	return RouteSourceCalicoIPAM
}

// TestRouteSourceWorkloadIPs: with RouteSource WorkloadIPs, as Project Calico's route resolver,
// routes come from every workload endpoint's addresses (to its node) instead of IPAM blocks;
// tunnel addresses keep their routes; switching back restores the block routes. The graph asks
// felix's configuration for the route source whenever a FelixConfiguration changes, and applies
// its answer whatever the FelixConfigurations say.
func TestRouteSourceWorkloadIPs(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	g.SetRouteSource(specRouteSource)
	blocks := []string{
		"10.65.0.0/26 local h1", "10.65.0.5/32 remote h2", "10.65.1.0/26 remote h2", "10.65.9.0/26 remote h3",
	}
	snapshot(g,
		node("h1", "198.18.0.1/24", "10.65.0.0"),
		node("h2", "198.18.0.2/24", "10.65.1.0"),
		node("h3", "198.18.0.3/24", "10.65.200.1"), // tunnel address outside every block
		pool("p4", "10.65.0.0/16", "Always", false),
		block("10.65.0.0/26", "h1", map[int]string{0: "h1", 5: "h2"}),
		block("10.65.1.0/26", "h2", map[int]string{0: "h2"}),
		block("10.65.9.0/26", "h3", nil),
		wep("ns", "h1", "a", nil, []string{"10.65.0.1/32"}),
		wep("ns", "h2", "b", nil, []string{"10.65.1.2/32", "fd5c::2/128"}),
		wep("ns", "h3", "c", nil, []string{"10.65.77.3/32"}),         // not in any block (another IPAM)
		wep("ns", "h3", "d", nil, []string{"::ffff:10.65.77.4/128"}), // IPv4-mapped: routed as IPv4
	)
	flushInto(t, g, m)
	tunnel := []string{"10.65.200.1/32 tunnel h3"}
	if d := cmp.Diff(sortedCopy(slices.Concat(blocks, tunnel)), routeSummary(m)); d != "" {
		t.Fatalf("CalicoIPAM (-want +got):\n%s", d)
	}
	workloads := []string{"10.65.0.1/32 local h1", "10.65.1.0/32 tunnel h2", "10.65.1.2/32 remote h2",
		"10.65.200.1/32 tunnel h3", "10.65.77.3/32 remote h3", "10.65.77.4/32 remote h3", "fd5c::2/128 remote h2"}
	fc := func(name, src string) syncer.Update {
		return up(resKey("felixconfigurations", "", name), &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.FelixConfigurationSpec{RouteSource: src}})
	}
	steps := []struct {
		name string
		ups  []syncer.Update
		want []string
	}{
		{"default says WorkloadIPs", []syncer.Update{fc("default", "WorkloadIPs")}, workloads},
		{"a workload moves and another goes", []syncer.Update{
			wep("ns", "h3", "b", nil, []string{"10.65.1.2/32"}), del(wepKey("ns", "h2", "b"))},
			[]string{"10.65.0.1/32 local h1", "10.65.1.0/32 tunnel h2", "10.65.1.2/32 remote h3",
				"10.65.200.1/32 tunnel h3", "10.65.77.3/32 remote h3", "10.65.77.4/32 remote h3"}},
		{"node.h1 says CalicoIPAM", []syncer.Update{fc("node.h1", "CalicoIPAM")}, slices.Concat(blocks, tunnel)},
		{"node.h1 is deleted", []syncer.Update{del(resKey("felixconfigurations", "", "node.h1"))},
			[]string{"10.65.0.1/32 local h1", "10.65.1.0/32 tunnel h2", "10.65.1.2/32 remote h3",
				"10.65.200.1/32 tunnel h3", "10.65.77.3/32 remote h3", "10.65.77.4/32 remote h3"}},
		{"default says CalicoIPAM", []syncer.Update{fc("default", "CalicoIPAM")}, slices.Concat(blocks, tunnel)},
	}
	for _, s := range steps {
		feed(g, s.ups...)
		flushInto(t, g, m)
		if d := cmp.Diff(sortedCopy(s.want), routeSummary(m)); d != "" {
			t.Fatalf("%s (-want +got):\n%s", s.name, d)
		}
	}

	// The configuration's answer wins over what FelixConfiguration says (a local setting).
	g2, m2 := newTestGraph("h1"), newModel()
	g2.SetRouteSource(func(DatastoreConfig) RouteSource { return RouteSourceWorkloadIPs })
	snapshot(g2, node("h2", "198.18.0.2/24", ""), fc("default", "CalicoIPAM"),
		block("10.65.1.0/26", "h2", nil), wep("ns", "h2", "b", nil, []string{"10.65.1.2/32"}))
	flushInto(t, g2, m2)
	if d := cmp.Diff([]string{"10.65.1.2/32 remote h2"}, routeSummary(m2)); d != "" {
		t.Fatalf("local WorkloadIPs (-want +got):\n%s", d)
	}
	if r := m2.Routes[netip.MustParsePrefix("10.65.1.2/32")]; r.DstNodeIP != netip.MustParseAddr("198.18.0.2") {
		t.Errorf("route to a workload: %+v", r)
	}
}

// TestRouteSourceScoped: a selector-scoped FelixConfiguration whose nodeSelector matches this
// host's labels sets the route source over default, and stops doing so when the labels change.
func TestRouteSourceScoped(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	g.SetRouteSource(specRouteSource)
	sel := "role == 'edge'"
	edge := up(resKey("felixconfigurations", "", "edge"), &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: "edge"},
		Spec: api.FelixConfigurationSpec{NodeSelector: &sel, RouteSource: "WorkloadIPs"}})
	h1 := func(role string) syncer.Update {
		return up(resKey("nodes", "", "h1"), &api.Node{ObjectMeta: api.ObjectMeta{Name: "h1", Labels: map[string]string{"role": role}}})
	}
	snapshot(g, h1("edge"), node("h2", "198.18.0.2/24", ""), edge,
		up(resKey("felixconfigurations", "", "default"), &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"},
			Spec: api.FelixConfigurationSpec{RouteSource: "CalicoIPAM"}}),
		block("10.65.1.0/26", "h2", nil), wep("ns", "h2", "b", nil, []string{"10.65.1.2/32"}))
	flushInto(t, g, m)
	if d := cmp.Diff([]string{"10.65.1.2/32 remote h2"}, routeSummary(m)); d != "" {
		t.Fatalf("scoped WorkloadIPs (-want +got):\n%s", d)
	}
	feed(g, h1("core"))
	flushInto(t, g, m)
	if d := cmp.Diff([]string{"10.65.1.0/26 remote h2"}, routeSummary(m)); d != "" {
		t.Fatalf("labels no longer match (-want +got):\n%s", d)
	}
}

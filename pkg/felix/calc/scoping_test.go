package calc

import (
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// scopingWorld has endpoints in two namespaces, a namespace profile, network sets and host
// endpoints, so that each kind of scoping selects a different subset.
func scopingWorld() []syncer.Update {
	return []syncer.Update{
		wep("ns1", "h1", "a", map[string]string{"app": "x", "role": "c"}, []string{"10.65.0.1/32"}, withSA("sa1")),
		wep("ns1", "h2", "b", map[string]string{"role": "c"}, []string{"10.65.1.1/32"}, withSA("sa2")),
		wep("ns2", "h1", "c", map[string]string{"app": "x", "role": "c"}, []string{"10.65.0.2/32"}),
		wep("ns2", "h2", "d", map[string]string{"role": "c"}, []string{"10.65.1.2/32"}),
		profile("kns.ns2", map[string]string{"env": "prod"}, nil, nil),
		profile("ksa.ns1.sa2", map[string]string{"pcsa.tier": "gold"}, nil, nil),
		gns("gset", map[string]string{"role": "c"}, "192.0.2.0/24"),
		netset("ns2", "nset", map[string]string{"role": "c"}, "198.51.100.0/24"),
		hep("h9-eth0", "h9", "eth0", map[string]string{"role": "c"}, []string{"198.18.9.1"}),
	}
}

func TestNamespaceScoping(t *testing.T) {
	tests := []struct {
		name string
		pol  syncer.Update
		// the source rule's set members
		want []string
		// the local endpoints the policy applies to
		wantApplied []string
	}{
		{"network policy: selectors scoped to its namespace",
			np("ns1", "p", api.NetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", srcSel("role == 'c'"))}}),
			[]string{"10.65.0.1/32", "10.65.1.1/32"}, []string{"ns1/a"}},
		{"network policy in ns2 also sees its network set",
			np("ns2", "p", api.NetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", srcSel("role == 'c'"))}}),
			[]string{"10.65.0.2/32", "10.65.1.2/32", "198.51.100.0/24"}, []string{"ns2/c"}},
		{"global policy: all endpoints and sets",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", srcSel("role == 'c'"))}}),
			[]string{"10.65.0.1/32", "10.65.0.2/32", "10.65.1.1/32", "10.65.1.2/32", "192.0.2.0/24", "198.18.9.1/32", "198.51.100.0/24"},
			[]string{"ns1/a", "ns2/c"}},
		{"namespaceSelector on namespace profile labels",
			np("ns1", "p", api.NetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.Selector, r.Source.NamespaceSelector = "role == 'c'", "env == 'prod'"
			})}}),
			[]string{"10.65.0.2/32", "10.65.1.2/32", "198.51.100.0/24"}, []string{"ns1/a"}},
		{"namespaceSelector on the namespace name",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.NamespaceSelector = "projectcalico.org/name == 'ns1'"
			})}}),
			[]string{"10.65.0.1/32", "10.65.1.1/32"}, []string{"ns1/a", "ns2/c"}},
		{"namespaceSelector global() selects non-namespaced objects",
			np("ns1", "p", api.NetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.Selector, r.Source.NamespaceSelector = "role == 'c'", "global()"
			})}}),
			[]string{"192.0.2.0/24", "198.18.9.1/32"}, []string{"ns1/a"}},
		{"namespaceSelector all() selects every namespace",
			np("ns1", "p", api.NetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.Selector, r.Source.NamespaceSelector = "role == 'c'", "all()"
			})}}),
			[]string{"10.65.0.1/32", "10.65.0.2/32", "10.65.1.1/32", "10.65.1.2/32", "198.51.100.0/24"}, []string{"ns1/a"}},
		{"notSelector alone in a network policy is scoped",
			np("ns1", "p", api.NetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.NotSelector = "has(app)"
			})}}),
			[]string{"10.65.1.1/32"}, []string{"ns1/a"}},
		{"service account names",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.ServiceAccounts = &api.ServiceAccountMatch{Names: []string{"sa2", "sa3"}}
			})}}),
			[]string{"10.65.1.1/32"}, []string{"ns1/a", "ns2/c"}},
		{"service account selector on its profile labels",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
				r.Source.ServiceAccounts = &api.ServiceAccountMatch{Selector: "tier == 'gold'"}
			})}}),
			[]string{"10.65.1.1/32"}, []string{"ns1/a", "ns2/c"}},
		{"policy namespaceSelector",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "app == 'x'", NamespaceSelector: "env == 'prod'",
				Ingress: []api.Rule{rule("Allow", srcSel("role == 'c'"))}}),
			nil, []string{"ns2/c"}},
		{"policy serviceAccountSelector",
			gnp("p", api.GlobalNetworkPolicySpec{Selector: "all()", ServiceAccountSelector: "projectcalico.org/name == 'sa1'",
				Ingress: []api.Rule{rule("Allow", srcSel("role == 'c'"))}}),
			nil, []string{"ns1/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, m := newTestGraph("h1"), newModel()
			snapshot(g, append(scopingWorld(), tc.pol)...)
			flushInto(t, g, m)
			var applied []string
			for id, w := range m.WEPs {
				if len(w.Tiers) > 0 {
					applied = append(applied, id.WorkloadID)
				}
			}
			slices.Sort(applied)
			if !slices.Equal(applied, tc.wantApplied) {
				t.Errorf("policy applies to %v, want %v", applied, tc.wantApplied)
			}
			if tc.want == nil {
				return
			}
			var pol *Policy
			for _, p := range m.Policies {
				pol = p
			}
			if pol == nil || len(pol.InboundRules) != 1 || len(pol.InboundRules[0].SrcIPSetIDs) != 1 {
				t.Fatalf("policy = %+v, want one rule with one source set", pol)
			}
			if got := m.members(pol.InboundRules[0].SrcIPSetIDs[0]); !slices.Equal(got, tc.want) {
				t.Errorf("source set = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNamespaceLabelsFollowTheNamespaceProfile checks that kns.<ns> label changes move the
// namespace's endpoints in and out of namespaceSelector sets.
func TestNamespaceLabelsFollowTheNamespaceProfile(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, append(scopingWorld(),
		gnp("p", api.GlobalNetworkPolicySpec{Selector: "app == 'x'", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
			r.Source.NamespaceSelector = "env == 'prod'"
		})}}))...)
	flushInto(t, g, m)
	setID := m.Policies[gnpID("p")].InboundRules[0].SrcIPSetIDs[0]
	steps := []struct {
		ups  []syncer.Update
		want []string
	}{
		{nil, []string{"10.65.0.2/32", "10.65.1.2/32", "198.51.100.0/24"}},
		{[]syncer.Update{profile("kns.ns1", map[string]string{"pcns.env": "prod"}, nil, nil)},
			[]string{"10.65.0.1/32", "10.65.0.2/32", "10.65.1.1/32", "10.65.1.2/32", "198.51.100.0/24"}},
		{[]syncer.Update{del(resKey("profiles", "", "kns.ns2"))}, []string{"10.65.0.1/32", "10.65.1.1/32"}},
	}
	for i, st := range steps {
		feed(g, st.ups...)
		flushInto(t, g, m)
		if got := m.members(setID); !slices.Equal(got, st.want) {
			t.Errorf("step %d: members = %v, want %v", i, got, st.want)
		}
	}
}

func TestWorkloadLabelsCannotClaimANamespace(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		wep("ns1", "h2", "evil", map[string]string{"projectcalico.org/namespace": "ns2", "pcns.env": "prod"}, []string{"10.65.1.9/32"}),
		np("ns2", "p", api.NetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow", srcSel("all()"))}}),
		gnp("q", api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow", func(r *api.Rule) {
			r.Source.NamespaceSelector = "env == 'prod'"
		})}}),
		wep("ns2", "h1", "a", nil, []string{"10.65.0.1/32"}))
	flushInto(t, g, m)
	for id, p := range m.Policies {
		for _, s := range p.InboundRules[0].SrcIPSetIDs {
			if slices.Contains(m.members(s), "10.65.1.9/32") {
				t.Errorf("policy %v: endpoint of ns1 with forged labels is in %s", id, s)
			}
		}
	}
}

package calc

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func gnpID(name string) PolicyID { return PolicyID{Tier: "default", Kind: "gnp", Name: name} }

// ingressPolicies returns a local workload's ingress policy names per tier ("tier:name").
func ingressPolicies(m *dpModel, id WorkloadEndpointID) []string {
	w := m.WEPs[id]
	if w == nil {
		return nil
	}
	var out []string
	for _, t := range w.Tiers {
		for _, p := range t.IngressPolicies {
			out = append(out, t.Name+":"+p.Name)
		}
	}
	return out
}

func TestLabelChangesMoveEndpointsBetweenPoliciesAndSets(t *testing.T) {
	allowWeb := gnp("allow-web", api.GlobalNetworkPolicySpec{Selector: "role == 'web'", Types: []string{"Ingress"},
		Ingress: []api.Rule{rule("Allow", proto("TCP"), srcSel("role == 'client'"), dstPorts("80"))}})
	clientSet := sel(`role == "client"`)
	a := wepID("ns1", "a")
	steps := []struct {
		name        string
		ups         []syncer.Update
		wantPols    []string // ingress policies of local endpoint a
		wantMembers []string // members of the client set (nil: set absent)
	}{
		{"initial", nil, []string{"default:allow-web"}, []string{"10.65.1.2/32"}},
		{"remote client relabelled", []syncer.Update{wep("ns1", "h2", "b", map[string]string{"role": "other"}, []string{"10.65.1.2/32"})},
			[]string{"default:allow-web"}, []string{}},
		{"second client appears", []syncer.Update{wep("ns2", "h3", "c", map[string]string{"role": "client"}, []string{"10.65.2.3/32", "fd5c::3/128"})},
			[]string{"default:allow-web"}, []string{"10.65.2.3/32", "fd5c::3/128"}},
		{"local endpoint leaves the policy", []syncer.Update{wep("ns1", "h1", "a", map[string]string{"role": "db"}, []string{"10.65.0.1/32"})},
			nil, nil},
		{"local endpoint rejoins", []syncer.Update{wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"})},
			[]string{"default:allow-web"}, []string{"10.65.2.3/32", "fd5c::3/128"}},
		{"client moves address", []syncer.Update{wep("ns2", "h3", "c", map[string]string{"role": "client"}, []string{"10.65.2.4/32"})},
			[]string{"default:allow-web"}, []string{"10.65.2.4/32"}},
		{"client deleted", []syncer.Update{del(wepKey("ns2", "h3", "c"))}, []string{"default:allow-web"}, []string{}},
		{"policy deleted", []syncer.Update{del(resKey("globalnetworkpolicies", "", "allow-web"))}, nil, nil},
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, allowWeb,
		wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"}),
		wep("ns1", "h2", "b", map[string]string{"role": "client"}, []string{"10.65.1.2/32"}))
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			flushInto(t, g, m)
			if got := ingressPolicies(m, a); !slices.Equal(got, st.wantPols) {
				t.Errorf("policies of a = %v, want %v", got, st.wantPols)
			}
			_, active := m.Policies[gnpID("allow-web")]
			if active != (st.wantPols != nil) {
				t.Errorf("allow-web active = %v", active)
			}
			_, present := m.IPSets[clientSet]
			if present != (st.wantMembers != nil) {
				t.Fatalf("client set present = %v, want %v", present, st.wantMembers != nil)
			}
			if present && !slices.Equal(m.members(clientSet), st.wantMembers) {
				t.Errorf("client set = %v, want %v", m.members(clientSet), st.wantMembers)
			}
		})
	}
}

func TestProfileLabelInheritance(t *testing.T) {
	teamRed := sel(`team == "red"`)
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		profile("p1", map[string]string{"team": "red"}, nil, nil),
		gnp("red-only", api.GlobalNetworkPolicySpec{Selector: "team == 'red'",
			Ingress: []api.Rule{rule("Allow", srcSel("team == 'red'"))}}),
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}, withProfiles("p1")),
		wep("ns1", "h2", "b", nil, []string{"10.65.1.2/32"}, withProfiles("p1")),
		wep("ns1", "h2", "c", map[string]string{"team": "blue"}, []string{"10.65.1.3/32"}, withProfiles("p1")))
	flushInto(t, g, m)
	steps := []struct {
		name        string
		ups         []syncer.Update
		wantActive  bool
		wantMembers []string
	}{
		{"inherited labels; own label wins", nil, true, []string{"10.65.0.1/32", "10.65.1.2/32"}},
		{"profile relabelled", []syncer.Update{profile("p1", map[string]string{"team": "blue"}, nil, nil)}, false, nil},
		{"profile labels back", []syncer.Update{profile("p1", map[string]string{"team": "red"}, nil, nil)}, true,
			[]string{"10.65.0.1/32", "10.65.1.2/32"}},
		{"endpoint drops the profile", []syncer.Update{wep("ns1", "h2", "b", nil, []string{"10.65.1.2/32"})}, true,
			[]string{"10.65.0.1/32"}},
		{"profile deleted", []syncer.Update{del(resKey("profiles", "", "p1"))}, false, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			flushInto(t, g, m)
			if _, ok := m.Policies[gnpID("red-only")]; ok != st.wantActive {
				t.Errorf("red-only active = %v, want %v", ok, st.wantActive)
			}
			if st.wantMembers != nil && !slices.Equal(m.members(teamRed), st.wantMembers) {
				t.Errorf("members = %v, want %v", m.members(teamRed), st.wantMembers)
			}
		})
	}
	// The endpoint still lists the deleted profile: it is sent as drop-all (Project Calico's
	// default-drop profile).
	if p := m.Profiles["p1"]; p == nil || !isDropAll(p, false) {
		t.Errorf("deleted but referenced profile = %+v, want a deny rule in each direction", p)
	}
}

func TestTierOrderingWithPass(t *testing.T) {
	ord := func(f float64) *float64 { return &f }
	pol := func(name, tierName string, order *float64, types ...string) syncer.Update {
		return gnp(name, api.GlobalNetworkPolicySpec{Tier: tierName, Order: order, Selector: "all()", Types: types,
			Ingress: []api.Rule{rule("Pass")}, Egress: []api.Rule{rule("Allow")}})
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		tier("security", ord(100), "Pass"),
		tier("late", nil, "Deny"),
		tier("early", ord(100), "Deny"), // same order as security: name decides
		pol("security.b", "security", ord(10), "Ingress"),
		pol("security.a", "security", ord(10), "Ingress", "Egress"),
		pol("security.z", "security", nil, "Egress"),
		pol("security.c", "security", ord(5)),
		pol("security.a-b", "security", ord(10), "Egress"), // "security.a-b/" sorts before "security.a/"
		pol("early.x", "early", ord(1), "Ingress"),
		pol("late.y", "late", ord(1), "Ingress"),
		pol("d", "default", ord(1), "Ingress"),
		pol("orphan.o", "orphan", ord(1), "Ingress"), // no Tier object: after every tier, default Deny
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}))
	flushInto(t, g, m)
	id := func(tierName, name string) PolicyID { return PolicyID{Tier: tierName, Kind: "gnp", Name: name} }
	want := []TierInfo{
		{Name: "early", DefaultAction: "Deny", IngressPolicies: []PolicyID{id("early", "early.x")}},
		{Name: "security", DefaultAction: "Pass",
			IngressPolicies: []PolicyID{id("security", "security.c"), id("security", "security.a"), id("security", "security.b")},
			EgressPolicies: []PolicyID{id("security", "security.c"), id("security", "security.a-b"), id("security", "security.a"),
				id("security", "security.z")}},
		{Name: "default", DefaultAction: "Deny", IngressPolicies: []PolicyID{id("default", "d")}},
		{Name: "late", DefaultAction: "Deny", IngressPolicies: []PolicyID{id("late", "late.y")}},
		{Name: "orphan", DefaultAction: "Deny", IngressPolicies: []PolicyID{id("orphan", "orphan.o")}},
	}
	if diff := cmp.Diff(want, m.WEPs[wepID("ns1", "a")].Tiers); diff != "" {
		t.Errorf("tiers (-want +got):\n%s", diff)
	}
	// Creating the tier puts it at its order; reordering tiers reorders the endpoint's tiers.
	feed(g, tier("orphan", ord(1), "Deny"), tier("late", ord(0), "Deny"))
	flushInto(t, g, m)
	var names []string
	for _, ti := range m.WEPs[wepID("ns1", "a")].Tiers {
		names = append(names, ti.Name)
	}
	if wantNames := []string{"late", "orphan", "early", "security", "default"}; !slices.Equal(names, wantNames) {
		t.Errorf("tier order = %v, want %v", names, wantNames)
	}
	// Deleting a tier puts its policies after every tier again (left out, their deny rules
	// would vanish).
	feed(g, del(resKey("tiers", "", "orphan")))
	flushInto(t, g, m)
	names = names[:0]
	for _, ti := range m.WEPs[wepID("ns1", "a")].Tiers {
		names = append(names, ti.Name)
	}
	if wantNames := []string{"late", "early", "security", "default", "orphan"}; !slices.Equal(names, wantNames) {
		t.Errorf("tier order after deleting orphan = %v, want %v", names, wantNames)
	}
}

func TestPolicyTypesAndDirections(t *testing.T) {
	tests := []struct {
		name                string
		types               []string
		ingress, egress     []api.Rule
		wantIngress, wantEg bool
	}{
		{"no types: both directions, as felix (OpenStack SG)", nil, []api.Rule{rule("Allow")}, nil, true, true},
		{"ingress only", []string{"Ingress"}, []api.Rule{rule("Allow")}, []api.Rule{rule("Allow")}, true, false},
		{"egress only", []string{"Egress"}, nil, []api.Rule{rule("Allow")}, false, true},
		{"both", []string{"Ingress", "Egress"}, nil, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, m := newTestGraph("h1"), newModel()
			snapshot(g, np("openstack", "ossg.default.sg1", api.NetworkPolicySpec{Selector: "has(sg1)", Types: tc.types,
				Ingress: tc.ingress, Egress: tc.egress}),
				wep("openstack", "h1", "vm", map[string]string{"sg1": ""}, []string{"10.65.0.1/32"}))
			flushInto(t, g, m)
			tiers := m.WEPs[wepID("openstack", "vm")].Tiers
			if len(tiers) != 1 {
				t.Fatalf("tiers = %+v", tiers)
			}
			if got := len(tiers[0].IngressPolicies) == 1; got != tc.wantIngress {
				t.Errorf("ingress = %v, want %v", got, tc.wantIngress)
			}
			if got := len(tiers[0].EgressPolicies) == 1; got != tc.wantEg {
				t.Errorf("egress = %v, want %v", got, tc.wantEg)
			}
		})
	}
}

// TestPolicySelectorInOutput: an active policy carries its full canonical selector (a namespaced
// policy's includes its namespace), so that the dataplane can group policies as Calico does; a
// selector change that keeps the same endpoints is still sent.
func TestPolicySelectorInOutput(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, np("ns1", "p1", api.NetworkPolicySpec{Selector: "app == 'a'", Ingress: []api.Rule{rule("Allow")}}),
		wep("ns1", "h1", "c1", map[string]string{"app": "a"}, []string{"10.65.0.1/32"}))
	flushInto(t, g, m)
	id := PolicyID{Tier: "default", Kind: "np", Namespace: "ns1", Name: "p1"}
	first := m.Policies[id].Selector
	if !strings.Contains(first, `app == "a"`) || !strings.Contains(first, "ns1") {
		t.Fatalf("selector %q", first)
	}
	g.OnMessage(syncer.Message{Updates: []syncer.Update{np("ns1", "p1", api.NetworkPolicySpec{Selector: "app == 'a' && has(app)",
		Ingress: []api.Rule{rule("Allow")}})}})
	flushInto(t, g, m)
	if got := m.Policies[id].Selector; got == first || !strings.Contains(got, "has(app)") {
		t.Errorf("after the change: selector %q (was %q)", got, first)
	}
}

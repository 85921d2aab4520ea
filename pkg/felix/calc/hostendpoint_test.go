package calc

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func TestHostEndpoints(t *testing.T) {
	ord := func(f float64) *float64 { return &f }
	mk := func(name string, order float64, untracked, preDNAT, forward bool) syncer.Update {
		spec := api.GlobalNetworkPolicySpec{Selector: "has(host) || role == 'web'", Order: ord(order), DoNotTrack: untracked,
			PreDNAT: preDNAT, ApplyOnForward: forward, Types: []string{"Ingress", "Egress"}, Ingress: []api.Rule{rule("Allow")}}
		return gnp(name, spec)
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		mk("normal", 1, false, false, false),
		mk("forward", 2, false, false, true),
		mk("untracked", 3, true, false, true),
		mk("prednat", 4, false, true, true),
		profile("hp", nil, []api.Rule{rule("Allow")}, nil),
		hep("h1-eth0", "h1", "eth0", map[string]string{"host": "a"}, []string{"198.18.0.1", "fd00::1"}, "hp"),
		hep("h1-all", "h1", "*", map[string]string{"host": "b"}, nil),
		hep("h2-eth0", "h2", "eth0", map[string]string{"host": "c"}, []string{"198.18.1.1"}),
		wep("ns1", "h1", "w", map[string]string{"role": "web"}, []string{"10.65.0.1/32"}))
	flushInto(t, g, m)
	pid := gnpID
	wantTiers := func(ingress []PolicyID, egress ...PolicyID) []TierInfo {
		return []TierInfo{{Name: "default", DefaultAction: "Deny", IngressPolicies: ingress, EgressPolicies: egress}}
	}
	want := &HostEndpoint{
		Name: "h1-eth0", InterfaceName: "eth0", ProfileIDs: []string{"hp"},
		ExpectedIPv4Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")},
		ExpectedIPv6Addrs: []netip.Addr{netip.MustParseAddr("fd00::1")},
		Tiers:             wantTiers([]PolicyID{pid("normal"), pid("forward")}, pid("normal"), pid("forward")),
		UntrackedTiers:    wantTiers([]PolicyID{pid("untracked")}, pid("untracked")),
		PreDNATTiers:      wantTiers([]PolicyID{pid("prednat")}),
		ForwardTiers:      wantTiers([]PolicyID{pid("forward")}, pid("forward")),
	}
	opts := []cmp.Option{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })}
	if diff := cmp.Diff(want, m.HEPs["h1-eth0"], opts...); diff != "" {
		t.Errorf("named host endpoint (-want +got):\n%s", diff)
	}
	if all := m.HEPs["h1-all"]; all == nil || all.InterfaceName != "*" || len(all.PreDNATTiers) != 1 {
		t.Errorf("all-interfaces host endpoint = %+v", all)
	}
	if _, ok := m.HEPs["h2-eth0"]; ok {
		t.Error("another host's endpoint was sent")
	}
	// The workload matches all four selectors but gets only the normal policies.
	if diff := cmp.Diff(wantTiers([]PolicyID{pid("normal"), pid("forward")}, pid("normal"), pid("forward")),
		m.WEPs[wepID("ns1", "w")].Tiers, opts...); diff != "" {
		t.Errorf("workload tiers (-want +got):\n%s", diff)
	}
	p := m.Policies[pid("untracked")]
	if p == nil || !p.Untracked || !p.ApplyOnForward || p.PreDNAT {
		t.Errorf("untracked policy flags = %+v", p)
	}
	// Another host's endpoint is in IP sets (by its expected IPs).
	feed(g, gnp("src", api.GlobalNetworkPolicySpec{Selector: "has(host)", Ingress: []api.Rule{rule("Allow", srcSel("host == 'c'"))}}))
	flushInto(t, g, m)
	if got := m.members(m.Policies[pid("src")].InboundRules[0].SrcIPSetIDs[0]); len(got) != 1 || got[0] != "198.18.1.1/32" {
		t.Errorf("remote host endpoint set = %v", got)
	}
	// Turning the untracked policy into a normal one moves it between lists.
	feed(g, mk("untracked", 3, false, false, false), del(resKey("hostendpoints", "", "h1-all")))
	flushInto(t, g, m)
	h := m.HEPs["h1-eth0"]
	if len(h.UntrackedTiers) != 0 || len(h.Tiers[0].IngressPolicies) != 4 { // normal, forward, untracked, src
		t.Errorf("after update: %+v", h)
	}
	if _, ok := m.HEPs["h1-all"]; ok {
		t.Error("deleted host endpoint still present")
	}
}

func TestEndpointMovesBetweenHosts(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, gnp("all", api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow")}}),
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}, withProfiles("p")))
	flushInto(t, g, m)
	if m.WEPs[wepID("ns1", "a")] == nil || m.Profiles["p"] == nil || m.Policies[gnpID("all")] == nil {
		t.Fatalf("local endpoint not resolved: %+v", m)
	}
	// spec.node changes: the endpoint is no longer local (the name still says h1).
	u := wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}, withProfiles("p"))
	u.Value.(*api.WorkloadEndpoint).Spec.Node = "h2"
	feed(g, u)
	flushInto(t, g, m)
	if len(m.WEPs) != 0 || len(m.Profiles) != 0 || len(m.Policies) != 0 {
		t.Errorf("after moving away: %d endpoints, %d profiles, %d policies", len(m.WEPs), len(m.Profiles), len(m.Policies))
	}
}

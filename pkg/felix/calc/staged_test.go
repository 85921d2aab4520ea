package calc

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func sgnp(name, action string, spec api.GlobalNetworkPolicySpec) syncer.Update {
	return up(resKey("stagedglobalnetworkpolicies", "", name), &api.StagedGlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.StagedGlobalNetworkPolicySpec{StagedAction: action, GlobalNetworkPolicySpec: api.GlobalNetworkPolicySpec{
			Tier: spec.Tier, Order: spec.Order, Selector: spec.Selector, Types: spec.Types, Ingress: spec.Ingress}}})
}

func snp(ns, name string, spec api.NetworkPolicySpec) syncer.Update {
	return up(resKey("stagednetworkpolicies", ns, name), &api.StagedNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns},
		Spec: api.StagedNetworkPolicySpec{StagedAction: api.StagedActionSet, NetworkPolicySpec: api.NetworkPolicySpec{
			Tier: spec.Tier, Order: spec.Order, Selector: spec.Selector, Types: spec.Types, Ingress: spec.Ingress}}})
}

// TestStagedAsEnforced: without the option staged policies are never enforced; with it they
// are, in their tier among the enforced policies by order (a staged policy beside its enforced
// namesake), except one whose stagedAction is Delete; a tier of staged policies only appears.
func TestStagedAsEnforced(t *testing.T) {
	order := func(f float64) *float64 { return &f }
	ups := []syncer.Update{
		wep("ns1", "h1", "a", map[string]string{"app": "a"}, []string{"10.65.0.1/32"}),
		up(resKey("tiers", "", "security"), &api.Tier{ObjectMeta: api.ObjectMeta{Name: "security"}, Spec: api.TierSpec{Order: order(10)}}),
		gnp("web", api.GlobalNetworkPolicySpec{Tier: "default", Order: order(20), Selector: "all()", Types: []string{"Ingress"},
			Ingress: []api.Rule{rule("Allow")}}),
		sgnp("web", api.StagedActionSet, api.GlobalNetworkPolicySpec{Tier: "default", Order: order(10), Selector: "all()",
			Types: []string{"Ingress"}, Ingress: []api.Rule{rule("Deny")}}),
		sgnp("gone", api.StagedActionDelete, api.GlobalNetworkPolicySpec{Tier: "default", Order: order(1), Selector: "all()"}),
		snp("ns1", "security.only", api.NetworkPolicySpec{Tier: "security", Selector: "all()", Types: []string{"Ingress"},
			Ingress: []api.Rule{rule("Allow")}}),
	}
	for _, staged := range []bool{false, true} {
		var opts []Option
		if staged {
			opts = append(opts, StagedAsEnforced())
		}
		g, m := New("h1", zerolog.Nop(), opts...), newModel()
		snapshot(g, ups...)
		flushInto(t, g, m)
		got := ingressPolicies(m, wepID("ns1", "a"))
		want := []string{"default:web"}
		if staged {
			want = []string{"security:security.only", "default:web", "default:web"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("staged %v: ingress policies %v, want %v", staged, got, want)
		}
		if staged {
			tiers := m.WEPs[wepID("ns1", "a")].Tiers
			kinds := []string{tiers[0].IngressPolicies[0].Kind, tiers[1].IngressPolicies[0].Kind, tiers[1].IngressPolicies[1].Kind}
			if !slices.Equal(kinds, []string{"snp", "sgnp", "gnp"}) {
				t.Errorf("kinds %v, want snp (security), sgnp then gnp (default, by order)", kinds)
			}
		}
		if _, ok := m.Policies[PolicyID{Tier: "default", Kind: "sgnp", Name: "gone"}]; ok {
			t.Errorf("staged %v: the staged Delete policy is active", staged)
		}
	}
}

package felix

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// TestAddressBook: an endpoint's address names it (local or not), before any network set
// that holds it; other addresses in a network set name the set by longest prefix; the rest
// is unknown; an end of tier's trigger is the last policy of the tier in the direction; a
// removed item is forgotten.
func TestAddressBook(t *testing.T) {
	b := newAddressBook()
	p := netip.MustParsePrefix
	b.ItemChanged("w:prod/a", &calc.ItemInfo{Kind: calc.ItemWorkload, Namespace: "prod", Name: "db", Local: true,
		Nets: []netip.Prefix{p("10.65.0.5/32"), p("fd5c:1::5/128")}, Labels: map[string]string{"app": "db"}})
	b.ItemChanged("g:wide", &calc.ItemInfo{Kind: calc.ItemNetworkSet, Name: "wide", Nets: []netip.Prefix{p("10.0.0.0/8")}})
	b.ItemChanged("g:narrow", &calc.ItemInfo{Kind: calc.ItemNetworkSet, Name: "narrow", Nets: []netip.Prefix{p("10.65.0.0/16")}})
	b.LocalTiers("w:prod/a", []calc.TierInfo{{Name: "security", IngressPolicies: []calc.PolicyID{
		{Tier: "security", Kind: "gnp", Name: "first"}, {Tier: "security", Kind: "np", Namespace: "prod", Name: "last"}}}})
	for addr, want := range map[string]string{"10.65.0.5": "db", "fd5c:1::5": "db", "10.65.9.9": "narrow", "10.1.1.1": "wide", "192.0.2.1": ""} {
		ep, local, ok := b.Lookup(netip.MustParseAddr(addr))
		if ep.Name != want || ok != (want != "") || local != (want == "db") {
			t.Errorf("%s: %+v local %v ok %v, want %q", addr, ep, local, ok, want)
		}
	}
	if ep, _, _ := b.Lookup(netip.MustParseAddr("10.65.0.5")); ep.Type != flowlog.WorkloadEndpoint || ep.Namespace != "prod" || ep.Labels["app"] != "db" {
		t.Errorf("endpoint %+v", ep)
	}
	if ep, _, _ := b.Lookup(netip.MustParseAddr("10.1.1.1")); ep.Type != flowlog.NetworkSet || ep.Namespace != flowlog.NoNamespace {
		t.Errorf("network set %+v", ep)
	}
	got, ok := b.Trigger(netip.MustParseAddr("10.65.0.5"), ruleid.Ingress, "security")
	if want := (ruleid.Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "last"}); !ok || got != want {
		t.Errorf("trigger %v %v", got, ok)
	}
	if _, ok := b.Trigger(netip.MustParseAddr("10.65.0.5"), ruleid.Egress, "security"); ok {
		t.Error("trigger of a tier without egress policies")
	}
	b.ItemChanged("w:prod/a", nil)
	if ep, _, _ := b.Lookup(netip.MustParseAddr("10.65.0.5")); ep.Name != "narrow" {
		t.Errorf("after removal: %+v", ep)
	}
}

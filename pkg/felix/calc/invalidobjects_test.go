package calc

import (
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// The objects below are raw etcd values read through felix's decoder (decoded), so that these
// tests follow the read path: decode, read defaults, validation, calc.

const v3 = `"apiVersion":"projectcalico.org/v3"`

// isDropAll reports whether p is a single deny rule in each direction, carrying a reason when
// invalid (a profile that failed validation) and none otherwise (one that does not exist).
func isDropAll(p *Profile, invalid bool) bool {
	one := func(rs []Rule) bool {
		return len(rs) == 1 && rs[0].Action == RuleDeny && (rs[0].Invalid != "") == invalid &&
			rs[0].Protocol == 0 && len(rs[0].SrcNets)+len(rs[0].DstNets)+len(rs[0].SrcIPSetIDs)+len(rs[0].DstIPSetIDs) == 0
	}
	return p != nil && one(p.InboundRules) && one(p.OutboundRules)
}

// TestInvalidNetworkSetKeepsValidNets: a GlobalNetworkSet and a NetworkSet with one bad CIDR
// among good ones keep the good ones and their labels (as Project Calico does), so a deny rule
// selecting them still matches them; each skipped entry is logged with the key, once per change
// (not again when a resync brings the same revision). A set whose labels fail validation keeps
// them as written (they are plain strings to selectors): absent, it would leave the deny rule.
func TestInvalidNetworkSetKeepsValidNets(t *testing.T) {
	gKey := resKey("globalnetworksets", "", "blocked")
	gVal := `{"kind":"GlobalNetworkSet",` + v3 + `,"metadata":{"name":"blocked","labels":{"role":"blocked"}},
	  "spec":{"nets":["198.18.7.0/24","10.1.0.0/99","fd5c:7::1"]}}`
	nKey := resKey("networksets", "ns1", "blocked-ns")
	nVal := `{"kind":"NetworkSet",` + v3 + `,"metadata":{"name":"blocked-ns","namespace":"ns1","labels":{"role":"blocked"}},
	  "spec":{"nets":["not-a-net","10.65.9.0/24"]}}`
	lKey := resKey("globalnetworksets", "", "bad-labels")
	lVal := `{"kind":"GlobalNetworkSet",` + v3 + `,"metadata":{"name":"bad-labels","labels":{"role":"blocked","not a key!":"x"}},
	  "spec":{"nets":["198.18.8.0/24"]}}`
	deny := gnp("deny-blocked", gnpSpec("all()", rule("Deny", srcSel("role == 'blocked'")), rule("Allow")))
	logs := &logtest.Buffer{}
	g, m := New("h1", zerolog.New(logs)), newModel()
	ups := []syncer.Update{wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), deny, decoded(t, gKey, gVal), decoded(t, nKey, nVal),
		decoded(t, lKey, lVal)}
	snapshot(g, ups...)
	flushInto(t, g, m)
	want := []string{"10.65.9.0/24", "198.18.7.0/24", "198.18.8.0/24", "fd5c:7::1/128"}
	if got := m.members(sel("role == 'blocked'")); !slices.Equal(got, want) {
		t.Fatalf("members of the deny rule's set = %v, want the valid entries %v", got, want)
	}
	for _, want := range []string{gKey, nKey, "spec.nets[1]", "10.1.0.0/99", "spec.nets[0]", "not-a-net"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not name %q:\n%s", want, logs)
		}
	}
	before := strings.Count(logs.String(), "Skipping a network set entry")
	snapshot(g, ups...) // a resync: same revisions
	flushInto(t, g, m)
	if after := strings.Count(logs.String(), "Skipping a network set entry"); after != before {
		t.Errorf("a resync logged the skipped entries again (%d lines, then %d)", before, after)
	}
}

// gnpSpec is a GlobalNetworkPolicy spec for selector with ingress rules.
func gnpSpec(selector string, ingress ...api.Rule) api.GlobalNetworkPolicySpec {
	return api.GlobalNetworkPolicySpec{Selector: selector, Ingress: ingress}
}

// TestInvalidAndUnknownProfilesDropAll: as in Project Calico, a profile that an endpoint names
// but that does not exist, or that failed validation, is a deny rule in each direction; it
// stops the endpoint's profile walk, so [deny-a (invalid), allow-all] does not become
// allow-all. The invalid profile's labelsToApply still flow to its endpoints.
func TestInvalidAndUnknownProfilesDropAll(t *testing.T) {
	badKey := resKey("profiles", "", "deny-a")
	bad := `{"kind":"Profile",` + v3 + `,"metadata":{"name":"deny-a"},
	  "spec":{"labelsToApply":{"team":"a"},"ingress":[{"action":"Deny","source":{"nets":["198.18.0.0/99"]}}]}}`
	allowAll := profile("allow-all", nil, []api.Rule{rule("Allow")}, []api.Rule{rule("Allow")})
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, allowAll, decoded(t, badKey, bad),
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}, withProfiles("deny-a", "allow-all")),
		wep("ns1", "h1", "b", nil, []string{"10.65.0.2/32"}, withProfiles("gone", "allow-all")),
		gnp("team-a", gnpSpec("team == 'a'", rule("Allow"))))
	flushInto(t, g, m)
	if p := m.Profiles["deny-a"]; !isDropAll(p, true) {
		t.Errorf("invalid profile = %+v, want a deny rule with its reason in each direction", p)
	}
	if p := m.Profiles["gone"]; !isDropAll(p, false) {
		t.Errorf("unknown profile = %+v, want a deny rule in each direction", p)
	}
	if w := m.WEPs[wepID("ns1", "a")]; w == nil || !slices.Equal(w.ProfileIDs, []string{"deny-a", "allow-all"}) {
		t.Fatalf("endpoint a = %+v, want its profiles in order", w)
	}
	if got := ingressPolicies(m, wepID("ns1", "a")); !slices.Equal(got, []string{"default:team-a"}) {
		t.Errorf("the invalid profile's labelsToApply no longer reach its endpoint: policies %v", got)
	}
	// Deleted while the endpoint still names it: drop-all again, without a reason.
	feed(g, del(badKey))
	flushInto(t, g, m)
	if p := m.Profiles["deny-a"]; !isDropAll(p, false) {
		t.Errorf("deleted profile still named = %+v, want drop-all", p)
	}
	// Made valid: its own rules.
	feed(g, profile("deny-a", nil, []api.Rule{rule("Allow")}, nil))
	flushInto(t, g, m)
	if p := m.Profiles["deny-a"]; p == nil || len(p.InboundRules) != 1 || p.InboundRules[0].Action != RuleAllow ||
		len(p.OutboundRules) != 0 {
		t.Errorf("valid profile = %+v, want its own rules", p)
	}
}

// TestInvalidHostEndpointFailsClosed: a host endpoint that fails validation (one bad expected
// IP) is not treated as absent (its interface would be unprotected): it keeps its interface, its
// valid addresses, its labels and the policies that select it, but loses its profiles, so what
// no policy allows meets the endpoint's final drop. Another host's invalid endpoint keeps its
// addresses in the IP sets of the rules selecting it.
func TestInvalidHostEndpointFailsClosed(t *testing.T) {
	hKey := resKey("hostendpoints", "", "h1-eth0")
	bad := `{"kind":"HostEndpoint",` + v3 + `,"metadata":{"name":"h1-eth0","labels":{"role":"edge"}},
	  "spec":{"node":"h1","interfaceName":"eth0","expectedIPs":["198.18.0.1","198.18.0.300"],"profiles":["allow-all"]}}`
	rKey := resKey("hostendpoints", "", "h2-eth0")
	remote := `{"kind":"HostEndpoint",` + v3 + `,"metadata":{"name":"h2-eth0","labels":{"role":"edge"}},
	  "spec":{"node":"h2","interfaceName":"eth0!","expectedIPs":["198.18.0.2"]}}`
	allowAll := profile("allow-all", nil, []api.Rule{rule("Allow")}, []api.Rule{rule("Allow")})
	edge := gnp("edge", gnpSpec("role == 'edge'", rule("Allow", srcSel("role == 'edge'"))))
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, allowAll, edge, decoded(t, hKey, bad), decoded(t, rKey, remote))
	flushInto(t, g, m)
	h := m.HEPs["h1-eth0"]
	if h == nil {
		t.Fatal("the invalid host endpoint is absent: its interface is unprotected")
	}
	if h.InterfaceName != "eth0" || len(h.ProfileIDs) != 0 || len(h.Tiers) != 1 ||
		len(h.ExpectedIPv4Addrs) != 1 || h.ExpectedIPv4Addrs[0].String() != "198.18.0.1" {
		t.Fatalf("invalid host endpoint = %+v, want eth0, no profiles, its policy and its valid address", h)
	}
	if _, ok := m.Profiles["allow-all"]; ok {
		t.Error("the invalid endpoint's profile is still active")
	}
	want := []string{"198.18.0.1/32", "198.18.0.2/32"}
	if got := m.members(sel("role == 'edge'")); !slices.Equal(got, want) {
		t.Errorf("members of the rule selecting the endpoints = %v, want %v", got, want)
	}
}

// TestInvalidTierFailsClosed: a Tier that fails validation is not treated as absent (its
// policies would be inactive): its policies apply at its order, and its default action is Deny.
func TestInvalidTierFailsClosed(t *testing.T) {
	tKey := resKey("tiers", "", "security")
	bad := `{"kind":"Tier",` + v3 + `,"metadata":{"name":"security"},"spec":{"order":100,"defaultAction":"Bogus"}}`
	spec := gnpSpec("all()", rule("Deny", srcSel("role == 'blocked'")))
	spec.Tier = "security"
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, decoded(t, tKey, bad), up(resKey("globalnetworkpolicies", "", "security.deny"),
		&api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "security.deny"}, Spec: spec}),
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}))
	flushInto(t, g, m)
	w := m.WEPs[wepID("ns1", "a")]
	if w == nil || len(w.Tiers) != 1 || w.Tiers[0].Name != "security" || w.Tiers[0].DefaultAction != "Deny" ||
		len(w.Tiers[0].IngressPolicies) != 1 {
		t.Fatalf("endpoint under an invalid tier = %+v, want the tier's policy, default action Deny", w)
	}
}

// TestInvalidPoolKeptAsWritten: an IP pool that fails validation but whose CIDR parses is used
// as written (treated as absent, traffic to it from natOutgoing pools would be masqueraded and
// routes to its blocks would lose their encapsulation); an encapsulation mode that is not one
// is Never. A pool whose CIDR does not parse is absent.
func TestInvalidPoolKeptAsWritten(t *testing.T) {
	pool := func(name, spec string) syncer.Update {
		return decoded(t, resKey("ippools", "", name),
			`{"kind":"IPPool",`+v3+`,"metadata":{"name":"`+name+`"},"spec":`+spec+`}`)
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, pool("big-block", `{"cidr":"10.65.0.0/16","blockSize":99,"natOutgoing":true,"vxlanMode":"Always"}`),
		pool("bad-mode", `{"cidr":"10.66.0.0/16","vxlanMode":"Sometimes"}`),
		pool("bad-cidr", `{"cidr":"10.67.0.0/99"}`))
	flushInto(t, g, m)
	if p := m.Pools["big-block"]; p == nil || p.CIDR.String() != "10.65.0.0/16" || !p.NATOutgoing || p.VXLANMode != "Always" {
		t.Errorf("pool with a bad block size = %+v, want it as written", p)
	}
	if p := m.Pools["bad-mode"]; p == nil || p.VXLANMode != "Never" {
		t.Errorf("pool with an unknown VXLAN mode = %+v, want VXLANMode Never", p)
	}
	if p, ok := m.Pools["bad-cidr"]; ok {
		t.Errorf("pool whose CIDR does not parse = %+v, want absent", p)
	}
}

// TestInvalidNodeUsedAsFarAsItParses: a Node that fails validation keeps the fields that parse
// (as Project Calico's felix reads a Node field by field); a stored VXLAN MAC that is not one
// gives way to the computed MAC.
func TestInvalidNodeUsedAsFarAsItParses(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, node("h1", "198.18.0.1/24", ""), decoded(t, resKey("nodes", "", "h2"), `{"kind":"Node",`+v3+`,
	  "metadata":{"name":"h2","labels":{"rack":"r1"}},"spec":{"bgp":{"ipv4Address":"198.18.0.2/24","ipv6Address":"fd5c::2/999"},
	  "ipv4VXLANTunnelAddr":"10.65.1.1","vxlanTunnelMACAddr":"not-a-mac"}}`))
	flushInto(t, g, m)
	h := m.Hosts["h2"]
	if h == nil || h.IPv4Addr.String() != "198.18.0.2/24" || h.IPv6Addr.IsValid() || h.Labels["rack"] != "r1" {
		t.Fatalf("invalid node h2 = %+v, want its IPv4 address and labels", h)
	}
	v := m.VTEPs[vtepKey("h2", false)]
	if v == nil || v.MAC != (&nodeInfo{name: "h2"}).vxlanMAC(4) {
		t.Errorf("VTEP of the invalid node = %+v, want the computed MAC", v)
	}
}

// TestInvalidFelixConfigurationKeepsValidFields: a FelixConfiguration with one bad field keeps
// its other fields (as Project Calico's felix reads its configuration field by field); treated
// as absent, every field fell back to its default (the default failsafe ports among them).
func TestInvalidFelixConfigurationKeepsValidFields(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g, decoded(t, resKey("felixconfigurations", "", "node.h1"), `{"kind":"FelixConfiguration",`+v3+`,
	  "metadata":{"name":"node.h1"},"spec":{"failsafeInboundHostPorts":[],"defaultEndpointToHostAction":"Drop","vxlanPort":70000}}`))
	g.Flush()
	n := g.Facts().Config.Node
	if n == nil || n.FailsafeInboundHostPorts == nil || len(*n.FailsafeInboundHostPorts) != 0 ||
		n.DefaultEndpointToHostAction != "Drop" || n.VXLANPort != nil {
		t.Fatalf("node.h1 = %+v, want its valid fields without vxlanPort", n)
	}
}

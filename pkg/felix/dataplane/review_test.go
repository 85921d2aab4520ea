package dataplane

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestPolicyMovesTier: a policy whose tier changes (its name needs no tier prefix, so calc
// removes it under the old tier's ID and adds it under the new one) keeps its rules. Its chain
// has the same name in both tiers; the chain must be rendered from the new ID, not left empty
// (an empty deny policy lets the next policy of the tier allow what it denied).
func TestPolicyMovesTier(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali11111111111")
	pa := calc.PolicyID{Tier: "a", Kind: "gnp", Name: "p"}
	pb := calc.PolicyID{Tier: "b", Kind: "gnp", Name: "p"}
	q := calc.PolicyID{Tier: "b", Kind: "gnp", Name: "q"}
	deny := []calc.Rule{{Action: calc.RuleDeny, Protocol: 6}}
	h.send(
		policySel(pa, "app == 'x'", deny, nil),
		policySel(q, "all()", []calc.Rule{allow()}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"},
			withTiers(tier("a", ids(pa), nil), tier("b", ids(q), nil))))
	chain := rules.GroupChain(rules.Filter, false, ids(pb))
	if got := h.chainRules(chain); !strings.Contains(got, "drop") {
		t.Fatalf("before the move, %s:\n%s", chain, got)
	}
	h.send(
		calc.ActivePolicyRemove{ID: pa},
		policySel(pb, "app == 'x'", deny, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("b", ids(pb, q), nil))))
	if got := h.chainRules(chain); !strings.Contains(got, "drop") {
		t.Errorf("after the move to tier b, %s lost the policy's deny:\n%s", chain, got)
	}
}

// TestPolicyMovesTierEndpointLater: when calc's update of a second endpoint of the moved policy
// comes in a later batch, the second endpoint (still listing the old ID, which calc removed)
// does not take the policy's chain back to the old ID: the first endpoint keeps the deny.
func TestPolicyMovesTierEndpointLater(t *testing.T) {
	for range 20 { // the endpoints are installed in map order
		h := newHarness(t, Config{Hostname: "host1"})
		h.up("cali11111111111", "cali22222222222")
		pa := calc.PolicyID{Tier: "a", Kind: "gnp", Name: "p"}
		pb := calc.PolicyID{Tier: "b", Kind: "gnp", Name: "p"}
		q := calc.PolicyID{Tier: "b", Kind: "gnp", Name: "q"}
		deny := []calc.Rule{{Action: calc.RuleDeny, Protocol: 6}}
		before := withTiers(tier("a", ids(pa), nil), tier("b", ids(q), nil))
		h.send(
			policySel(pa, "app == 'x'", deny, nil),
			policySel(q, "all()", []calc.Rule{allow()}, nil),
			wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, before),
			wep("w2", "cali22222222222", []string{"10.65.0.2/32"}, before))
		h.send(
			calc.ActivePolicyRemove{ID: pa},
			policySel(pb, "app == 'x'", deny, nil),
			wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("b", ids(pb, q), nil))))
		chain := rules.GroupChain(rules.Filter, false, ids(pb))
		if got := h.chainRules(chain); !strings.Contains(got, "drop") {
			t.Fatalf("%s lost the policy's deny:\n%s", chain, got)
		}
	}
}

// TestMissingNamedPortSet: a named-port set calc never sent is stood in for by an empty set of
// the named-port type (address . protocol . port), so that the rule that looks it up (negated:
// a rule that needs a member of an empty set is left out) loads and the transaction commits.
func TestMissingNamedPortSet(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali11111111111")
	id := gnpID("np")
	h.send(
		policy(id, []calc.Rule{
			{Action: calc.RuleAllow, Protocol: 6, DstNamedPortIPSetIDs: []string{"n:http"}},
			{Action: calc.RuleDeny, Protocol: 6, NotDstNamedPortIPSetIDs: []string{"n:http"}},
		}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", ids(id), nil))))
	if got := h.chainRules(rules.GroupChain(rules.Filter, false, ids(id))); !strings.Contains(got, "!= @cali40n-http") ||
		strings.Count(got, "@cali40n-http") != 1 {
		t.Fatalf("policy chain (the negated lookup only):\n%s", got)
	}
}

// TestForwardChainForEveryHostEndpoint: as in Project Calico, every host endpoint has forward
// chains, which allow forwarded traffic when it has no applyOnForward policy; so the "*" host
// endpoint's forward policy applies only to interfaces without a host endpoint of their own.
func TestForwardChainForEveryHostEndpoint(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("eth0", "eth1")
	deny := gnpID("fwd-deny")
	h.send(
		policy(deny, []calc.Rule{{Action: calc.RuleDeny}}, []calc.Rule{{Action: calc.RuleDeny}}),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-all", InterfaceName: "*",
			ForwardTiers: []calc.TierInfo{tier("default", ids(deny), ids(deny))}}},
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth1", InterfaceName: "eth1", ProfileIDs: []string{"p"}}},
		profile("p", []calc.Rule{allow()}, []calc.Rule{allow()}))
	for _, c := range []struct{ dispatch, chain string }{
		{"filter-cali-from-hep-forward", "filter-cali-fhfw-eth1"},
		{"filter-cali-to-hep-forward", "filter-cali-thfw-eth1"},
	} {
		m := h.dp.ruleset.Tables()[0].Map(c.dispatch)
		if m == nil || m.Elements[nft.IfnameKey("eth1")].Chain != c.chain {
			t.Errorf("%s does not send eth1 to %s (its forwarded traffic meets the \"*\" endpoint's policy): %v", c.dispatch, c.chain, m)
			continue
		}
		if got := h.chainRules(c.chain); !strings.Contains(got, "Allow forwarded traffic by default") {
			t.Errorf("%s:\n%s", c.chain, got)
		}
	}
}

// TestKernelWildcardForwardEgressToWorkload: the applyOnForward egress policy of the "*" host
// endpoint applies to traffic forwarded to a local workload, as in Project Calico (its forward
// dispatch skips workload interfaces only in mangle, for normal policy of DNATed host traffic):
// a forward egress deny drops what the workload's own policy allows.
func TestKernelWildcardForwardEgressToWorkload(t *testing.T) {
	tp := newTopology(t)
	b := tp.addWorkload(t, "b", ifB, ipB)
	tp.fabric.Exec(t, "ip", "route", "add", ipB+"/32", "via", "198.18.0.1")
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	web, deny := gnpID("b-web"), gnpID("fwd-deny-8081")
	startDataplane(t, tp, Config{},
		policy(web, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6}}, nil),
		policy(deny, nil, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8081)}, allow()}),
		kwep("b", ifB, ipB, tier("default", ids(web), nil)),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-all", InterfaceName: "*",
			ProfileIDs: []string{"all"}, ForwardTiers: []calc.TierInfo{tier("default", nil, ids(deny))}}},
		profile("all", []calc.Rule{allow()}, []calc.Rule{allow()}))
	check(t, "forwarded to a workload",
		expectation{"tcp 8080", func() bool { return canTCP(t, tp.fabric, ipB, 8080) }, true},
		expectation{"tcp 8081 (forward egress deny)", func() bool { return canTCP(t, tp.fabric, ipB, 8081) }, false})
}

// TestWildcardHostEndpointIgnoresUntracked: as in Project Calico, doNotTrack policy of a "*"
// host endpoint is ignored (Calico logs that it is not supported): applied, its allow rules
// would accept in raw what the endpoint's normal policy denies.
func TestWildcardHostEndpointIgnoresUntracked(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("eth0")
	untr := gnpID("untracked-allow")
	h.send(
		policy(untr, []calc.Rule{allow()}, []calc.Rule{allow()}),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-all", InterfaceName: "*",
			UntrackedTiers: []calc.TierInfo{tier("default", ids(untr), ids(untr))}}})
	for _, name := range []string{"raw-cali-fh-:all", "raw-cali-th-:all", "raw-cali-from-host-endpoint"} {
		if got := h.chainRules(name); got != "" {
			t.Errorf("%s exists:\n%s", name, got)
		}
	}
	if got := h.chainRules("raw-cali-PREROUTING"); strings.Contains(got, "host-endpoint") {
		t.Errorf("raw PREROUTING dispatches to host endpoints:\n%s", got)
	}
}

// TestStandInGoesWithLastLookup: the empty stand-in for a set calc did not send goes when the
// policy that looked it up changes and no longer does (the chain stays).
func TestStandInGoesWithLastLookup(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali11111111111")
	id := gnpID("p")
	w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", ids(id), nil)))
	h.send(policy(id, []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:gone"}}}, nil), w)
	if h.dp.ruleset.Tables()[0].Set("cali40s-gone") == nil {
		t.Fatal("no stand-in for s:gone")
	}
	h.send(policy(id, []calc.Rule{allow()}, nil))
	for i, name := range []string{"cali40s-gone", "cali60s-gone"} {
		if h.dp.ruleset.Tables()[i].Set(name) != nil {
			t.Errorf("stand-in %s stayed after its last lookup went", name)
		}
	}
}

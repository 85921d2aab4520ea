package dataplane

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
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

// TestMissingNamedPortSet: a named-port set calc never sent is stood in for by an empty set of
// the named-port type (address . protocol . port), so that the rule that looks it up loads and
// the transaction commits.
func TestMissingNamedPortSet(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali11111111111")
	id := gnpID("np")
	h.send(
		policy(id, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstNamedPortIPSetIDs: []string{"n:http"}}}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", ids(id), nil))))
	if got := h.chainRules(rules.GroupChain(rules.Filter, false, ids(id))); !strings.Contains(got, "cali40n-http") {
		t.Fatalf("policy chain:\n%s", got)
	}
}

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

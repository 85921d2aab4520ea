package rules

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/flowlog"
)

// A source rule split into several calc rules (numeric and named ports) names the source rule's
// index in every part, and the rules after it keep theirs: flow logs name v3 rule indexes, as
// the trace does (found by policydiff's TestTraceAgreesWithPackets, seed 7).
func TestPolicyRuleIDsNameSourceRules(t *testing.T) {
	rs := []calc.Rule{{Action: calc.RulePass, Index: 0}, {Action: calc.RulePass, Index: 0}, {Action: calc.RuleAllow, Index: 1}}
	ids, err := PolicyRuleIDs(calc.PolicyID{Tier: "t1", Name: "t1.pa"}, true, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		index  int
		action flowlog.Action
	}{{0, flowlog.Pass}, {0, flowlog.Pass}, {1, flowlog.Allow}} {
		if ids[i].Index != want.index || ids[i].Action != want.action || ids[i].Name != "t1.pa" {
			t.Errorf("calc rule %d: %v, want rule %d %v", i, ids[i], want.index, want.action)
		}
	}
	if ids[0].Prefix() != ids[1].Prefix() {
		t.Errorf("the parts of rule 0 log %q and %q", ids[0].Prefix(), ids[1].Prefix())
	}
}

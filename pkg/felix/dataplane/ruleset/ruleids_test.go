package ruleset

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// TestStampRuleIDs: with StampRuleIDs, each verdict rule of a policy or profile carries its rule
// identifier (with the source rule's index, calc.Rule.Index) as its comment and the table maps it
// back; without, felix's rules carry none.
func TestStampRuleIDs(t *testing.T) {
	for _, stamp := range []bool{false, true} {
		h := newHarness(t, true)
		ids := ruleid.NewTable()
		if stamp {
			h.b.StampRuleIDs(ids)
		}
		id := calc.PolicyID{Tier: "sec", Kind: "np", Namespace: "prod", Name: "sec.db"}
		h.policy(id, "a", []calc.Rule{{Action: calc.RuleLog}, {Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(80), Index: 1},
			{Action: calc.RulePass, Index: 2}}, nil)
		h.profile("prof", []calc.Rule{{Action: calc.RuleDeny}}, nil)
		h.endpoint("w", workload("cali11111111111", []calc.TierInfo{ingress("sec", id)}, "prof"))
		h.build()
		group := h.chainRules(rules.GroupChain(rules.Filter, false, []calc.PolicyID{id}))
		profile := h.chainRules(rules.ProfileChain(rules.Filter, "prof", false))
		p := ruleid.Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "sec.db"}
		allow, _ := ruleid.Rule(p, "sec", ruleid.Ingress, 1, flowlog.Allow)
		pass, _ := ruleid.Rule(p, "sec", ruleid.Ingress, 2, flowlog.Pass)
		deny, _ := ruleid.ProfileRule("prof", ruleid.Ingress, 0, flowlog.Deny)
		for _, c := range []struct {
			chain string
			r     ruleid.RuleID
		}{{group, allow}, {group, pass}, {profile, deny}} {
			has := strings.Contains(c.chain, `comment "`+c.r.Prefix()+`"`)
			back, ok := ids.Lookup(c.r.Prefix())
			if has != stamp || stamp && (!ok || back != c.r) {
				t.Errorf("stamp %v: %v: comment %v, table %v %v in\n%s", stamp, c.r, has, back, ok, c.chain)
			}
		}
		if n := strings.Count(group, "comment"); stamp && n != 2 || !stamp && n != 0 {
			t.Errorf("stamp %v: %d comments in the group chain (the log rule has none):\n%s", stamp, n, group)
		}
	}
}

package trace

import (
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// pathOf reads the rules that decided a packet from its steps: every policy or profile rule
// that gave a verdict carries its rule identifier as its comment (ruleset.StampRuleIDs); a
// tier's end and "no profile matched" are the endpoint chain's own drops (rules.EndpointDrop).
// It returns the rules met in each policy direction, in order.
func pathOf(res *sim.Result, ids *ruleid.Table) map[ruleid.Direction]ruleid.Path {
	out := map[ruleid.Direction]ruleid.Path{}
	for _, s := range res.Steps() {
		if r, ok := ruleOf(s, ids); ok {
			out[r.Direction] = append(out[r.Direction], r)
		}
	}
	return out
}

func ruleOf(s sim.Step, ids *ruleid.Table) (ruleid.RuleID, bool) {
	if s.Rule < 0 || s.Comment == "" {
		return ruleid.RuleID{}, false
	}
	if r, ok := ids.Lookup(s.Comment); ok {
		return r, true
	}
	egress, isEndpoint := rules.EndpointChainEgress(s.Chain)
	tier, noProfile, isDrop := rules.EndpointDrop(s.Comment)
	if !isEndpoint || !isDrop {
		return ruleid.RuleID{}, false
	}
	dir := ruleid.Ingress
	if egress {
		dir = ruleid.Egress
	}
	var r ruleid.RuleID
	var err error
	if noProfile {
		r, err = ruleid.NoProfileMatch(dir)
	} else {
		r, err = ruleid.EndOfTier(tier, dir, flowlog.Deny)
	}
	return r, err == nil
}

package trace

import (
	"strings"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// pathOf reads the rules that decided a packet from its steps: every policy or profile rule
// that gave a verdict carries its rule identifier as its comment (ruleset.StampRuleIDs); a
// tier's end and "no profile matched" are the endpoint chain's drops, named by their comments.
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

// Comments of the endpoint chains' own drops (package rules, endpoints.go).
const (
	endOfTierPrefix = "End of tier "
	endOfTierSuffix = ". Drop if no policies passed packet"
	noProfileMatch  = "Drop if no profiles matched"
)

func ruleOf(s sim.Step, ids *ruleid.Table) (ruleid.RuleID, bool) {
	if s.Rule < 0 || s.Comment == "" {
		return ruleid.RuleID{}, false
	}
	if r, ok := ids.Lookup(s.Comment); ok {
		return r, true
	}
	dir, ok := chainDirection(s.Chain)
	if !ok {
		return ruleid.RuleID{}, false
	}
	var r ruleid.RuleID
	var err error
	switch {
	case s.Comment == noProfileMatch:
		r, err = ruleid.NoProfileMatch(dir)
	case strings.HasPrefix(s.Comment, endOfTierPrefix) && strings.HasSuffix(s.Comment, endOfTierSuffix):
		tier := strings.TrimSuffix(strings.TrimPrefix(s.Comment, endOfTierPrefix), endOfTierSuffix)
		r, err = ruleid.EndOfTier(tier, dir, flowlog.Deny)
	default:
		return ruleid.RuleID{}, false
	}
	return r, err == nil
}

// endpointChains are the prefixes of the endpoint chains (after the layer) and the policy
// direction each applies: to a workload ingress, from it egress; from a host endpoint ingress,
// to it egress; likewise for applyOnForward chains.
var endpointChains = []struct {
	prefix string
	dir    ruleid.Direction
}{
	{"-cali-tw-", ruleid.Ingress}, {"-cali-fw-", ruleid.Egress},
	{"-cali-thfw-", ruleid.Egress}, {"-cali-fhfw-", ruleid.Ingress},
	{"-cali-th-", ruleid.Egress}, {"-cali-fh-", ruleid.Ingress},
}

func chainDirection(chain string) (ruleid.Direction, bool) {
	for _, c := range endpointChains {
		if strings.Contains(chain, c.prefix) {
			return c.dir, true
		}
	}
	return 0, false
}

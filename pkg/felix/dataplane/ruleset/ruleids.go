package ruleset

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// ruleIDs stamps every verdict rule of a policy or profile with its rule identifier (package
// ruleid's prefix) as its comment and records the identifiers in a table, so that a packet's
// path through the tables (package nft/sim) names the tier, policy, rule and action that
// decided it. Felix leaves it off (nil): the stamps cost kernel memory per rule.
type ruleIDs struct {
	table *ruleid.Table
	log   zerolog.Logger
}

// StampRuleIDs makes every later rendering of a policy or profile rule that gives a verdict
// carry its rule identifier as its comment, recorded in t (call it before the first Build).
// A rule whose identifier cannot be made (a name ruleid refuses) or clashes in t keeps no
// comment, with a log line naming it.
func (b *Builder) StampRuleIDs(t *ruleid.Table) {
	b.groups.ids = &ruleIDs{table: t, log: b.groups.log}
}

// policyKinds maps calc's policy kinds to the kinds rule identifiers name.
var policyKinds = map[string]flowlog.PolicyKind{
	"gnp":  flowlog.KindGlobalNetworkPolicy,
	"np":   flowlog.KindCalicoNetworkPolicy,
	"sgnp": flowlog.KindStagedGlobalNetworkPolicy,
	"snp":  flowlog.KindStagedNetworkPolicy,
	"sknp": flowlog.KindStagedKubernetesNetworkPolicy,
}

var ruleActions = map[string]flowlog.Action{calc.RuleAllow: flowlog.Allow, calc.RuleDeny: flowlog.Deny, calc.RulePass: flowlog.Pass}

// stampPolicy stamps the verdict rules of one direction of policy id.
func (s *ruleIDs) stampPolicy(id calc.PolicyID, egress bool, src []calc.Rule, r *rules.Rendered) {
	p := RulePolicy(id)
	s.stamp(src, r, func(i int, a flowlog.Action) (ruleid.RuleID, error) {
		return ruleid.Rule(p, id.Tier, direction(egress), i, a)
	})
}

// stampProfile stamps the verdict rules of one direction of profile name.
func (s *ruleIDs) stampProfile(name string, egress bool, src []calc.Rule, r *rules.Rendered) {
	s.stamp(src, r, func(i int, a flowlog.Action) (ruleid.RuleID, error) {
		return ruleid.ProfileRule(name, direction(egress), i, a)
	})
}

func (s *ruleIDs) stamp(src []calc.Rule, r *rules.Rendered, id func(int, flowlog.Action) (ruleid.RuleID, error)) {
	failed := map[int]bool{}
	for _, p := range r.Problems {
		failed[p.Index] = true
	}
	for j, i := range r.Origins {
		if i < 0 {
			continue
		}
		a := ruleActions[src[i].Action]
		if failed[i] {
			a = flowlog.Deny
		}
		rid, err := id(src[i].Index, a)
		var prefix string
		if err == nil {
			prefix, err = s.table.Add(rid)
		}
		if err != nil {
			s.log.Warn().Err(err).Int("rule", src[i].Index).Msg("A rule keeps no rule identifier: a trace cannot name it")
			continue
		}
		r.Rules[j] = r.Rules[j].WithComment(prefix)
	}
}

func direction(egress bool) ruleid.Direction {
	if egress {
		return ruleid.Egress
	}
	return ruleid.Ingress
}

// RulePolicy names a policy of calc's model as rule identifiers name it.
func RulePolicy(id calc.PolicyID) ruleid.Policy {
	kind, ok := policyKinds[id.Kind]
	if !ok {
		kind = flowlog.KindGlobalNetworkPolicy
	}
	return ruleid.Policy{Kind: kind, Namespace: id.Namespace, Name: id.Name}
}

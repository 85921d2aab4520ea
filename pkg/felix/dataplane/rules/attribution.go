package rules

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Flow log attribution (docs/flowlogs.md, "Rendering"). With Config.FlowLogs, every verdict
// rule of the filter layer (a policy's or profile's allow, deny and pass, the end-of-tier drop,
// the drop when no profile matched) carries, before its counter, a log statement to NFLOG group
// 1 (ingress policy) or 2 (egress) whose prefix is the rule's ID in felix's format (package
// ruleid): the match is evaluated once and the collector learns which rule decided. Untracked
// and pre-DNAT chains log nothing, as in Project Calico.

// SnapLen is how many bytes of a packet an NFLOG message carries (felix's 80: enough for the
// headers the collector parses).
const SnapLen = 80

// LogTo is the NFLOG statement a verdict rule carries: the prefix of its rule ID and the group
// of its direction. The zero value logs nothing.
type LogTo struct {
	Prefix string
	Group  uint16
}

// LogToFor is where the rule with ID r logs.
func LogToFor(r ruleid.RuleID, prefix string) LogTo {
	return LogTo{Prefix: prefix, Group: r.Direction.Group()}
}

// exprs is the log statement, or nothing.
func (l LogTo) exprs() []nft.Expr {
	if l.Prefix == "" {
		return nil
	}
	return []nft.Expr{nft.LogGroup(l.Prefix, l.Group, SnapLen)}
}

// Direction is the flow log direction of a policy direction.
func Direction(egress bool) ruleid.Direction {
	if egress {
		return ruleid.Egress
	}
	return ruleid.Ingress
}

// verdicts are the calc actions that are verdicts, by flow log action.
var verdicts = map[string]flowlog.Action{calc.RuleAllow: flowlog.Allow, calc.RuleDeny: flowlog.Deny, calc.RulePass: flowlog.Pass}

// PolicyRuleIDs identifies the verdict rules of one direction of a policy: one entry per calc
// rule, the zero RuleID for rules that are no verdict (log) or cannot be named in a prefix
// (their error says why).
func PolicyRuleIDs(id calc.PolicyID, egress bool, rs []calc.Rule) ([]ruleid.RuleID, error) {
	kind, ok := flowlog.KindFromShort(id.Kind)
	if id.Kind == "" {
		kind, ok = flowlog.KindGlobalNetworkPolicy, true
	}
	if !ok {
		return make([]ruleid.RuleID, len(rs)), fmt.Errorf("policy kind %q has no flow log kind", id.Kind)
	}
	p := ruleid.Policy{Kind: kind, Namespace: id.Namespace, Name: id.Name}
	return ruleIDs(rs, func(i int, a flowlog.Action) (ruleid.RuleID, error) {
		return ruleid.Rule(p, id.Tier, Direction(egress), i, a)
	})
}

// ProfileRuleIDs is PolicyRuleIDs for a profile.
func ProfileRuleIDs(name string, egress bool, rs []calc.Rule) ([]ruleid.RuleID, error) {
	return ruleIDs(rs, func(i int, a flowlog.Action) (ruleid.RuleID, error) {
		return ruleid.ProfileRule(name, Direction(egress), i, a)
	})
}

// ruleIDs names each calc rule by its source rule's index (calc.Rule.Index: the v3 rule's
// position, as felix names rules in flow logs; the calc rules a source rule is split into share
// its ID).
func ruleIDs(rs []calc.Rule, id func(int, flowlog.Action) (ruleid.RuleID, error)) ([]ruleid.RuleID, error) {
	out := make([]ruleid.RuleID, len(rs))
	for i := range rs {
		a, ok := verdicts[rs[i].Action]
		if !ok {
			continue
		}
		r, err := id(rs[i].Index, a)
		if err != nil {
			return make([]ruleid.RuleID, len(rs)), err // the name is the policy's: every rule fails
		}
		out[i] = r
	}
	return out, nil
}

// logsVerdicts reports whether the verdict rules of an endpoint chain of spec s log.
func logsVerdicts(cfg *Config, s chainSpec) bool {
	return cfg.FlowLogs && s.layer == Filter && (s.kind == kindNormal || s.kind == kindForward)
}

// endOfTierLog is the log statement of a tier's end-of-tier drop in chain s.
func endOfTierLog(cfg *Config, s chainSpec, tier string) []nft.Expr {
	if !logsVerdicts(cfg, s) {
		return nil
	}
	r, err := ruleid.EndOfTier(tier, Direction(s.egress), flowlog.Deny)
	if err != nil {
		return nil // the tier's name cannot be written into a prefix: the drop is not attributed
	}
	return LogToFor(r, r.Prefix()).exprs()
}

// noProfileLog is the log statement of the drop when no profile matched in chain s.
func noProfileLog(cfg *Config, s chainSpec) []nft.Expr {
	if !logsVerdicts(cfg, s) {
		return nil
	}
	r, _ := ruleid.NoProfileMatch(Direction(s.egress)) // valid for both directions
	return LogToFor(r, r.Prefix()).exprs()
}

// EndpointRuleIDs are the rule IDs the endpoint chains log that no policy or profile owns: the
// drop when no profile matched, in both directions, and the end-of-tier drops of tier (an error
// when its name cannot be written into a prefix).
func EndpointRuleIDs(tier string) ([]ruleid.RuleID, error) {
	var out []ruleid.RuleID
	for _, d := range []ruleid.Direction{ruleid.Ingress, ruleid.Egress} {
		r, err := ruleid.EndOfTier(tier, d, flowlog.Deny)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// NoProfileRuleIDs are the IDs of the drops when no profile matched.
func NoProfileRuleIDs() []ruleid.RuleID {
	in, _ := ruleid.NoProfileMatch(ruleid.Ingress)
	out, _ := ruleid.NoProfileMatch(ruleid.Egress)
	return []ruleid.RuleID{in, out}
}

package rules

import (
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Grouper splits the policies of one tier and direction, in order, into groups: consecutive
// runs, each evaluated by one chain.
type Grouper func(ids []calc.PolicyID) [][]calc.PolicyID

// GroupBySelector groups consecutive policies with the same selector, as Project Calico does
// (such policies apply to exactly the same endpoints, so every endpoint that has one of them has
// the whole run and the group chain is shared). A policy whose selector is unknown is a group of
// its own.
func GroupBySelector(selector func(calc.PolicyID) (string, bool)) Grouper {
	return func(ids []calc.PolicyID) [][]calc.PolicyID {
		var out [][]calc.PolicyID
		prev, prevOK := "", false
		for i, id := range ids {
			sel, ok := selector(id)
			if i > 0 && ok && prevOK && sel == prev {
				out[len(out)-1] = append(out[len(out)-1], id)
			} else {
				out = append(out, []calc.PolicyID{id})
			}
			prev, prevOK = sel, ok
		}
		return out
	}
}

// Singletons is the Grouper that makes every policy a group of its own.
func Singletons(ids []calc.PolicyID) [][]calc.PolicyID {
	out := make([][]calc.PolicyID, len(ids))
	for i, id := range ids {
		out[i] = []calc.PolicyID{id}
	}
	return out
}

// Member is one policy of a group as the group chain evaluates it: inline, its rules (for the
// table's IP version, from PolicyRules) are part of the group chain; out of line, the group
// jumps to the policy's own chain (its group of one).
type Member struct {
	ID     calc.PolicyID
	Inline bool
	Rules  []nft.Rule // when Inline
}

// GroupRules renders the rules of a group chain: each member in order, inline or out of line.
// Inline rules act directly: a deny drops, an allow or pass sets its mark bit and returns from
// the group (so the endpoint chain skips the tier's later groups), a log logs and goes on. An
// out-of-line member is a jump to its chain and, unless it is the last member, a return when
// that chain set the accept or pass bit.
func GroupRules(cfg *Config, l Layer, egress bool, members []Member) []nft.Rule {
	var rs []nft.Rule
	for i, m := range members {
		if m.Inline {
			rs = append(rs, m.Rules...)
			continue
		}
		rs = append(rs, rule(nft.Jump(PolicyChain(l, m.ID, egress))))
		if i < len(members)-1 {
			rs = append(rs, rule(nft.Not(isClear(cfg.Marks.Accept|cfg.Marks.Pass)), nft.Return()))
		}
	}
	return rs
}

// InlineCheaper reports whether a policy of n rules that is a member of g groups of two or
// more policies costs fewer lines inline (n in each group) than out of line (a chain of its
// own, n rules and 3 lines of chain, plus a jump and a return in each group). This bounds the
// duplication of inline rules: a policy never costs more lines than its own chain would.
func InlineCheaper(n, g int) bool { return g <= 1 || n*g <= n+3+2*g }

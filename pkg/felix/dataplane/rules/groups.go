package rules

import (
	"cmp"
	"slices"
	"strconv"

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
// table's IP version, from PolicyRules, with the protocol each needs) are part of the group
// chain; out of line, the group jumps to the policy's own chain (its group of one).
type Member struct {
	ID     calc.PolicyID
	Inline bool
	Rules  []nft.Rule // when Inline
	Protos []uint8    // parallel to Rules: the transport protocol a rule needs (0: any)
}

// GroupChains renders the chains of a group: its chain, called name, and the protocol chains
// it may split into (name + ":" + protocol). The members are evaluated in order, inline or out
// of line. Inline rules act directly: a deny drops, an allow or pass sets its mark bit and
// returns from the group (so the endpoint chain skips the tier's later groups), a log logs and
// goes on. An out-of-line member is a jump to its chain and, unless it is the last member, a
// return when that chain set the accept or pass bit.
//
// A big group in which many rules need one transport protocol (tcp, say) sends the packets of
// that protocol to a chain of its own holding the rules that can match them (the protocol's and
// those of any protocol), and keeps the other rules for the other packets: a packet of another
// protocol does not evaluate the rules it cannot match. See splitProtocols for when. A long run
// of rules that each match one address moves to a chain of its own (name + ":r" + n, see
// skipRuns), which a packet enters only when its address is one of the run's.
func GroupChains(cfg *Config, l Layer, egress bool, name string, members []Member) []*nft.Chain {
	var rs []nft.Rule
	var protos []uint8
	for i, m := range members {
		if m.Inline {
			rs, protos = append(rs, m.Rules...), append(protos, m.Protos...)
			continue
		}
		rs, protos = append(rs, rule(nft.Jump(PolicyChain(l, m.ID, egress)))), append(protos, 0)
		if i < len(members)-1 {
			rs = append(rs, rule(nft.Not(isClear(cfg.Marks.Accept|cfg.Marks.Pass)), nft.Return()))
			protos = append(protos, 0)
		}
	}
	main := &nft.Chain{Name: name}
	out := []*nft.Chain{main}
	split := splitProtocols(protos)
	for _, p := range split {
		sub := &nft.Chain{Name: protoChain(name, p), Rules: rulesFor(rs, protos, func(q uint8) bool { return q == 0 || q == p })}
		main.Rules = append(main.Rules, rule(nft.L4Proto(p), nft.Goto(sub.Name)))
		out = append(out, sub)
	}
	if len(split) == 0 {
		main.Rules = rs
	} else {
		main.Rules = append(main.Rules, rulesFor(rs, protos, func(q uint8) bool { return !slices.Contains(split, q) })...)
	}
	for _, c := range out {
		out = append(out, skipRuns(c)...)
	}
	return out
}

// protoChain is the name of a group's chain for protocol p (':' is in no policy name).
func protoChain(group string, p uint8) string { return limitName(group + ":" + strconv.Itoa(int(p))) }

// rulesFor keeps the rules whose protocol passes keep.
func rulesFor(rs []nft.Rule, protos []uint8, keep func(uint8) bool) []nft.Rule {
	var out []nft.Rule
	for i, r := range rs {
		if keep(protos[i]) {
			out = append(out, r)
		}
	}
	return out
}

// Splitting a group by protocol: only groups of at least splitMinRules rules, for each
// protocol that at least a quarter of the rules need (the other packets then skip at least a
// quarter of the group), as long as the rules copied into the protocol chains (the rules of any
// protocol) add up to no more than the group's own rules: a split group has at most twice as
// many rules as the group.
const splitMinRules = 32

// splitProtocols chooses the protocols a group with rules of these protocols splits by (most
// rules first).
func splitProtocols(protos []uint8) []uint8 {
	if len(protos) < splitMinRules {
		return nil
	}
	count := map[uint8]int{}
	for _, p := range protos {
		count[p]++
	}
	var cands []uint8
	for p, n := range count {
		if p != 0 && 4*n >= len(protos) {
			cands = append(cands, p)
		}
	}
	slices.SortFunc(cands, func(a, b uint8) int { return cmp.Or(count[b]-count[a], int(a)-int(b)) })
	var out []uint8
	for copied := 0; len(cands) > 0 && copied+count[0] <= len(protos); cands = cands[1:] {
		out, copied = append(out, cands[0]), copied+count[0]
	}
	return out
}

// InlineCheaper reports whether a policy of n rules that is a member of g groups of two or
// more policies costs fewer lines inline (n in each group) than out of line (a chain of its
// own, n rules and 3 lines of chain, plus a jump and a return in each group). This bounds the
// duplication of inline rules: a policy never costs more lines than its own chain would.
func InlineCheaper(n, g int) bool { return g <= 1 || n*g <= n+3+2*g }

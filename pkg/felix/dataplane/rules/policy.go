package rules

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Problem is a policy rule that cannot be enforced: calc could not interpret it, or it cannot
// be expressed in nftables. It is never left out (a deny, pass or log rule left out would let
// through what it stops): the chain drops every packet that reaches the rule's position, and
// the caller logs the problem with the policy's name.
type Problem struct {
	Index  int // position in the calc rule list
	RuleID string
	Reason string
}

// Rendered is one direction of a policy or profile rendered for the table of one IP version:
// its rules, the transport protocol each of them needs (0: any; see GroupChains), which calc
// rule's verdict each of them is (Origins), the calc IP sets they look up and the rules that
// cannot be enforced.
type Rendered struct {
	Rules  []nft.Rule
	Protos []uint8
	// Origins, parallel to Rules: the index of the calc rule whose action the rule carries, or
	// -1 for a rule that gives no verdict (an OR block's scratch-mark rules, a log rule).
	Origins  []int
	Sets     []SetUse
	Problems []Problem
}

// SetUse is a calc IP set a rule looks up, and whether as a named-port set (its key is address
// . protocol . port): a stand-in for a set calc did not send must have the type of the lookup.
type SetUse struct {
	ID        string
	NamedPort bool
}

// PolicyRules renders one direction of a policy or profile for the table of version v, in
// layer l. Each calc rule becomes the rules it needs in that table (none when it cannot match
// there), preceded by the scratch-mark rules of any OR block. Allow and pass set their mark bit
// and return; deny drops (or rejects); log logs and continues. A rule that cannot be enforced
// becomes a drop of what reaches it (see Problem).
func PolicyRules(cfg *Config, v nft.IPVersion, l Layer, rs []calc.Rule) Rendered {
	var out Rendered
	for i := range rs {
		r := &rs[i]
		rules, pre, sets, err := renderRule(cfg, v, l, r)
		proto := r.Protocol
		if err != nil {
			out.Problems = append(out.Problems, Problem{Index: i, RuleID: r.RuleID, Reason: err.Error()})
			rules, pre, sets, proto = failClosed(v, r), 0, nil, 0 // drops every packet that reaches it
		}
		out.Rules = append(out.Rules, rules...)
		for range rules {
			out.Protos = append(out.Protos, proto)
		}
		out.Origins = append(out.Origins, origins(r, i, len(rules), pre)...)
		for _, u := range sets {
			if !slices.Contains(out.Sets, u) {
				out.Sets = append(out.Sets, u)
			}
		}
	}
	return out
}

// origins are the Origins entries of the n rules that calc rule i (r) became, the first pre
// of them an OR block's scratch-mark rules: the others carry its verdict, unless it is a log
// rule. A rule that cannot be enforced is its single drop.
func origins(r *calc.Rule, i, n, pre int) []int {
	out := make([]int, n)
	for j := range out {
		out[j] = i
		if j < pre || r.Action == calc.RuleLog {
			out[j] = -1
		}
	}
	return out
}

// renderRule renders r for the table of version v, the first pre rules an OR block's
// scratch-mark rules; an error means r cannot be enforced.
func renderRule(cfg *Config, v nft.IPVersion, l Layer, r *calc.Rule) (rules []nft.Rule, pre int, sets []SetUse, err error) {
	if !ofVersion(r, v) {
		return nil, 0, nil, nil
	}
	if r.Invalid != "" {
		return nil, 0, nil, fmt.Errorf("calc could not interpret the rule: %s", r.Invalid)
	}
	action, err := actionExprs(cfg, l, r.Action)
	if err != nil {
		return nil, 0, nil, err
	}
	m := &matcher{cfg: cfg, r: r, fam: v}
	preRules, matches, err := m.build()
	switch {
	case errors.Is(err, errNoMatch):
		return nil, 0, nil, nil
	case err != nil:
		return nil, 0, nil, err
	}
	rules = preRules
	for _, ms := range matches {
		rules = append(rules, rule(append(ms, action...)...))
	}
	return rules, len(preRules), m.sets, nil
}

// failClosed is what stands for a rule that cannot be enforced: a drop of every packet that
// reaches it, in the tables of the rule's IP version (both when it has none).
func failClosed(v nft.IPVersion, r *calc.Rule) []nft.Rule {
	if !ofVersion(r, v) {
		return nil
	}
	c := "Rule cannot be enforced: fail closed"
	if safeRuleID.MatchString(r.RuleID) {
		c = "Rule " + r.RuleID + " cannot be enforced: fail closed"
	}
	return []nft.Rule{rule(nft.Counter(), nft.Drop()).WithComment(c)}
}

// ofVersion reports whether r may match packets of version v (it has no version, or v).
func ofVersion(r *calc.Rule, v nft.IPVersion) bool {
	return r.IPVersion == 0 || r.IPVersion == int(v)
}

// safeRuleID is what a rule ID must look like to go into a comment (calc's IDs are base64url).
var safeRuleID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// actionExprs is what a matching rule does.
func actionExprs(cfg *Config, l Layer, action string) ([]nft.Expr, error) {
	switch action {
	case calc.RuleAllow:
		return []nft.Expr{nft.Counter(), setBits(cfg.Marks.Accept), nft.Return()}, nil
	case calc.RulePass:
		return []nft.Expr{nft.Counter(), setBits(cfg.Marks.Pass), nft.Return()}, nil
	case calc.RuleDeny:
		return []nft.Expr{nft.Counter(), cfg.deny(l)}, nil
	case calc.RuleLog:
		return []nft.Expr{nft.LogAt(cfg.LogPrefix+": ", nft.LogInfo)}, nil
	}
	return nil, fmt.Errorf("unknown action %q", action)
}

package rules

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// Problem is a policy rule that cannot be enforced: calc could not interpret it, or it cannot
// be expressed in nftables. It is never left out (a deny, pass or log rule left out would let
// through what it stops): the chain drops every packet that reaches the rule's position, and
// the caller logs the problem with the policy's name.
type Problem struct {
	Chain  string
	Index  int // position in the calc rule list
	RuleID string
	Reason string
}

// RuleChain is a rendered policy or profile chain and the calc IP set IDs its rules look up.
type RuleChain struct {
	Chain    *nft.Chain
	SetIDs   []string
	Problems []Problem
}

// PolicyRules renders one direction of a policy or profile as the chain name in layer l. Each
// calc rule becomes one nft rule per family it needs (IPv4 and IPv6 variants share nothing but
// the action), preceded by the scratch-mark rules of any OR block. Allow and pass set their
// mark bit and return; deny drops (or rejects); log logs and continues. A rule that cannot be
// enforced becomes a drop of what reaches it (see Problem).
func PolicyRules(cfg *Config, l Layer, name string, rs []calc.Rule) RuleChain {
	out := RuleChain{Chain: &nft.Chain{Name: name}}
	for i := range rs {
		r := &rs[i]
		rules, sets, err := renderRule(cfg, l, r)
		if err != nil {
			out.Problems = append(out.Problems, Problem{Chain: name, Index: i, RuleID: r.RuleID, Reason: err.Error()})
			rules, sets = failClosed(cfg, r), nil
		}
		out.Chain.Rules = append(out.Chain.Rules, rules...)
		for _, id := range sets {
			if !slices.Contains(out.SetIDs, id) {
				out.SetIDs = append(out.SetIDs, id)
			}
		}
	}
	return out
}

// renderRule renders every family variant of r; an error means r cannot be enforced.
func renderRule(cfg *Config, l Layer, r *calc.Rule) ([]nft.Rule, []string, error) {
	if r.Invalid != "" {
		return nil, nil, fmt.Errorf("calc could not interpret the rule: %s", r.Invalid)
	}
	action, err := actionExprs(cfg, l, r.Action)
	if err != nil {
		return nil, nil, err
	}
	var rules []nft.Rule
	var sets []string
	for _, fam := range ruleFamilies(cfg, r) {
		m := &matcher{cfg: cfg, r: r, fam: fam}
		pre, matches, err := m.build()
		if errors.Is(err, errNoMatch) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		rules = append(rules, pre...)
		for _, ms := range matches {
			rules = append(rules, rule(append(ms, action...)...))
		}
		sets = append(sets, m.sets...)
	}
	return rules, sets, nil
}

// failClosed is what stands for a rule that cannot be enforced: a drop of every packet of the
// rule's IP version (both when it has none) that reaches it.
func failClosed(cfg *Config, r *calc.Rule) []nft.Rule {
	var x []nft.Expr
	switch {
	case r.IPVersion == 4:
		x = append(x, nft.NFProto(nft.IPv4))
	case r.IPVersion == 6 && !cfg.IPv6:
		return nil // IPv6 is not policed at all
	case r.IPVersion == 6:
		x = append(x, nft.NFProto(nft.IPv6))
	}
	x = append(x, nft.Counter(), nft.Drop())
	c := "Rule cannot be enforced: fail closed"
	if safeRuleID.MatchString(r.RuleID) {
		c = "Rule " + r.RuleID + " cannot be enforced: fail closed"
	}
	return []nft.Rule{rule(x...).WithComment(c)}
}

// safeRuleID is what a rule ID must look like to go into a comment (calc's IDs are base64url).
var safeRuleID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ruleFamilies lists the variants a rule needs: family 0 (one rule for both) when nothing in
// it depends on the family, otherwise one per configured family it may match.
func ruleFamilies(cfg *Config, r *calc.Rule) []nft.Family {
	switch {
	case r.IPVersion == 4:
		return []nft.Family{nft.IPv4}
	case r.IPVersion == 6 && cfg.IPv6:
		return []nft.Family{nft.IPv6}
	case r.IPVersion == 6:
		return nil
	case familySpecific(r):
		return cfg.Families()
	}
	return []nft.Family{0}
}

// familySpecific reports whether a rule has a match that exists per family.
func familySpecific(r *calc.Rule) bool {
	n := len(r.SrcNets) + len(r.NotSrcNets) + len(r.DstNets) + len(r.NotDstNets) +
		len(r.SrcIPSetIDs) + len(r.NotSrcIPSetIDs) + len(r.DstIPSetIDs) + len(r.NotDstIPSetIDs) +
		len(r.SrcNamedPortIPSetIDs) + len(r.NotSrcNamedPortIPSetIDs) +
		len(r.DstNamedPortIPSetIDs) + len(r.NotDstNamedPortIPSetIDs)
	return n > 0 || r.ICMP != nil || r.NotICMP != nil
}

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
		return []nft.Expr{nft.Log(cfg.LogPrefix + ": ")}, nil
	}
	return nil, fmt.Errorf("unknown action %q", action)
}

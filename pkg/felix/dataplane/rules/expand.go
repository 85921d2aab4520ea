package rules

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// choice is one match of a rule. A positive list (nets, ports) has two forms: one match for
// the whole list (an anonymous set in the kernel) or, when short, one alternative per element,
// which expand turns into one rule per combination. Alternatives are disjoint, so a packet
// matches at most one rule of an expansion and a log rule logs it once. Short lists are
// expanded because the kernel's cost of binding anonymous sets grows with the size of the
// transaction (__nft_set_trans_bind walks the whole commit list). A choice without a whole form
// (a disjunction no single expression states) is always expanded; an alternative may be
// several matches.
type choice struct {
	whole nft.Expr
	alts  [][]nft.Expr
}

// one is the alternative list of single matches.
func one(x ...nft.Expr) [][]nft.Expr {
	out := make([][]nft.Expr, len(x))
	for i, e := range x {
		out[i] = []nft.Expr{e}
	}
	return out
}

// maxExpansion bounds the rules one calc rule may expand into; longer lists keep their set.
const maxExpansion = 4

// expand returns the match lists of every combination of alternatives, after collapsing the
// longest collapsible lists back to their whole form until there are at most maxExpansion
// combinations (or nothing is left to collapse).
func expand(cs []choice) [][]nft.Expr {
	for combinations(cs) > maxExpansion {
		i := -1
		for j := range cs {
			if cs[j].whole != nil && len(cs[j].alts) > 0 && (i < 0 || len(cs[j].alts) > len(cs[i].alts)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		cs[i].alts = nil
	}
	out := [][]nft.Expr{nil}
	for _, c := range cs {
		alts := c.alts
		if len(alts) == 0 {
			alts = [][]nft.Expr{{c.whole}}
		}
		next := make([][]nft.Expr, 0, len(out)*len(alts))
		for _, prefix := range out {
			for _, a := range alts {
				next = append(next, append(slices.Clip(prefix), a...))
			}
		}
		out = next
	}
	return out
}

func combinations(cs []choice) int {
	n := 1
	for _, c := range cs {
		n *= max(1, len(c.alts))
	}
	return n
}

// disjointPorts sorts ranges and merges overlapping and adjacent ones.
func disjointPorts(ports []calc.PortRange) []nft.PortRange {
	rs := make([]nft.PortRange, len(ports))
	for i, p := range ports {
		rs[i] = nft.Ports(min(p.First, p.Last), max(p.First, p.Last))
	}
	slices.SortFunc(rs, func(a, b nft.PortRange) int { return cmp.Compare(a.First, b.First) })
	var out []nft.PortRange
	for _, r := range rs {
		if n := len(out); n > 0 && int(r.First) <= int(out[n-1].Last)+1 {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// disjointNets sorts prefixes and drops those inside another.
func disjointNets(nets []netip.Prefix) []netip.Prefix {
	ps := make([]netip.Prefix, len(nets))
	for i, n := range nets {
		ps[i] = n.Masked()
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	var out []netip.Prefix
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Contains(p.Addr()) && out[n-1].Bits() <= p.Bits() {
			continue
		}
		out = append(out, p)
	}
	return out
}

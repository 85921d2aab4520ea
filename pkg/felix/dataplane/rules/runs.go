package rules

import (
	"slices"
	"strconv"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Address runs. Many policies deny or allow lists of single addresses or CIDRs: rule after rule
// that matches one address of one field and nothing else and leaves the chain (nft.Rule's
// AddressOnly). A run of at least runMinRules of them in a group chain moves to a chain of its
// own, entered by one lookup of the run's addresses: a packet whose address is none of them
// skips the whole run in one lookup instead of comparing it rule by rule; one whose address is
// among them walks the run's rules as before and leaves at the first that matches, with that
// rule's counter, log and verdict. The run's chain is entered by goto, so that its return
// returns where the group's own would (to the endpoint chain, or the group that jumped to an
// out-of-line policy), and a drop or accept is the same drop or accept.
const runMinRules = 16

// skipRuns moves the address runs of chain c to chains of their own (c's name + ":r" + their
// index), replacing each in c by the lookup that enters it; it returns the run chains.
func skipRuns(c *nft.Chain) []*nft.Chain {
	var runs []*nft.Chain
	var rs []nft.Rule
	for i := 0; i < len(c.Rules); {
		f, elems := addressRun(c.Rules[i:])
		if len(elems) < runMinRules {
			rs = append(rs, c.Rules[i])
			i++
			continue
		}
		run := &nft.Chain{Name: runChain(c.Name, len(runs)), Rules: slices.Clip(c.Rules[i : i+len(elems)])}
		rs = append(rs, rule(nft.InList([]nft.Field{f}, elems...), nft.Goto(run.Name)))
		runs = append(runs, run)
		i += len(elems)
	}
	if len(runs) > 0 {
		c.Rules = rs
	}
	return runs
}

// addressRun is the field and the addresses of the address-only rules at the start of rs that
// match the same field (none when the first rule is not one).
func addressRun(rs []nft.Rule) (nft.Field, []nft.Element) {
	var field nft.Field
	var elems []nft.Element
	for i, r := range rs {
		f, e, ok := r.AddressOnly()
		if !ok || i > 0 && f != field {
			break
		}
		field, elems = f, append(elems, e)
	}
	return field, elems
}

// runChain is the name of the n-th address run chain of chain c.
func runChain(c string, n int) string { return limitName(c + ":r" + strconv.Itoa(n)) }

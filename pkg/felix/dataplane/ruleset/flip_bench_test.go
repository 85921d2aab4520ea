package ruleset

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// BenchmarkSetFlip: a build in which one IP set of a 1,000-policy group (each policy an allow
// from its own set, all empty but one) gains its first member or loses its last one: the group
// chain is rendered again and applied to the fake. Compare BenchmarkSetMemberAdded (a set that
// had members gains one: an element added).
func BenchmarkSetFlip(b *testing.B)        { benchSetChange(b, true) }
func BenchmarkSetMemberAdded(b *testing.B) { benchSetChange(b, false) }

func benchSetChange(b *testing.B, flip bool) {
	h := newHarness(b, false)
	var ids []calc.PolicyID
	for i := range 1000 {
		id := gnpID(fmt.Sprint("p", i))
		set := fmt.Sprint("s:", i)
		h.ipset(set)
		h.policy(id, "all()", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, SrcIPSetIDs: []string{set}}}, nil)
		ids = append(ids, id)
	}
	h.ipset("s:0", "10.65.0.1/32")
	h.endpoint("w", workload("cali11111111111", []calc.TierInfo{ingress("default", ids...)}))
	h.build()
	id := "s:1"
	if !flip {
		id = "s:0"
	}
	m := []calc.IPSetMember{{Prefix: netip.MustParsePrefix("10.65.0.9/32")}}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			h.in.IPSets[id].Change(m, nil)
		} else {
			h.in.IPSets[id].Change(nil, m)
		}
		h.build()
	}
}

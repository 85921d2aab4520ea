package nft

import (
	"strings"
	"testing"
)

// TestPriorityNamesMatchNft: nft names dstnat only on prerouting and srcnat only on
// postrouting; elsewhere it prints the number (and refuses the name in `nft -f`).
func TestPriorityNamesMatchNft(t *testing.T) {
	chains := map[string]*BaseChain{
		"pre":  {Type: TypeNAT, Hook: HookPrerouting, Priority: PriorityDstNAT},
		"out":  {Type: TypeNAT, Hook: HookOutput, Priority: PriorityDstNAT},
		"in":   {Type: TypeNAT, Hook: HookInput, Priority: PrioritySrcNAT},
		"post": {Type: TypeNAT, Hook: HookPostrouting, Priority: PrioritySrcNAT + 10},
	}
	want := map[string]string{
		"pre":  "type nat hook prerouting priority dstnat; policy accept;",
		"out":  "type nat hook output priority -100; policy accept;",
		"in":   "type nat hook input priority 100; policy accept;",
		"post": "type nat hook postrouting priority srcnat + 10; policy accept;",
	}
	for name, b := range chains {
		if got := b.String(); got != want[name] {
			t.Errorf("%s: %q, want %q", name, got, want[name])
		}
	}
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	rs := NewRuleset()
	for name, b := range chains {
		rs.AddChain(&Chain{Name: name, Base: b})
	}
	ns.apply(t, a, rs)
	tab := ns.listTable(t)
	for name := range chains {
		if got := tab.chains[name].header; !strings.HasPrefix(got, want[name]) {
			t.Errorf("nft lists %s as %q, want %q", name, got, want[name])
		}
	}
}

package wireguard

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// TestRuleOwnership: felix's rule is recognised by priority and table, or by priority and its
// WireGuard mark match (a rule left pointing at the previous table after RouteTableRanges moved
// it), and only the rule with the current table and match is kept.
func TestRuleOwnership(t *testing.T) {
	f := Family{Table: 300, RulePriority: 99, Mark: 0x200000}
	want := f.rule()
	rule := func(table int, mark uint32, invert bool) netlink.Rule {
		r := *netlink.NewRule()
		mask := uint32(0x200000)
		r.Priority, r.Table, r.Mark, r.Mask, r.Invert = 99, table, mark, &mask, invert
		return r
	}
	other := rule(100, 0x10, false)
	for _, tc := range []struct {
		name       string
		r          netlink.Rule
		ours, same bool
	}{
		{"current", rule(300, 0x200000, true), true, true},
		{"previous table", rule(1, 0x200000, true), true, false},
		{"our table, other match", rule(300, 0x10, false), true, false},
		{"another program's rule at the same priority", other, false, false},
	} {
		if got := isOurs(tc.r, want); got != tc.ours {
			t.Errorf("%s: ours = %v, want %v", tc.name, got, tc.ours)
		}
		if got := sameRule(tc.r, want); got != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.same)
		}
	}
}

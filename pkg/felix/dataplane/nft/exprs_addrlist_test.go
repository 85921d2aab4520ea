package nft

import (
	"net/netip"
	"strings"
	"testing"
)

func TestAddrListText(t *testing.T) {
	pfx := netip.MustParsePrefix
	for _, tc := range []struct {
		m    Match
		want string
	}{
		{SAddrIn(IPv4, pfx("10.65.0.0/16"), pfx("198.18.0.1/32")), `ip saddr { 10.65.0.0/16, 198.18.0.1 }`},
		{SAddrIn(IPv4, pfx("198.18.0.1/32"), pfx("10.65.0.0/16"), pfx("10.65.1.0/24")), `ip saddr { 10.65.0.0/16, 198.18.0.1 }`},
		{Not(DAddrIn(IPv4, pfx("10.65.0.0/17"), pfx("10.65.128.0/17"))), `ip daddr != 10.65.0.0/16`},
		{DAddrIn(IPv6, pfx("fd5c::/16"), pfx("fd5d::1/128")), `ip6 daddr { fd5c::/16, fd5d::1 }`},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		rs := NewRuleset()
		rs.AddChain(&Chain{Name: "c", Rules: []Rule{NewRule(tc.m, Drop())}})
		if err := rs.Validate(); err != nil {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
}

func TestAddrListInvalid(t *testing.T) {
	pfx := netip.MustParsePrefix
	for name, m := range map[string]Match{
		"empty":        SAddrIn(IPv4),
		"wrong family": SAddrIn(IPv4, pfx("fd5c::/16")),
		"mixed":        DAddrIn(IPv6, pfx("fd5c::/16"), pfx("10.0.0.0/8")),
	} {
		rs := NewRuleset()
		rs.AddChain(&Chain{Name: "c", Rules: []Rule{NewRule(m, Drop())}})
		if err := rs.Validate(); err == nil {
			t.Errorf("%s: validation accepted %s", name, m)
		}
	}
}

// TestKernelAddrList loads address lists into a namespace and checks nft's
// own listing of them.
func TestKernelAddrList(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	pfx := netip.MustParsePrefix
	rs := NewRuleset()
	rs.AddChain(&Chain{Name: "filter-FORWARD", Base: &BaseChain{Type: TypeFilter, Hook: HookForward}, Rules: []Rule{
		NewRule(SAddrIn(IPv4, pfx("10.65.0.0/16"), pfx("198.18.0.1/32")), Drop()),
		NewRule(Not(DAddrIn(IPv6, pfx("fd5c::/16"), pfx("fd5d::1/128"))), Accept()),
	}})
	ns.apply(t, a, rs)
	got := ns.listTable(t).chains["filter-FORWARD"].rules
	want := []string{`ip saddr { 10.65.0.0/16, 198.18.0.1 } drop`, `ip6 daddr != { fd5c::/16, fd5d::1 } accept`}
	for i, w := range want {
		if i >= len(got) || !strings.HasPrefix(got[i], w) {
			t.Errorf("rule %d: got %q, want prefix %q", i, got, w)
		}
	}
}

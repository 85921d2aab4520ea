package nft_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nfttest"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// raiseLowered lowers a rule, marshals its instructions to netlink and
// back, and raises them, resolving anonymous sets as the kernel names
// them.
func raiseLowered(t *testing.T, f nft.Family, r nft.Rule) []nft.Expr {
	t.Helper()
	lw, err := nft.LowerRule(f, r)
	if err != nil {
		t.Fatalf("lower %s: %v", r, err)
	}
	var b nla.Builder
	for i, x := range lw.Exprs {
		if lk, ok := x.(vm.Lookup); ok && lk.Set == "" {
			lk.Set = fmt.Sprintf("__set%d", lk.SetID-1)
			lw.Exprs[i] = lk
		}
	}
	vm.Marshal(&b, lw.Exprs)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	back, err := vm.Unmarshal(b.Buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, lw.Exprs) {
		t.Fatalf("%s: netlink round trip changed the instructions:\n%s\nwant\n%s", r, vm.Dump(back), vm.Dump(lw.Exprs))
	}
	exprs, err := nft.RaiseRule(f, back, func(name string) (nft.AnonSet, bool) {
		var i int
		if _, err := fmt.Sscanf(name, "__set%d", &i); err != nil || i >= len(lw.Anon) {
			return nft.AnonSet{}, false
		}
		return lw.Anon[i], true
	})
	if err != nil {
		t.Fatalf("raise %s: %v\n%s", r, err, vm.Dump(back))
	}
	return exprs
}

// TestRoundTripGolden: every rule of the golden ruleset (every expression
// in every family) survives lowering, netlink encoding, decoding and
// raising: it comes back as itself, except the explicit protocol matches
// that a later match implies, which fold into it as they do in nft.
func TestRoundTripGolden(t *testing.T) {
	folded := map[string]string{
		"meta l4proto tcp ip daddr 10.96.0.1 tcp dport 443 dnat to 10.65.0.1:6443": "ip daddr 10.96.0.1 tcp dport 443 dnat to 10.65.0.1:6443",
		"meta nfproto ipv6 ip6 saddr fd5c::/16 accept":                             "ip6 saddr fd5c::/16 accept",
	}
	n := 0
	for _, tb := range nfttest.Golden() {
		for _, name := range tb.ChainNames() {
			for _, r := range tb.Chain(name).Rules {
				got := nft.Rule{Exprs: raiseLowered(t, tb.Family, r), Comment: r.Comment}
				text := r.Text(tb.Family)
				want := text
				if f, ok := folded[text]; ok {
					want = f
				}
				if got.Text(tb.Family) != want {
					t.Errorf("%s %s: %q came back as %q", tb.ID(), name, text, got.Text(tb.Family))
				}
				if _, ok := folded[text]; !ok && !got.Equal(r) {
					t.Errorf("%s %s: %q came back as a different value", tb.ID(), name, text)
				}
				n++
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d rules checked", n)
	}
}

// TestCanonicalIdempotent: the canonical form of a rule is its own
// canonical form, so comparing canonical forms never flaps.
func TestCanonicalIdempotent(t *testing.T) {
	for _, tb := range nfttest.Golden() {
		for _, name := range tb.ChainNames() {
			for _, r := range tb.Chain(name).Rules {
				c, err := nft.Canonical(tb.Family, r)
				if err != nil {
					t.Fatal(err)
				}
				c2, err := nft.Canonical(tb.Family, c)
				if err != nil || !c2.Equal(c) {
					t.Errorf("%s: canonical %q is not stable: %q (%v)", r, c, c2, err)
				}
			}
		}
	}
}

var (
	p = netip.MustParsePrefix
	a = netip.MustParseAddr
)

// TestLowerRefuses: rules the kernel could not express, or that would not
// mean what they say, fail to lower (and so fail validation).
func TestLowerRefuses(t *testing.T) {
	for _, tc := range []struct {
		fam  nft.Family
		rule nft.Rule
		want string
	}{
		{nft.FamilyInet, nft.NewRule(nft.SAddr(p("10.0.0.0/8")), nft.DAddr(p("fd5c::/16"))), "conflicting IP versions"},
		{nft.FamilyIP, nft.NewRule(nft.SAddr(p("fd5c::/16"))), "cannot be used in a table of family ip"},
		{nft.FamilyIP6, nft.NewRule(nft.ICMPType(nft.IPv4, 8)), "cannot be used in a table of family ip6"},
		{nft.FamilyIP, nft.NewRule(nft.L4Proto(nft.ProtoUDP), nft.DPort(nft.ProtoTCP, nft.Port(80))), "conflicting protocols"},
		{nft.FamilyIP, nft.NewRule(nft.ARPOp(nft.ARPRequest)), "cannot be used in a table of family ip"},
		{nft.FamilyARP, nft.NewRule(nft.SAddr(p("10.0.0.0/8"))), "cannot be used in a table of family arp"},
		{nft.FamilyARP, nft.NewRule(nft.Reject()), "reject cannot be used"},
		{nft.FamilyIP, nft.NewRule(nft.SAddr(p("0.0.0.0/0"))), "matches every"},
		{nft.FamilyIP, nft.NewRule(nft.IIFName("a/b")), "invalid interface name"},
		{nft.FamilyIP, nft.NewRule(nft.IIFName("0123456789abcdef")), "invalid interface name"},
		{nft.FamilyIP, nft.NewRule(nft.DPort(nft.ProtoICMP, nft.Port(1))), "invalid field"},
		{nft.FamilyIP, nft.NewRule(nft.DPort(nft.ProtoTCP)), "empty list"},
		{nft.FamilyIP, nft.NewRule(nft.CTStateIn(0)), "invalid conntrack states"},
		{nft.FamilyIP, nft.NewRule(nft.MasqueradeToPorts(nft.Ports(10, 1), false)), "invalid masquerade port range"},
		{nft.FamilyIP, nft.NewRule(nft.SNAT(a("fd5c::1"))), "cannot be used in a table of family ip"},
		{nft.FamilyIP, nft.NewRule(nft.Jump("")), "chain"},
		{nft.FamilyIP, nft.NewRule(nft.FibNoRoute(nft.FibMark)), "needs saddr or daddr"},
		{nft.FamilyIP, nft.NewRule(nft.InSet("s")), "needs 1 to 5 fields"},
		{nft.FamilyIP, nft.Rule{}, "without expressions"},
	} {
		_, err := nft.LowerRule(tc.fam, tc.rule)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: got %v, want an error containing %q", tc.fam, tc.rule, err, tc.want)
		}
	}
}

// TestConstructorsCanonical: constructors normalise their arguments, so
// equal meanings are equal values (and lists of one element are plain
// comparisons).
func TestConstructorsCanonical(t *testing.T) {
	for _, tc := range []struct {
		a, b nft.Expr
	}{
		{nft.DPort(nft.ProtoTCP, nft.Port(443), nft.Port(80)), nft.DPort(nft.ProtoTCP, nft.Port(80), nft.Port(443), nft.Port(80))},
		{nft.DPort(nft.ProtoTCP, nft.Ports(80, 81), nft.Port(82)), nft.DPort(nft.ProtoTCP, nft.Ports(80, 82))},
		{nft.SAddrIn(p("10.0.0.0/9"), p("10.128.0.0/9")), nft.SAddr(p("10.0.0.0/8"))},
		{nft.SAddrIn(p("10.0.0.1/32")), nft.SAddr(nft.Host(a("10.0.0.1")))},
		{nft.SAddr(p("10.1.2.3/8")), nft.SAddr(p("10.0.0.0/8"))},
		{nft.MarkMasked(0xffffffff, 5), nft.Mark(5)},
		{nft.SetMarkBits(0, 7), nft.SetMark(7)},
		{nft.Not(nft.Not(nft.L4Proto(6))), nft.L4Proto(6)},
		{nft.Log("a\"b\n"), nft.Log("a_b_")},
		{nft.LogGroup("a\"b", 1, 80), nft.LogGroup("a_b", 1, 80)},
	} {
		if tc.a != tc.b {
			t.Errorf("%s != %s", tc.a, tc.b)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		fam  nft.Family
		x    nft.Expr
		want string
	}{
		{nft.FamilyIP, nft.SNAT(a("198.18.0.1")), "snat to 198.18.0.1"},
		{nft.FamilyInet, nft.SNAT(a("198.18.0.1")), "snat ip to 198.18.0.1"},
		{nft.FamilyInet, nft.SNATToPorts(a("fd5c::1"), nft.Ports(1, 2)), "snat ip6 to [fd5c::1]:1-2"},
		{nft.FamilyIP, nft.MasqueradeToPorts(nft.Ports(1024, 2048), true), "masquerade to :1024-2048 fully-random"},
		{nft.FamilyIP, nft.Not(nft.CTStatusIn(nft.CTStatusDNAT)), "ct status ! dnat"},
		{nft.FamilyIP, nft.Not(nft.FibNoRoute(nft.FibSAddr | nft.FibIIF)), "fib saddr . iif oif != 0"},
		{nft.FamilyIP, nft.Jump("x"), "jump x"},
		{nft.FamilyIP, nft.L4Proto(99), "meta l4proto 99"},
		{nft.FamilyIP, nft.LogGroup("API0|gnp/web", 1, 80), `log prefix "API0|gnp/web" group 1 snaplen 80`},
		{nft.FamilyIP, nft.LogGroup("", 2, 0), "log group 2"},
	} {
		if got := nft.NewRule(tc.x).Text(tc.fam); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

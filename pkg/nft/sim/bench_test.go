package sim_test

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nfttest"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// bigSet is an interval set of n /32s and /24s, none adjacent.
func bigSet(n int) *nft.Set {
	s := &nft.Set{Name: "big", Type: nft.TypeIPv4Addr, Interval: true, Elements: make([]nft.Element, 0, n)}
	for i := range n {
		v := uint32(10<<24 + i*512)
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if i%2 == 0 {
			s.Elements = append(s.Elements, nft.AddrElem(a))
		} else {
			s.Elements = append(s.Elements, nft.PrefixElem(netip.PrefixFrom(a, 24)))
		}
	}
	return s
}

func bigSetRuleset(t testing.TB, n int) *sim.Ruleset {
	in := &nft.Chain{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
		rule(nft.SAddrInSet(nft.IPv4, "big"), nft.Accept()),
	}}
	return compile(t, newTable(t, nft.FamilyIP, []*nft.Chain{in}, bigSet(n)))
}

// A million-element interval set: lookups hit the ranges and the gaps
// between them.
func TestMillionElementSet(t *testing.T) {
	if testing.Short() {
		t.Skip("large set")
	}
	rs := bigSetRuleset(t, 1_000_000)
	for _, c := range []struct {
		src  string
		fate sim.Fate
	}{
		{"10.0.0.0", sim.FateDelivered},      // element 0, a /32
		{"10.0.0.1", sim.FateDropped},        // just after it
		{"10.0.2.77", sim.FateDelivered},     // element 1, a /24
		{"10.0.3.0", sim.FateDropped},        // the gap after it
		{"40.132.124.0", sim.FateDelivered},  // element 999,998, a /32
		{"40.132.126.77", sim.FateDelivered}, // element 999,999, a /24
		{"40.132.127.0", sim.FateDropped},    // past the last
	} {
		if res := run(t, rs, tcp(t, c.src, "198.18.0.1", 1, 2), &eth0); res.Fate != c.fate {
			t.Errorf("%s: %s, want %s", c.src, res.Fate, c.fate)
		}
	}
}

// BenchmarkCompileFelixScale compiles a felix-scale table (2,000 chains of
// 10 rules, 1,000 sets of 10 to 1,000 elements, a 1,000-key map): what a
// trace pays once.
func BenchmarkCompileFelixScale(b *testing.B) {
	tb := nfttest.Felix(nfttest.FelixScale)
	for b.Loop() {
		if _, err := sim.Compile(tb); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunMillionElementSet runs one packet through a lookup in a
// million-element interval set.
func BenchmarkRunMillionElementSet(b *testing.B) {
	rs := bigSetRuleset(b, 1_000_000)
	pk := tcp(b, "40.132.126.77", "198.18.0.1", 1, 2)
	in := sim.Input{Packet: pk, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()}
	for b.Loop() {
		if _, err := rs.Run(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunFelixScale runs one packet through the felix-scale table's
// forward chain and a policy chain reached through its verdict map.
func BenchmarkRunFelixScale(b *testing.B) {
	rs, err := sim.Compile(nfttest.Felix(nfttest.FelixScale))
	if err != nil {
		b.Fatal(err)
	}
	cali := sim.Iface{Name: "cali00000000007", Index: 10}
	pk := tcp(b, "10.65.0.9", "10.65.0.3", 1, 80)
	in := sim.Input{Packet: pk, IIF: &cali, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()}
	for b.Loop() {
		if _, err := rs.Run(in); err != nil {
			b.Fatal(err)
		}
	}
}

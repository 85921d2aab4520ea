package rules

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// TestAddressRunsKeepVerdicts: a group whose policies deny and allow runs of single addresses
// and CIDRs (with duplicates, overlaps, a rule that breaks the run, an out-of-line member and
// a protocol split) gives every probe the verdict, the matching rule (its comment), counter
// and mark that the same rules walked one by one give, while its runs moved to run chains.
func TestAddressRunsKeepVerdicts(t *testing.T) {
	cfg := testConfig(false)
	var members []Member
	for i := range 70 {
		r := calc.Rule{Action: calc.RuleDeny, SrcNets: []netip.Prefix{prefix(203, 0, 113, byte(i%25), 32)}}
		switch {
		case i%7 == 3:
			r.Action = calc.RuleAllow
		case i == 20:
			r.SrcNets = []netip.Prefix{prefix(198, 51, 100, 0, 24)}
		case i == 21:
			r.SrcNets = []netip.Prefix{prefix(198, 51, 100, 128, 25)} // inside i == 20's
		case i == 50:
			r = calc.Rule{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(5201)} // breaks a run
		}
		m := member(cfg, fmt.Sprint("p", i), r)
		if i == 30 { // another field breaks a run
			m = member(cfg, fmt.Sprint("p", i), r, calc.Rule{Action: calc.RulePass, DstNets: []netip.Prefix{prefix(192, 0, 2, 30, 32)}})
		}
		members = append(members, m)
	}
	members = append(members, Member{ID: pid("out")}, member(cfg, "last", calc.Rule{Action: calc.RuleAllow, Protocol: 17}))
	var walked []nft.Rule
	for i := range members {
		for j := range members[i].Rules {
			members[i].Rules[j].Comment = fmt.Sprintf("m%d/r%d", i, j)
		}
		if members[i].Inline {
			walked = append(walked, members[i].Rules...)
		} else {
			walked = append(walked, rule(nft.Jump(PolicyChain(Filter, members[i].ID, false))))
		}
	}
	grouped := GroupChains(cfg, Filter, false, "g", members)
	if len(grouped) != 4 {
		t.Fatalf("no address run chains: %d chains", len(grouped))
	}
	one := []*nft.Chain{{Name: "g", Rules: walked}}
	a, b := runsTable(t, cfg, nft.FamilyIP, grouped), runsTable(t, cfg, nft.FamilyIP, one)
	for _, src := range []string{"203.0.113.0", "203.0.113.3", "203.0.113.24", "203.0.113.25", "198.51.100.7",
		"198.51.100.200", "10.65.0.1"} {
		for _, dst := range []string{"192.0.2.5", "192.0.2.30", "10.65.0.2"} {
			for _, proto := range []uint8{nft.ProtoTCP, nft.ProtoUDP} {
				got, want := probe(t, a, src, dst, proto), probe(t, b, src, dst, proto)
				if got != want {
					t.Errorf("%s -> %s proto %d: with runs %s, rule by rule %s", src, dst, proto, got, want)
				}
			}
		}
	}
}

func prefix(a, b, c, d byte, bits int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{a, b, c, d}), bits)
}

// runsTable is a table of family fam whose input chain jumps to group chain g (and accepts
// when it set the accept bit), with the out-of-line member's chain allowing TCP port 22.
func runsTable(t *testing.T, cfg *Config, fam nft.Family, group []*nft.Chain) *sim.Ruleset {
	t.Helper()
	tb := nft.NewTable(fam, "t")
	in := &nft.Chain{Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput, Policy: nft.PolicyAccept},
		Rules: []nft.Rule{
			rule(nft.Jump("g")),
			rule(nft.Not(isClear(cfg.Marks.Accept)), nft.Counter(), nft.Accept()).WithComment("allowed"),
			rule(nft.Not(isClear(cfg.Marks.Pass)), nft.Counter(), nft.Accept()).WithComment("passed"),
			rule(nft.Counter(), nft.Drop()).WithComment("end of tier"),
		}}
	out := &nft.Chain{Name: PolicyChain(Filter, pid("out"), false), Rules: []nft.Rule{
		rule(nft.DPort(nft.ProtoTCP, nft.Port(22)), nft.Counter(), setBits(cfg.Marks.Accept), nft.Return()).WithComment("out"),
	}}
	for _, c := range append([]*nft.Chain{in, out}, group...) {
		if err := tb.PutChain(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Validate(); err != nil {
		t.Fatal(err)
	}
	rs, err := sim.Compile(tb)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// probe is what became of a new connection's first packet: its fate, mark, the comments of the
// rules that matched and the counters it bumped.
func probe(t *testing.T, rs *sim.Ruleset, src, dst string, proto uint8) string {
	t.Helper()
	lo := sim.Iface{Name: "lo", Index: 1, Type: unix.ARPHRD_LOOPBACK}
	eth0 := sim.Iface{Name: "eth0", Index: 2, Type: unix.ARPHRD_ETHER}
	fib := &sim.StaticFIB{Loopback: lo, Addrs: []sim.IfaceAddr{{Iface: eth0, Prefix: netip.MustParsePrefix(dst + "/32")}}}
	pk, err := sim.IPPacket(sim.IPSpec{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Proto: proto, SPort: 1000, DPort: 22})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rs.Run(sim.Input{Packet: pk, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: fib})
	if err != nil {
		t.Fatal(err)
	}
	var matched []string
	for _, s := range res.Steps() {
		if s.Comment != "" {
			matched = append(matched, fmt.Sprintf("%s(%d)", s.Comment, s.Counters))
		}
	}
	return fmt.Sprintf("%s mark %#x [%s] counters %d", res.Fate, res.Mark, strings.Join(matched, " "), len(res.Counters))
}

// TestAddressRunsKeepVerdictsIPv6: the same in the ip6 table: /128 addresses and overlapping
// prefixes (a /64 and a /100 inside it, a duplicate) of one field in a run, denies, allows and
// passes, the rules walked one by one in the simulator as the reference.
func TestAddressRunsKeepVerdictsIPv6(t *testing.T) {
	cfg := testConfig(true)
	var members []Member
	for i := range 24 {
		r := calc.Rule{Action: calc.RuleDeny, SrcNets: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("2001:db8::%x/128", i%20))}}
		switch {
		case i%5 == 2:
			r.Action = calc.RuleAllow
		case i == 9:
			r.Action, r.SrcNets = calc.RulePass, []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/64")}
		case i == 10:
			r.SrcNets = []netip.Prefix{netip.MustParsePrefix("2001:db8:1::8000:0/100")} // inside i == 9's
		}
		rendered := PolicyRules(cfg, nft.IPv6, Filter, []calc.Rule{r})
		members = append(members, Member{ID: pid(fmt.Sprint("p", i)), Inline: true, Rules: rendered.Rules, Protos: rendered.Protos})
	}
	var walked []nft.Rule
	for i := range members {
		for j := range members[i].Rules {
			members[i].Rules[j].Comment = fmt.Sprintf("m%d/r%d", i, j)
		}
		walked = append(walked, members[i].Rules...)
	}
	grouped := GroupChains(cfg, Filter, false, "g", members)
	if len(grouped) != 2 {
		t.Fatalf("want the group and one address run chain, got %d chains", len(grouped))
	}
	a, b := runsTable(t, cfg, nft.FamilyIP6, grouped), runsTable(t, cfg, nft.FamilyIP6, []*nft.Chain{{Name: "g", Rules: walked}})
	outcomes := map[string]bool{}
	for _, src := range []string{"2001:db8::", "2001:db8::2", "2001:db8::7", "2001:db8::13", "2001:db8::14",
		"2001:db8:1::1", "2001:db8:1::8000:1", "2001:db8:1::ffff:ffff", "fd5c::1"} {
		for _, proto := range []uint8{nft.ProtoTCP, nft.ProtoUDP} {
			got, want := probe(t, a, src, "fd5c::2", proto), probe(t, b, src, "fd5c::2", proto)
			if got != want {
				t.Errorf("%s proto %d: with runs %s, rule by rule %s", src, proto, got, want)
			}
			outcomes[strings.Fields(want)[0]+strings.Fields(want)[2]] = true
		}
	}
	if len(outcomes) < 3 { // denied, allowed, passed (and not in the run: end of tier)
		t.Errorf("the probes reach too few verdicts to compare: %v", outcomes)
	}
}

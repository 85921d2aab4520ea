package rules

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

func pid(name string) calc.PolicyID { return calc.PolicyID{Tier: "default", Kind: "gnp", Name: name} }

// TestGroupBySelector: runs of consecutive policies with the same known selector; a policy
// with an unknown selector is alone.
func TestGroupBySelector(t *testing.T) {
	sels := map[string]string{"a": "s1", "b": "s1", "c": "s2", "f": "s1"}
	g := GroupBySelector(func(id calc.PolicyID) (string, bool) {
		s, ok := sels[id.Name]
		return s, ok
	})
	got := g([]calc.PolicyID{pid("a"), pid("b"), pid("c"), pid("d"), pid("e"), pid("f")})
	want := [][]calc.PolicyID{{pid("a"), pid("b")}, {pid("c")}, {pid("d")}, {pid("e")}, {pid("f")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// member is an inline member with the rules of calc rules rs.
func member(cfg *Config, name string, rs ...calc.Rule) Member {
	r := PolicyRules(cfg, nft.IPv4, Filter, rs)
	return Member{ID: pid(name), Inline: true, Rules: r.Rules, Protos: r.Protos}
}

// TestGroupRules: inline members' rules follow each other; an out-of-line member is a jump to
// its own chain and, unless it is last, a return once it set the accept or pass bit.
func TestGroupRules(t *testing.T) {
	cfg := testConfig(false)
	chains := GroupChains(cfg, Filter, false, "g", []Member{
		member(cfg, "a", calc.Rule{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81)}),
		{ID: pid("x")},
		member(cfg, "b", calc.Rule{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(80)}),
		{ID: pid("y")},
	})
	if len(chains) != 1 || chains[0].Name != "g" {
		t.Fatalf("%d chains", len(chains))
	}
	got := ruleTexts(nft.IPv4, chains[0].Rules)
	want := []string{
		"tcp dport 81 counter drop",
		"jump filter-cali-pi-gnp/x",
		"meta mark & 0x00030000 != 0x00000000 return",
		"tcp dport 80 counter meta mark set meta mark | 0x00010000 return",
		"jump filter-cali-pi-gnp/y",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func ports(p ...uint16) []calc.PortRange {
	out := make([]calc.PortRange, len(p))
	for i, x := range p {
		out[i] = calc.PortRange{First: x, Last: x}
	}
	return out
}

// TestGroupSplitByProtocol: a big group where many rules need UDP sends UDP packets to a chain
// of its own (the UDP rules and those of any protocol, in order); other packets evaluate the
// rest. A group of few rules, or whose protocol rules are few, stays whole.
func TestGroupSplitByProtocol(t *testing.T) {
	cfg := testConfig(false)
	var members []Member
	for i := range 20 {
		members = append(members, member(cfg, fmt.Sprint("p", i),
			calc.Rule{Action: calc.RuleDeny, DstNets: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 32)}},
			calc.Rule{Action: calc.RuleAllow, Protocol: 17, DstIPSetIDs: []string{fmt.Sprint("s:", i)}}))
	}
	members = append(members, member(cfg, "last", calc.Rule{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(5201)}))
	chains := GroupChains(cfg, Filter, true, "g", members)
	if len(chains) != 3 || chains[1].Name != "g:17" || chains[2].Name != "g:r0" {
		t.Fatalf("chains %v", chains)
	}
	main, udp := ruleTexts(nft.IPv4, chains[0].Rules), ruleTexts(nft.IPv4, chains[1].Rules)
	if len(main) != 3 || main[0] != "meta l4proto udp goto g:17" || !strings.HasSuffix(main[1], " goto g:r0") ||
		main[2] != "tcp dport 5201 counter meta mark set meta mark | 0x00010000 return" {
		t.Errorf("main chain (its 20 denies are an address run): %q", main)
	}
	if run := ruleTexts(nft.IPv4, chains[2].Rules); len(run) != 20 || run[0] != "ip daddr 203.0.113.0 counter drop" {
		t.Errorf("address run: %q", run)
	}
	if len(udp) != 40 || udp[0] != "ip daddr 203.0.113.0 counter drop" ||
		udp[1] != "meta l4proto udp ip daddr @cali40s-0 counter meta mark set meta mark | 0x00010000 return" ||
		udp[39] != "meta l4proto udp ip daddr @cali40s-19 counter meta mark set meta mark | 0x00010000 return" {
		t.Errorf("udp chain: %q", udp)
	}
	if got := GroupChains(cfg, Filter, true, "g", members[:15]); len(got) != 1 {
		t.Errorf("a group of 30 rules split into %d chains", len(got))
	}
	var tcpHeavy []Member
	for i := range 40 {
		tcpHeavy = append(tcpHeavy, member(cfg, fmt.Sprint("t", i), calc.Rule{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(uint16(1000 + i))}))
	}
	if got := GroupChains(cfg, Filter, true, "g", append(tcpHeavy, members[0])); len(got) != 2 || len(got[0].Rules) != 3 {
		t.Errorf("a group of tcp rules: chains %v", got)
	}
}

// TestInlineCheaper: a policy is inline while its copies cost no more lines than a chain of its
// own plus a jump and a return per group.
func TestInlineCheaper(t *testing.T) {
	for _, tc := range []struct {
		rules, groups int
		want          bool
	}{
		{100, 0, true}, {100, 1, true}, {2, 50, true}, {7, 2, true}, {8, 2, false}, {4, 3, true}, {5, 3, false},
	} {
		if got := InlineCheaper(tc.rules, tc.groups); got != tc.want {
			t.Errorf("InlineCheaper(%d, %d) = %t", tc.rules, tc.groups, got)
		}
	}
}

// TestTierBlocks: a tier jumps to its first group unconditionally and to the others while
// neither the accept nor the pass bit is set; a later tier clears the pass bit first; a Pass
// tier has no drop of its own; doNotTrack chains notrack what a tier accepted.
func TestTierBlocks(t *testing.T) {
	cfg := testConfig(false)
	sels := map[string]string{"a": "s", "b": "s", "c": "t", "d": "u"}
	g := GroupBySelector(func(id calc.PolicyID) (string, bool) { s, ok := sels[id.Name]; return s, ok })
	tiers := []calc.TierInfo{
		{Name: "one", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{pid("a"), pid("b"), pid("c")}},
		{Name: "two", DefaultAction: "Pass", IngressPolicies: []calc.PolicyID{pid("d")}},
	}
	ab := GroupChain(Filter, false, []calc.PolicyID{pid("a"), pid("b")})
	c, refs := endpointChain(cfg, chainSpec{name: "x", layer: Filter, tiers: tiers, group: g})
	want := []string{
		"ct state established,related accept",
		"ct state invalid drop",
		"meta mark set meta mark & 0xfffcffff",
		`jump ` + ab + ` comment "Start of tier one"`,
		"meta mark & 0x00030000 == 0x00000000 jump filter-cali-pi-gnp/c",
		"meta mark & 0x00010000 == 0x00010000 return",
		`meta mark & 0x00020000 == 0x00000000 counter drop comment "End of tier one. Drop if no policies passed packet"`,
		`meta mark set meta mark & 0xfffdffff comment "Start of tier two"`,
		"jump filter-cali-pi-gnp/d",
		"meta mark & 0x00010000 == 0x00010000 return",
		`counter drop comment "Drop if no profiles matched"`,
	}
	if diff := cmp.Diff(want, ruleTexts(nft.IPv4, c.Rules)); diff != "" {
		t.Errorf("normal chain (-want +got):\n%s", diff)
	}
	if len(refs) != 3 || refs[0].Chain() != ab {
		t.Errorf("refs %+v", refs)
	}
	c, _ = endpointChain(cfg, chainSpec{name: "x", layer: Raw, kind: kindUntracked, tiers: tiers[:1], group: g})
	if got := ruleTexts(nft.IPv4, c.Rules); got[len(got)-1] != "meta mark & 0x00010000 == 0x00010000 notrack return" {
		t.Errorf("untracked chain: %q", got)
	}
}

// TestWorkloadChainsNamedByContent: two endpoints with the same tiers, groups and profiles get
// the same chains; any difference (a profile, a policy, a tier's default action, the grouping)
// gives another name; the chains to and from a workload never share a name.
func TestWorkloadChainsNamedByContent(t *testing.T) {
	cfg := testConfig(false)
	ep := func(iface string, defaultAction string, profiles []string, pols ...calc.PolicyID) *calc.WorkloadEndpoint {
		return &calc.WorkloadEndpoint{Name: iface, ProfileIDs: profiles,
			Tiers: []calc.TierInfo{{Name: "default", DefaultAction: defaultAction, IngressPolicies: pols, EgressPolicies: pols}}}
	}
	same := func(calc.PolicyID) (string, bool) { return "s", true }
	base := WorkloadEndpoint(cfg, ep("cali1", "Deny", []string{"p"}, pid("a"), pid("b")), GroupBySelector(same))
	if base[0].Chain.Name == base[1].Chain.Name {
		t.Errorf("to and from share %s", base[0].Chain.Name)
	}
	twin := WorkloadEndpoint(cfg, ep("cali2", "Deny", []string{"p"}, pid("a"), pid("b")), GroupBySelector(same))
	if twin[0].Chain.Name != base[0].Chain.Name || twin[1].Chain.Name != base[1].Chain.Name {
		t.Errorf("same content, other names: %s %s", twin[0].Chain.Name, twin[1].Chain.Name)
	}
	for name, other := range map[string]Workload{
		"profile":        WorkloadEndpoint(cfg, ep("cali1", "Deny", []string{"q"}, pid("a"), pid("b")), GroupBySelector(same)),
		"policy":         WorkloadEndpoint(cfg, ep("cali1", "Deny", []string{"p"}, pid("a"), pid("c")), GroupBySelector(same)),
		"default action": WorkloadEndpoint(cfg, ep("cali1", "Pass", []string{"p"}, pid("a"), pid("b")), GroupBySelector(same)),
		"grouping":       WorkloadEndpoint(cfg, ep("cali1", "Deny", []string{"p"}, pid("a"), pid("b")), Singletons),
	} {
		if other[0].Chain.Name == base[0].Chain.Name || other[1].Chain.Name == base[1].Chain.Name {
			t.Errorf("another %s, the same names", name)
		}
	}
}

package rules

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

func testConfig(ipv6 bool) *Config {
	marks, _ := MarksFromMask(0xffff0000)
	return &Config{IPv6: ipv6, WorkloadPrefixes: []string{"cali"}, Marks: marks, LogPrefix: "calico-packet", VXLANPort: 4789, DropInvalid: true}
}

func TestMarksFromMask(t *testing.T) {
	for _, tc := range []struct {
		mask uint32
		want Marks
		ok   bool
	}{
		{0xffff0000, Marks{Accept: 0x10000, Pass: 0x20000, Scratch0: 0x80000, Scratch1: 0x100000}, true},
		{0x00000078, Marks{}, false},
		{0x0f0f0000, Marks{Accept: 0x10000, Pass: 0x20000, Scratch0: 0x80000, Scratch1: 0x1000000}, true},
	} {
		got, err := MarksFromMask(tc.mask)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%#x: got %+v, %v; want %+v (ok %v)", tc.mask, got, err, tc.want, tc.ok)
		}
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct{ got, want string }{
		{SetName(nft.IPv4, "s:AbC-d_e"), "cali40s-AbC-d_e"},
		{SetName(nft.IPv6, "n:xyz"), "cali60n-xyz"},
		{PolicyChain(Filter, calc.PolicyID{Tier: "default", Kind: "gnp", Name: "default.allow-web"}, false), "filter-cali-pi-gnp/allow-web"},
		{PolicyChain(Raw, calc.PolicyID{Tier: "sec", Kind: "np", Namespace: "ns1", Name: "sec.p"}, true), "raw-cali-po-np/ns1/sec.p"},
		{ProfileChain(Mangle, "kns.default", true), "mangle-cali-pro-kns.default"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	a, b := Filter.Name("cali-pi-gnp/"+long+"a"), Filter.Name("cali-pi-gnp/"+long+"b")
	if len(a) != maxName || a == b || !strings.HasPrefix(a, "filter-cali-pi-gnp/xxx") {
		t.Errorf("long names: %d chars, distinct %v", len(a), a != b)
	}
}

// TestPolicyRules checks the nft text each kind of calc rule renders to.
func TestPolicyRules(t *testing.T) {
	pfx := netip.MustParsePrefix
	code := uint8(0)
	for _, tc := range []struct {
		name string
		ipv6 bool
		rule calc.Rule
		want []string
	}{
		{"allow any", false, calc.Rule{Action: calc.RuleAllow},
			[]string{"counter meta mark set meta mark | 0x00010000 return"}},
		{"deny tcp port list", false, calc.Rule{Action: calc.RuleDeny, Protocol: 6, DstPorts: []calc.PortRange{{First: 443, Last: 443}, {First: 80, Last: 80}}},
			[]string{"meta l4proto tcp tcp dport 80 counter drop", "meta l4proto tcp tcp dport 443 counter drop"}},
		{"long port list stays a set", false, calc.Rule{Action: calc.RuleDeny, Protocol: 17, DstPorts: []calc.PortRange{{First: 1, Last: 1}, {First: 3, Last: 3}, {First: 5, Last: 5}, {First: 7, Last: 7}, {First: 9, Last: 9}}},
			[]string{"meta l4proto udp udp dport { 1, 3, 5, 7, 9 } counter drop"}},
		{"overlapping ports merge", false, calc.Rule{Action: calc.RuleLog, Protocol: 6, DstPorts: []calc.PortRange{{First: 80, Last: 90}, {First: 85, Last: 100}}},
			[]string{`meta l4proto tcp tcp dport 80-100 log prefix "calico-packet: " level info`}},
		{"nets per family", true, calc.Rule{Action: calc.RulePass, SrcNets: []netip.Prefix{pfx("10.65.0.0/16"), pfx("10.65.1.0/24"), pfx("fd5c::/16")}},
			[]string{"ip saddr 10.65.0.0/16 counter meta mark set meta mark | 0x00020000 return", "ip6 saddr fd5c::/16 counter meta mark set meta mark | 0x00020000 return"}},
		// A negated net list leaves the rule out of a family it has no net of, and out of a
		// family whose whole space it negates (Project Calico's FilterRuleToIPVersion).
		{"negated nets of one family", true, calc.Rule{Action: calc.RuleAllow, NotDstNets: []netip.Prefix{pfx("fd5c:1:1::15/128")}},
			[]string{"ip6 daddr != fd5c:1:1::15 counter meta mark set meta mark | 0x00010000 return"}},
		{"negated catch-all net", true, calc.Rule{Action: calc.RuleDeny, NotSrcNets: []netip.Prefix{pfx("0.0.0.0/0"), pfx("fd5c::/16")}},
			[]string{"ip6 saddr != fd5c::/16 counter drop"}},
		{"v6 rule without IPv6", false, calc.Rule{Action: calc.RuleAllow, IPVersion: 6}, nil},
		{"family only", true, calc.Rule{Action: calc.RuleAllow, IPVersion: 4, Protocol: 17},
			[]string{"meta nfproto ipv4 meta l4proto udp counter meta mark set meta mark | 0x00010000 return"}},
		{"icmp type and code", true, calc.Rule{Action: calc.RuleAllow, Protocol: 1, ICMP: &calc.ICMPMatch{Type: 8, Code: &code}},
			[]string{"meta l4proto icmp icmp type echo-request icmp code net-unreachable counter meta mark set meta mark | 0x00010000 return"}},
		// notICMP {type, code} is "not (that type and that code)", for ICMP packets of the
		// variant's family only: two disjoint rules.
		{"deny not icmp type and code", true, calc.Rule{Action: calc.RuleDeny, Protocol: 1, IPVersion: 4, NotICMP: &calc.ICMPMatch{Type: 8, Code: &code}},
			[]string{"meta l4proto icmp icmp type != echo-request counter drop",
				"meta l4proto icmp icmp type echo-request icmp code != net-unreachable counter drop"}},
		{"not icmp type and code without protocol", true, calc.Rule{Action: calc.RulePass, NotICMP: &calc.ICMPMatch{Type: 128, Code: &code}},
			[]string{"meta l4proto icmp icmp type != 128 counter meta mark set meta mark | 0x00020000 return",
				"meta l4proto icmp icmp type 128 icmp code != net-unreachable counter meta mark set meta mark | 0x00020000 return",
				"meta l4proto ipv6-icmp icmpv6 type != echo-request counter meta mark set meta mark | 0x00020000 return",
				"meta l4proto ipv6-icmp icmpv6 type echo-request icmpv6 code != no-route counter meta mark set meta mark | 0x00020000 return"}},
		{"not icmp code with other expansions", false, calc.Rule{Action: calc.RuleLog, NotICMP: &calc.ICMPMatch{Type: 8, Code: &code},
			SrcNets: []netip.Prefix{pfx("10.65.1.0/24"), pfx("10.65.3.0/24"), pfx("10.65.5.0/24")}},
			[]string{`ip saddr { 10.65.1.0/24, 10.65.3.0/24, 10.65.5.0/24 } meta l4proto icmp icmp type != echo-request log prefix "calico-packet: " level info`,
				`ip saddr { 10.65.1.0/24, 10.65.3.0/24, 10.65.5.0/24 } meta l4proto icmp icmp type echo-request icmp code != net-unreachable log prefix "calico-packet: " level info`}},
		{"sets and negations", false, calc.Rule{Action: calc.RuleDeny, SrcIPSetIDs: []string{"s:a"}, NotDstIPSetIDs: []string{"s:b"}, NotProtocol: 6},
			[]string{"meta l4proto != tcp ip saddr @cali40s-a ip daddr != @cali40s-b counter drop"}},
		{"two named ports", false, calc.Rule{Action: calc.RuleAllow, DstNamedPortIPSetIDs: []string{"n:a", "n:b"}}, []string{
			"meta mark set meta mark & 0xffefffff",
			"ip daddr . meta l4proto . th dport @cali40n-a meta mark set meta mark | 0x00100000",
			"ip daddr . meta l4proto . th dport @cali40n-b meta mark set meta mark | 0x00100000",
			"meta mark & 0x00100000 == 0x00100000 counter meta mark set meta mark | 0x00010000 return",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := PolicyRules(testConfig(tc.ipv6), Filter, "c", []calc.Rule{tc.rule})
			var got []string
			for _, r := range rc.Chain.Rules {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || len(rc.Problems) > 0 {
				t.Errorf("(-want +got):\n%s\nproblems: %v", diff, rc.Problems)
			}
		})
	}
}

// TestPolicyRulesFailClosed: a rule that cannot be enforced is never left out; the chain drops
// what reaches it, in the rule's IP version, and the problem is reported.
func TestPolicyRulesFailClosed(t *testing.T) {
	rc := PolicyRules(testConfig(true), Filter, "c", []calc.Rule{
		{Action: "teleport", RuleID: "r1"},
		{Action: calc.RuleDeny, DstPorts: []calc.PortRange{{First: 80, Last: 80}}},
		{Action: calc.RuleDeny, Protocol: 6, ICMP: &calc.ICMPMatch{Type: 8}, IPVersion: 4},
		{Action: calc.RulePass, IPVersion: 6, Invalid: "bad CIDR", RuleID: "bad id; drop table"},
		{Action: calc.RuleAllow},
	})
	want := []string{
		`counter drop comment "Rule r1 cannot be enforced: fail closed"`,
		`counter drop comment "Rule cannot be enforced: fail closed"`,
		`meta nfproto ipv4 counter drop comment "Rule cannot be enforced: fail closed"`,
		`meta nfproto ipv6 counter drop comment "Rule cannot be enforced: fail closed"`,
		"counter meta mark set meta mark | 0x00010000 return",
	}
	var got []string
	for _, r := range rc.Chain.Rules {
		got = append(got, r.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(rc.Problems) != 4 || rc.Problems[3].Index != 3 || !strings.Contains(rc.Problems[3].Reason, "bad CIDR") {
		t.Errorf("problems %+v", rc.Problems)
	}
	// Without IPv6, an IPv6 rule that cannot be enforced drops nothing: IPv6 is not policed.
	rc = PolicyRules(testConfig(false), Filter, "c", []calc.Rule{{Action: calc.RuleDeny, IPVersion: 6, Invalid: "x"}})
	if len(rc.Chain.Rules) != 0 {
		t.Errorf("IPv6 disabled: rules %v", rc.Chain.Rules)
	}
}

func TestElement(t *testing.T) {
	for _, tc := range []struct {
		f    nft.Family
		typ  calc.IPSetType
		m    calc.IPSetMember
		want string
		ok   bool
	}{
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.5/32")}, "10.65.0.5", true},
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.1.7/24")}, "10.65.1.0/24", true},
		{nft.IPv6, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.5/32")}, "", false},
		{nft.IPv6, calc.IPSetNamedPort, calc.IPSetMember{Prefix: netip.MustParsePrefix("fd5c::5/128"), Protocol: 6, Port: 80}, "fd5c::5 . 6 . 80", true},
		{nft.IPv4, calc.IPSetNamedPort, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.0/24"), Protocol: 6, Port: 80}, "", false},
	} {
		got, ok := Element(tc.f, tc.typ, tc.m)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %q %v, want %q %v", tc.m, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRenderedRulesetIsValid renders every kind of object and validates the result as the nft
// Applier would.
func TestRenderedRulesetIsValid(t *testing.T) {
	cfg := testConfig(true)
	cfg.OpenStack, cfg.MetadataAddr, cfg.MetadataPort = true, netip.MustParseAddr("127.0.0.1"), 8775
	cfg.FailsafeIn = []ProtoPort{{Protocol: 6, Port: 22}}
	rs := nft.NewRuleset()
	pol := calc.PolicyID{Tier: "default", Kind: "gnp", Name: "p"}
	ep := WorkloadEndpoint(cfg, &calc.WorkloadEndpoint{Name: "cali1", Tiers: []calc.TierInfo{{Name: "default", IngressPolicies: []calc.PolicyID{pol}}}, ProfileIDs: []string{"prof"}})
	hep, maps, hd := HostEndpoints(cfg, []HostIface{{Iface: "eth0", EP: &calc.HostEndpoint{Name: "h", UntrackedTiers: []calc.TierInfo{{Name: "default", IngressPolicies: []calc.PolicyID{pol}}}}}})
	for _, e := range []Endpoint{ep, hep} {
		for _, c := range e.Chains {
			rs.AddChain(c)
		}
		for _, r := range e.Refs {
			rs.AddChain(PolicyRules(cfg, r.Layer, r.Chain(), []calc.Rule{{Action: calc.RuleAllow}}).Chain)
		}
	}
	for _, m := range maps {
		rs.AddMap(m)
	}
	from, to := WorkloadDispatch([]string{"cali1"})
	rs.AddMap(from)
	rs.AddMap(to)
	st := &Static{Hosts: hd, MasqFamilies: []nft.Family{nft.IPv4}, FloatingIPs: []FloatingIP{{Ext: netip.MustParseAddr("198.18.1.1"), Int: netip.MustParseAddr("10.65.0.1")}},
		VXLAN: []VXLANDevice{{Name: "vxlan.calico", Family: nft.IPv4}}}
	for _, c := range StaticChains(cfg, st) {
		rs.AddChain(c)
	}
	for _, id := range []string{SetAllPools, SetMasqPools, SetAllVXLAN} {
		rs.AddSet(NetSet(nft.IPv4, id, nil))
	}
	if err := rs.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestAvoidPort(t *testing.T) {
	for _, tc := range []struct {
		r    nft.PortRange
		port uint16
		want nft.PortRange
	}{
		{nft.Ports(1024, 65535), 4789, nft.Ports(4790, 65535)},
		{nft.Ports(32768, 60999), 4789, nft.Ports(32768, 60999)},
		{nft.Ports(4780, 4800), 4789, nft.Ports(4790, 4800)},
		{nft.Ports(4700, 4795), 4789, nft.Ports(4700, 4788)},
		{nft.Ports(4789, 5000), 4789, nft.Ports(4790, 5000)},
		{nft.Ports(1024, 4789), 4789, nft.Ports(1024, 4788)},
		{nft.Port(4789), 4789, nft.Port(4789)},
	} {
		if got := avoidPort(tc.r, tc.port); got != tc.want {
			t.Errorf("avoidPort(%s, %d) = %s, want %s", tc.r, tc.port, got, tc.want)
		}
	}
}

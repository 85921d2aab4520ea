package rules

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
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
		{GroupChain(Filter, true, []calc.PolicyID{{Tier: "default", Kind: "gnp", Name: "a"}}), "filter-cali-po-gnp/a"},
		{GroupChain(Raw, false, []calc.PolicyID{{Tier: "t", Kind: "gnp", Name: "t.a"}, {Tier: "t", Kind: "gnp", Name: "t.b"}})[:16], "raw-cali-gi-" + GroupChain(Raw, false, []calc.PolicyID{{Tier: "t", Kind: "gnp", Name: "t.a"}, {Tier: "t", Kind: "gnp", Name: "t.b"}})[12:16]},
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
	// Names nft cannot hold (profile names from the datastore) become valid, distinct names;
	// before, the dataplane panicked putting the chain (a crash loop from one object).
	seen := map[string]string{}
	for _, profile := range []string{"a+b", "a@b", "ksa.ns.sa@x", "näme", "a b", "a_b"} {
		got := ProfileChain(Filter, profile, false)
		if !nft.ValidName(got) {
			t.Errorf("profile %q: chain name %q is not a valid nft name", profile, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("profiles %q and %q share the chain %q", other, profile, got)
		}
		seen[got] = profile
	}
}

// TestPolicyRules checks the rules each kind of calc rule renders to in the ip table (v4) and
// the ip6 table (v6).
func TestPolicyRules(t *testing.T) {
	pfx := netip.MustParsePrefix
	code := uint8(0)
	for _, tc := range []struct {
		name   string
		rule   calc.Rule
		v4, v6 []string
	}{
		{"allow any", calc.Rule{Action: calc.RuleAllow},
			[]string{"counter meta mark set meta mark | 0x00010000 return"},
			[]string{"counter meta mark set meta mark | 0x00010000 return"}},
		{"deny tcp port list", calc.Rule{Action: calc.RuleDeny, Protocol: 6, DstPorts: []calc.PortRange{{First: 443, Last: 443}, {First: 80, Last: 80}}},
			[]string{"tcp dport 80 counter drop", "tcp dport 443 counter drop"},
			[]string{"tcp dport 80 counter drop", "tcp dport 443 counter drop"}},
		{"long port list stays a set", calc.Rule{Action: calc.RuleDeny, Protocol: 17, DstPorts: []calc.PortRange{{First: 1, Last: 1}, {First: 3, Last: 3}, {First: 5, Last: 5}, {First: 7, Last: 7}, {First: 9, Last: 9}}},
			[]string{"udp dport { 1, 3, 5, 7, 9 } counter drop"},
			[]string{"udp dport { 1, 3, 5, 7, 9 } counter drop"}},
		{"overlapping ports merge", calc.Rule{Action: calc.RuleLog, Protocol: 6, DstPorts: []calc.PortRange{{First: 80, Last: 90}, {First: 85, Last: 100}}},
			[]string{`tcp dport 80-100 log prefix "calico-packet: " level info`},
			[]string{`tcp dport 80-100 log prefix "calico-packet: " level info`}},
		{"nets per version", calc.Rule{Action: calc.RulePass, SrcNets: []netip.Prefix{pfx("10.65.0.0/16"), pfx("10.65.1.0/24"), pfx("fd5c::/16")}},
			[]string{"ip saddr 10.65.0.0/16 counter meta mark set meta mark | 0x00020000 return"},
			[]string{"ip6 saddr fd5c::/16 counter meta mark set meta mark | 0x00020000 return"}},
		// A negated net list leaves the rule out of a table it has no net of, and out of a
		// table whose whole space it negates (Project Calico's FilterRuleToIPVersion).
		{"negated nets of one version", calc.Rule{Action: calc.RuleAllow, NotDstNets: []netip.Prefix{pfx("fd5c:1:1::15/128")}},
			nil, []string{"ip6 daddr != fd5c:1:1::15 counter meta mark set meta mark | 0x00010000 return"}},
		{"negated catch-all net", calc.Rule{Action: calc.RuleDeny, NotSrcNets: []netip.Prefix{pfx("0.0.0.0/0"), pfx("fd5c::/16")}},
			nil, []string{"ip6 saddr != fd5c::/16 counter drop"}},
		{"a /0 is every address of the table", calc.Rule{Action: calc.RuleDeny, SrcNets: []netip.Prefix{pfx("0.0.0.0/0")}},
			[]string{"counter drop"}, nil},
		{"v6 rule", calc.Rule{Action: calc.RuleAllow, IPVersion: 6}, nil,
			[]string{"counter meta mark set meta mark | 0x00010000 return"}},
		{"version only", calc.Rule{Action: calc.RuleAllow, IPVersion: 4, Protocol: 17},
			[]string{"meta l4proto udp counter meta mark set meta mark | 0x00010000 return"}, nil},
		{"icmp type and code", calc.Rule{Action: calc.RuleAllow, Protocol: 1, ICMP: &calc.ICMPMatch{Type: 8, Code: &code}},
			[]string{"icmp type echo-request icmp code net-unreachable counter meta mark set meta mark | 0x00010000 return"}, nil},
		// notICMP {type, code} is "not (that type and that code)", for ICMP packets of the
		// table's version only: two disjoint rules.
		{"deny not icmp type and code", calc.Rule{Action: calc.RuleDeny, Protocol: 1, IPVersion: 4, NotICMP: &calc.ICMPMatch{Type: 8, Code: &code}},
			[]string{"icmp type != echo-request counter drop",
				"icmp type echo-request icmp code != net-unreachable counter drop"}, nil},
		{"not icmp type and code without protocol", calc.Rule{Action: calc.RulePass, NotICMP: &calc.ICMPMatch{Type: 128, Code: &code}},
			[]string{"icmp type != 128 counter meta mark set meta mark | 0x00020000 return",
				"icmp type 128 icmp code != net-unreachable counter meta mark set meta mark | 0x00020000 return"},
			[]string{"icmpv6 type != echo-request counter meta mark set meta mark | 0x00020000 return",
				"icmpv6 type echo-request icmpv6 code != no-route counter meta mark set meta mark | 0x00020000 return"}},
		{"not icmp code with other expansions", calc.Rule{Action: calc.RuleLog, NotICMP: &calc.ICMPMatch{Type: 8, Code: &code},
			SrcNets: []netip.Prefix{pfx("10.65.1.0/24"), pfx("10.65.3.0/24"), pfx("10.65.5.0/24")}},
			[]string{`ip saddr { 10.65.1.0/24, 10.65.3.0/24, 10.65.5.0/24 } icmp type != echo-request log prefix "calico-packet: " level info`,
				`ip saddr { 10.65.1.0/24, 10.65.3.0/24, 10.65.5.0/24 } icmp type echo-request icmp code != net-unreachable log prefix "calico-packet: " level info`}, nil},
		{"sets and negations", calc.Rule{Action: calc.RuleDeny, SrcIPSetIDs: []string{"s:a"}, NotDstIPSetIDs: []string{"s:b"}, NotProtocol: 6},
			[]string{"meta l4proto != tcp ip saddr @cali40s-a ip daddr != @cali40s-b counter drop"},
			[]string{"meta l4proto != tcp ip6 saddr @cali60s-a ip6 daddr != @cali60s-b counter drop"}},
		{"two named ports", calc.Rule{Action: calc.RuleAllow, DstNamedPortIPSetIDs: []string{"n:a", "n:b"}}, []string{
			"meta mark set meta mark & 0xffefffff",
			"ip daddr . meta l4proto . th dport @cali40n-a meta mark set meta mark | 0x00100000",
			"ip daddr . meta l4proto . th dport @cali40n-b meta mark set meta mark | 0x00100000",
			"meta mark & 0x00100000 == 0x00100000 counter meta mark set meta mark | 0x00010000 return",
		}, []string{
			"meta mark set meta mark & 0xffefffff",
			"ip6 daddr . meta l4proto . th dport @cali60n-a meta mark set meta mark | 0x00100000",
			"ip6 daddr . meta l4proto . th dport @cali60n-b meta mark set meta mark | 0x00100000",
			"meta mark & 0x00100000 == 0x00100000 counter meta mark set meta mark | 0x00010000 return",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, want := range []struct {
				v     nft.IPVersion
				rules []string
			}{{nft.IPv4, tc.v4}, {nft.IPv6, tc.v6}} {
				r := PolicyRules(testConfig(true), want.v, Filter, []calc.Rule{tc.rule})
				got := ruleTexts(want.v, r.Rules)
				if diff := cmp.Diff(want.rules, got); diff != "" || len(r.Problems) > 0 {
					t.Errorf("%s (-want +got):\n%s\nproblems: %v", want.v, diff, r.Problems)
				}
			}
		})
	}
}

// ruleTexts prints rules as nft lists them in the table of version v.
func ruleTexts(v nft.IPVersion, rs []nft.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Text(TableFamily(v)))
	}
	return out
}

// TestPolicyRulesFailClosed: a rule that cannot be enforced is never left out; the chain drops
// what reaches it, in the tables of the rule's IP version, and the problem is reported.
func TestPolicyRulesFailClosed(t *testing.T) {
	rs := []calc.Rule{
		{Action: "teleport", RuleID: "r1"},
		{Action: calc.RuleDeny, DstPorts: []calc.PortRange{{First: 80, Last: 80}}},
		{Action: calc.RuleDeny, Protocol: 6, ICMP: &calc.ICMPMatch{Type: 8}, IPVersion: 4},
		{Action: calc.RulePass, IPVersion: 6, Invalid: "bad CIDR", RuleID: "bad id; drop table"},
		{Action: calc.RuleAllow},
	}
	drop := func(id string) string { return `counter drop comment "Rule ` + id + `cannot be enforced: fail closed"` }
	for _, tc := range []struct {
		v        nft.IPVersion
		want     []string
		problems []int
	}{
		{nft.IPv4, []string{drop("r1 "), drop(""), drop(""), "counter meta mark set meta mark | 0x00010000 return"}, []int{0, 1, 2}},
		{nft.IPv6, []string{drop("r1 "), drop(""), drop(""), "counter meta mark set meta mark | 0x00010000 return"}, []int{0, 1, 3}},
	} {
		r := PolicyRules(testConfig(true), tc.v, Filter, rs)
		if diff := cmp.Diff(tc.want, ruleTexts(tc.v, r.Rules)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.v, diff)
		}
		var idx []int
		for _, p := range r.Problems {
			idx = append(idx, p.Index)
		}
		if !slices.Equal(idx, tc.problems) {
			t.Errorf("%s: problems %+v", tc.v, r.Problems)
		}
	}
}

// TestElement: members become typed set elements of their own version only.
func TestElement(t *testing.T) {
	for _, tc := range []struct {
		v    nft.IPVersion
		typ  calc.IPSetType
		m    calc.IPSetMember
		want string
		ok   bool
	}{
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.5/32")}, "10.65.0.5", true},
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.1.7/24")}, "10.65.1.0/24", true},
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("::ffff:10.65.1.7/120")}, "10.65.1.0/24", true},
		{nft.IPv6, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.5/32")}, "", false},
		// A mapped prefix shorter than /96 covers more than IPv4: it stays IPv6, never a negative length.
		{nft.IPv4, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("::ffff:0:0/80")}, "", false},
		{nft.IPv6, calc.IPSetNet, calc.IPSetMember{Prefix: netip.MustParsePrefix("::ffff:0:0/80")}, "::/80", true},
		{nft.IPv6, calc.IPSetNamedPort, calc.IPSetMember{Prefix: netip.MustParsePrefix("fd5c::5/128"), Protocol: 6, Port: 80}, "fd5c::5 . tcp . 80", true},
		{nft.IPv4, calc.IPSetNamedPort, calc.IPSetMember{Prefix: netip.MustParsePrefix("10.65.0.0/24"), Protocol: 6, Port: 80}, "", false},
	} {
		e, ok := Element(tc.v, tc.typ, tc.m)
		typ, _ := SetType(tc.v, tc.typ)
		got := ""
		if ok {
			got = typ.FormatElement(e)
		}
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %q %v, want %q %v", tc.m, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRenderedRulesetIsValid renders every kind of object into the table of each version and
// validates the result as the nft Applier would.
func TestRenderedRulesetIsValid(t *testing.T) {
	cfg := testConfig(true)
	cfg.OpenStack, cfg.MetadataAddr, cfg.MetadataPort = true, netip.MustParseAddr("127.0.0.1"), 8775
	cfg.FailsafeIn = []ProtoPort{{Protocol: 6, Port: 22}, {Protocol: 17, Port: 68, Net: netip.MustParsePrefix("198.18.0.0/16")}}
	pols := []calc.PolicyID{{Tier: "default", Kind: "gnp", Name: "p"}, {Tier: "default", Kind: "gnp", Name: "q"}}
	tiers := []calc.TierInfo{{Name: "default", IngressPolicies: pols}}
	grouped := GroupBySelector(func(calc.PolicyID) (string, bool) { return "all()", true })
	ep := WorkloadEndpoint(cfg, &calc.WorkloadEndpoint{Name: "cali1", Tiers: tiers, ProfileIDs: []string{"prof"}}, grouped)
	hep, maps, hd := HostEndpoints(cfg, []HostIface{{Iface: "eth0", EP: &calc.HostEndpoint{Name: "h", UntrackedTiers: tiers}}}, Singletons)
	st := &Static{Hosts: hd, MasqFamilies: []nft.IPVersion{nft.IPv4}, FloatingIPs: []FloatingIP{{Ext: netip.MustParseAddr("198.18.1.1"), Int: netip.MustParseAddr("10.65.0.1")}},
		VXLAN: []VXLANDevice{{Name: "vxlan.calico", Version: nft.IPv4}}, SpoofAllowed: []SpoofAllowed{{Iface: "cali1", Prefix: netip.MustParsePrefix("fd5c::/64")}}}
	for _, v := range cfg.Families() {
		tb := nft.NewTable(TableFamily(v), "calico")
		wl := Endpoint{Chains: []*nft.Chain{ep[0].Chain, ep[1].Chain}, Refs: append(ep[0].Refs, ep[1].Refs...)}
		for _, e := range []Endpoint{wl, hep} {
			for _, c := range e.Chains {
				must(t, tb.PutChain(c))
			}
			for _, r := range e.Refs {
				var members []Member
				for _, id := range r.Group {
					pr := PolicyRules(cfg, v, r.Layer, []calc.Rule{{Action: calc.RuleAllow}})
					members = append(members, Member{ID: id, Inline: true, Rules: pr.Rules, Protos: pr.Protos})
				}
				for _, c := range GroupChains(cfg, r.Layer, r.Egress, r.Chain(), members) {
					must(t, tb.PutChain(c))
				}
			}
		}
		for _, m := range maps {
			must(t, tb.PutMap(m))
		}
		from, to := WorkloadDispatchMaps()
		must(t, tb.PutMap(from))
		must(t, tb.PutMap(to))
		for _, c := range StaticChains(cfg, st, v) {
			must(t, tb.PutChain(c))
		}
		for _, id := range []string{SetAllPools, SetMasqPools, SetAllVXLAN} {
			must(t, tb.PutSet(NetSet(v, id, nil)))
		}
		if err := tb.Validate(); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
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

// TestInvalidNetFailsClosed: a rule whose nets hold a prefix that is not valid (no address, or a
// length its address cannot have) never renders as a rule without an address match (which
// would allow every address of the table): it fails closed.
func TestInvalidNetFailsClosed(t *testing.T) {
	bad := netip.PrefixFrom(netip.MustParseAddr("10.0.0.1"), 128) // Bits() == -1
	for _, v := range []nft.IPVersion{nft.IPv4, nft.IPv6} {
		r := PolicyRules(testConfig(true), v, Filter, []calc.Rule{{Action: calc.RuleAllow, SrcNets: []netip.Prefix{bad}}})
		for _, text := range ruleTexts(v, r.Rules) {
			if strings.HasPrefix(text, "counter meta mark set") {
				t.Errorf("%s: the rule with net %v allows every source: %q", v, bad, text)
			}
		}
	}
}

// Origins name the calc rule whose verdict each rendered rule carries: not a log rule's, not
// an OR block's scratch-mark rules, and a rule that cannot be enforced is its own drop.
func TestPolicyRulesOrigins(t *testing.T) {
	rs := []calc.Rule{
		{Action: calc.RuleAllow, Protocol: nft.ProtoTCP, DstNamedPortIPSetIDs: []string{"n:a", "n:b"}},
		{Action: calc.RuleLog},
		{Action: calc.RuleDeny, Invalid: "bad"},
		{Action: calc.RulePass, IPVersion: 6},
		{Action: calc.RuleDeny},
	}
	r := PolicyRules(testConfig(false), nft.IPv4, Filter, rs)
	if len(r.Origins) != len(r.Rules) {
		t.Fatalf("%d origins for %d rules", len(r.Origins), len(r.Rules))
	}
	var verdicts []int
	for j, i := range r.Origins {
		if i >= 0 {
			verdicts = append(verdicts, i)
			continue
		}
		if strings.Contains(r.Rules[j].Text(nft.FamilyIP), "return") {
			t.Errorf("rule %d (%s) returns but has no origin", j, r.Rules[j].Text(nft.FamilyIP))
		}
	}
	if want := []int{0, 2, 4}; !slices.Equal(verdicts, want) {
		t.Errorf("verdict rules of calc rules %v, want %v (rules %v)", verdicts, want, r.Origins)
	}
	if r.Origins[0] != -1 {
		t.Errorf("the OR block's first rule has origin %d, want -1", r.Origins[0])
	}
}

// TestEndpointDropsReadBack: a trace reads an endpoint chain's own drops and its policy
// direction back from the rendered chains.
func TestEndpointDropsReadBack(t *testing.T) {
	id := calc.PolicyID{Tier: "sec.ops", Kind: "gnp", Name: "sec.ops.p"}
	ep := &calc.WorkloadEndpoint{Tiers: []calc.TierInfo{{Name: "sec.ops", DefaultAction: "Deny",
		IngressPolicies: []calc.PolicyID{id}, EgressPolicies: []calc.PolicyID{id}}}}
	w := WorkloadEndpoint(testConfig(false), ep, Singletons)
	for i, egress := range []bool{false, true} {
		c := w[i].Chain
		if got, ok := EndpointChainEgress(c.Name); !ok || got != egress {
			t.Errorf("%s: egress %v %v, want %v", c.Name, got, ok, egress)
		}
		var tiers []string
		noProfile := 0
		for _, r := range c.Rules {
			if tier, np, ok := EndpointDrop(r.Comment); ok && np {
				noProfile++
			} else if ok {
				tiers = append(tiers, tier)
			}
		}
		if !slices.Equal(tiers, []string{"sec.ops"}) || noProfile != 1 {
			t.Errorf("%s: end of tiers %v, %d no-profile drops", c.Name, tiers, noProfile)
		}
	}
	if _, ok := EndpointChainEgress(PolicyChain(Filter, id, true)); ok {
		t.Error("a policy chain read as an endpoint chain")
	}
}

package ruleset

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestGroupSharedByEndpoints: consecutive policies with one selector are one group chain
// holding their rules inline, shared by every endpoint that has them; a change of one of the
// policies rewrites that chain only; the chain goes with its last endpoint.
func TestGroupSharedByEndpoints(t *testing.T) {
	h := newHarness(t, true)
	p1, p2, p3 := gnpID("p1"), gnpID("p2"), gnpID("p3")
	h.policy(p1, "app == 'x'", []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81)}}, nil)
	h.policy(p2, "app == 'x'", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(80)}}, nil)
	h.policy(p3, "app == 'y'", []calc.Rule{{Action: calc.RulePass}}, nil)
	h.endpoint("w1", workload("cali11111111111", []calc.TierInfo{ingress("default", p1, p2, p3)}))
	h.endpoint("w2", workload("cali22222222222", []calc.TierInfo{ingress("default", p1, p2, p3)}))
	h.build()
	group := rules.GroupChain(rules.Filter, false, []calc.PolicyID{p1, p2})
	want := "tcp dport 81 counter drop\ntcp dport 80 counter meta mark set meta mark | 0x00010000 return"
	if got := h.chainRules(group); got != want {
		t.Fatalf("group chain:\n%s\nwant:\n%s", got, want)
	}
	if h.workloadChain("cali11111111111", false) != h.workloadChain("cali22222222222", false) {
		t.Error("two endpoints with the same policies do not share their chain")
	}
	for _, w := range []string{"cali11111111111", "cali22222222222"} {
		tw := h.workloadChain(w, false)
		if got := h.chainRules(tw); !strings.Contains(got, "jump "+group+" comment") ||
			!strings.Contains(got, "meta mark & 0x00030000 == 0x00000000 jump filter-cali-pi-gnp/p3") {
			t.Errorf("%s:\n%s", tw, got)
		}
	}
	h.policy(p2, "app == 'x'", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil)
	h.build()
	if got, want := strings.Join(h.flushed(), ","), "ip calico "+group+",ip6 calico "+group; got != want {
		t.Errorf("a policy change flushed %s, want %s", got, want)
	}
	h.endpoint("w1", nil)
	h.build()
	if h.chainRules(group) == "" {
		t.Error("the group went while w2 uses it")
	}
	h.endpoint("w2", nil)
	h.build()
	if d := h.fake.Dump(); strings.Contains(d, group) || strings.Contains(d, "gnp/p3") {
		t.Errorf("groups left without endpoints:\n%s", d)
	}
}

// TestPolicyOutOfLineInManyGroups: a policy whose inline copies would cost more lines than a
// chain of its own (8 rules in 2 groups) gets its chain, which its groups jump to (a return
// follows unless it is the group's last member); in one group it is inline again.
func TestPolicyOutOfLineInManyGroups(t *testing.T) {
	h := newHarness(t, false)
	p, x, q := gnpID("p"), gnpID("x"), gnpID("q")
	var xRules []calc.Rule
	for port := range uint16(8) {
		xRules = append(xRules, calc.Rule{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(9000 + port)})
	}
	h.policy(p, "all()", []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81)}}, nil)
	h.policy(x, "all()", xRules, nil)
	h.policy(q, "all()", []calc.Rule{{Action: calc.RuleAllow}}, nil)
	h.endpoint("w1", workload("cali11111111111", []calc.TierInfo{ingress("default", p, x)}))
	h.endpoint("w2", workload("cali22222222222", []calc.TierInfo{ingress("default", x, q)}))
	h.build()
	px, xq := rules.GroupChain(rules.Filter, false, []calc.PolicyID{p, x}), rules.GroupChain(rules.Filter, false, []calc.PolicyID{x, q})
	xChain := rules.PolicyChain(rules.Filter, x, false)
	if got := h.chainRules(px); got != "tcp dport 81 counter drop\njump "+xChain {
		t.Errorf("group p,x:\n%s", got)
	}
	if got := h.chainRules(xq); got != "jump "+xChain+"\nmeta mark & 0x00030000 != 0x00000000 return\ncounter meta mark set meta mark | 0x00010000 return" {
		t.Errorf("group x,q:\n%s", got)
	}
	if got := strings.Count(h.chainRules(xChain), "\n") + 1; got != 8 {
		t.Errorf("x's own chain has %d rules, want 8", got)
	}
	h.endpoint("w2", nil)
	h.build()
	if got := h.chainRules(px); !strings.HasPrefix(got, "tcp dport 81 counter drop\nudp dport 9000 counter drop") || strings.Count(got, "\n") != 8 {
		t.Errorf("x in one group is not inline:\n%s", got)
	}
	if h.chainRules(xChain) != "" || strings.Contains(h.fake.Dump(), xq) {
		t.Errorf("x's chain or group x,q left behind:\n%s", h.fake.Dump())
	}
}

// TestGroupProtocolChainsFollowTheGroup: a group that splits by protocol has its protocol
// chain while it splits, loses it when a change makes it too small to split, and takes it
// along when it goes.
func TestGroupProtocolChainsFollowTheGroup(t *testing.T) {
	h := newHarness(t, false)
	var pols []calc.PolicyID
	udpRules := []calc.Rule{{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(53)}, {Action: calc.RuleAllow, Protocol: 17, DstPorts: ports(123)}}
	for i := range 20 {
		id := gnpID(fmt.Sprint("p", i))
		pols = append(pols, id)
		h.policy(id, "all()", udpRules, nil)
	}
	h.endpoint("w1", workload("cali11111111111", []calc.TierInfo{ingress("default", pols...)}))
	h.build()
	group := rules.GroupChain(rules.Filter, false, pols)
	if !strings.HasPrefix(h.chainRules(group), "meta l4proto udp goto "+group+":17") || h.chainRules(group+":17") == "" {
		t.Fatalf("group:\n%s", h.chainRules(group))
	}
	for _, id := range pols[1:] {
		h.policy(id, "all()", nil, nil)
	}
	h.build()
	if h.chainRules(group+":17") != "" || strings.Contains(h.fake.Dump(), group+":17") {
		t.Errorf("the protocol chain stayed once the group stopped splitting:\n%s", h.chainRules(group))
	}
	for _, id := range pols {
		h.policy(id, "all()", udpRules, nil)
	}
	h.build()
	if h.chainRules(group+":17") == "" {
		t.Fatal("the group did not split again")
	}
	h.endpoint("w1", nil)
	h.build()
	if d := h.fake.Dump(); strings.Contains(d, group) {
		t.Errorf("the group's chains stayed:\n%s", d)
	}
}

// TestEmptySetRulesLeftOut: a rule that needs a member of a calc IP set with none in a table
// is left out of that table's group and profile chains (it could never match); the batch that
// gives the set its first member writes the rule back, the one that removes the last member
// leaves it out again. A negated lookup of an empty set stays (it matches everything).
func TestEmptySetRulesLeftOut(t *testing.T) {
	h := newHarness(t, true)
	p := gnpID("p")
	h.ipset("s:x")
	h.ipset("s:y")
	h.policy(p, "a", []calc.Rule{
		{Action: calc.RuleAllow, Protocol: 6, SrcIPSetIDs: []string{"s:x"}},
		{Action: calc.RuleDeny, NotSrcIPSetIDs: []string{"s:y"}},
	}, nil)
	h.profile("prof", []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:x"}}}, nil)
	h.endpoint("w", workload("cali11111111111", []calc.TierInfo{ingress("default", p)}, "prof"))
	h.build()
	group, prof := rules.GroupChain(rules.Filter, false, []calc.PolicyID{p}), rules.ProfileChain(rules.Filter, "prof", false)
	sx, sy := rules.SetName(nft.IPv4, "s:x"), rules.SetName(nft.IPv4, "s:y")
	if got, want := h.chainRules(group), "ip saddr != @"+sy+" counter drop"; got != want {
		t.Fatalf("group with s:x empty:\n%s\nwant:\n%s", got, want)
	}
	if got := h.chainRules(prof); got != "" {
		t.Fatalf("profile with s:x empty:\n%s", got)
	}
	h.in.IPSets["s:x"].Change([]calc.IPSetMember{{Prefix: netip.MustParsePrefix("10.65.0.1/32")}}, nil)
	h.build()
	want := "meta l4proto tcp ip saddr @" + sx + " counter meta mark set meta mark | 0x00010000 return\nip saddr != @" + sy + " counter drop"
	if got := h.chainRules(group); got != want {
		t.Errorf("group once s:x has a member:\n%s\nwant:\n%s", got, want)
	}
	if got := h.chainRules(prof); !strings.Contains(got, "ip saddr @"+sx) {
		t.Errorf("profile once s:x has a member:\n%s", got)
	}
	if got := strings.Join(h.flushed(), ","); got != "ip calico "+group+",ip calico "+prof {
		t.Errorf("the first member rewrote %s, want the ip table's group and profile chains only", got)
	}
	if v6 := h.b.Tables()[1].Chain(group); v6 == nil || len(v6.Rules) != 1 {
		t.Errorf("ip6 group (s:x has no IPv6 member): %v", v6)
	}
	h.in.IPSets["s:x"].Change(nil, []calc.IPSetMember{{Prefix: netip.MustParsePrefix("10.65.0.1/32")}})
	h.build()
	if got := h.chainRules(group); got != "ip saddr != @"+sy+" counter drop" {
		t.Errorf("group once s:x lost its last member:\n%s", got)
	}
}

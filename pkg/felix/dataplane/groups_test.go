package dataplane

import (
	"fmt"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// policySel is a policy with a selector (policies with the same selector form groups).
func policySel(id calc.PolicyID, sel string, in, out []calc.Rule) calc.ActivePolicyUpdate {
	u := policy(id, in, out)
	u.Policy.Selector = sel
	return u
}

// chainRules is a chain of the ip table as nft lists it, one rule a line ("" when absent).
func (h *harness) chainRules(name string) string { return h.chainRulesIn(0, name) }

// chainRulesIn is chainRules for the table of index i (0 ip, 1 ip6 when both are on).
func (h *harness) chainRulesIn(i int, name string) string {
	t := h.dp.builder.tables[i]
	c := t.Chain(name)
	if c == nil {
		return ""
	}
	var lines []string
	for _, r := range c.Rules {
		lines = append(lines, r.Text(t.Family))
	}
	return strings.Join(lines, "\n")
}

// workloadChain is the chain the ip table's dispatch map sends traffic to (egress false) or
// from (egress true) a workload interface to.
func (h *harness) workloadChain(iface string, egress bool) string {
	from, to := rules.DispatchMaps()
	m := h.dp.builder.tables[0].Map(to)
	if egress {
		m = h.dp.builder.tables[0].Map(from)
	}
	return m.Elements[nft.IfnameKey(iface)].Chain
}

// flushed lists the chains the last batch flushed.
func (h *harness) flushed() []string {
	var out []string
	for _, op := range h.fake.LastBatch().Ops {
		if op.Kind == nft.OpFlushChain {
			out = append(out, op.Table.String()+" "+op.Name)
		}
	}
	return out
}

// TestGroupSharedByEndpoints: consecutive policies with one selector are one group chain
// holding their rules inline, shared by every endpoint that has them; a change of one of the
// policies rewrites that chain only; the chain goes with its last endpoint.
func TestGroupSharedByEndpoints(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali11111111111", "cali22222222222")
	p1, p2, p3 := gnpID("p1"), gnpID("p2"), gnpID("p3")
	pols := ids(p1, p2, p3)
	h.send(
		policySel(p1, "app == 'x'", []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81)}}, nil),
		policySel(p2, "app == 'x'", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(80)}}, nil),
		policySel(p3, "app == 'y'", []calc.Rule{{Action: calc.RulePass}}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", pols, nil))),
		wep("w2", "cali22222222222", []string{"10.65.0.2/32"}, withTiers(tier("default", pols, nil))))
	group := rules.GroupChain(rules.Filter, false, ids(p1, p2))
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
	h.send(policySel(p2, "app == 'x'", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil))
	if got, want := strings.Join(h.flushed(), ","), "ip calico "+group+",ip6 calico "+group; got != want {
		t.Errorf("a policy change flushed %s, want %s", got, want)
	}
	h.send(calc.WorkloadEndpointRemove{ID: wepID("w1")})
	if h.chainRules(group) == "" {
		t.Error("the group went while w2 uses it")
	}
	h.send(calc.WorkloadEndpointRemove{ID: wepID("w2")})
	if d := h.fake.Dump(); strings.Contains(d, group) || strings.Contains(d, "gnp/p3") {
		t.Errorf("groups left without endpoints:\n%s", d)
	}
}

// TestPolicyOutOfLineInManyGroups: a policy whose inline copies would cost more lines than a
// chain of its own (8 rules in 2 groups) gets its chain, which its groups jump to (a return
// follows unless it is the group's last member); in one group it is inline again.
func TestPolicyOutOfLineInManyGroups(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali11111111111", "cali22222222222")
	p, x, q := gnpID("p"), gnpID("x"), gnpID("q")
	var xRules []calc.Rule
	for port := range uint16(8) {
		xRules = append(xRules, calc.Rule{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(9000 + port)})
	}
	h.send(
		policySel(p, "all()", []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81)}}, nil),
		policySel(x, "all()", xRules, nil),
		policySel(q, "all()", []calc.Rule{{Action: calc.RuleAllow}}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", ids(p, x), nil))),
		wep("w2", "cali22222222222", []string{"10.65.0.2/32"}, withTiers(tier("default", ids(x, q), nil))))
	px, xq := rules.GroupChain(rules.Filter, false, ids(p, x)), rules.GroupChain(rules.Filter, false, ids(x, q))
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
	h.send(calc.WorkloadEndpointRemove{ID: wepID("w2")})
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
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali11111111111")
	var pols []calc.PolicyID
	var ups []calc.Update
	udpRules := []calc.Rule{{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(53)}, {Action: calc.RuleAllow, Protocol: 17, DstPorts: ports(123)}}
	for i := range 20 {
		id := gnpID(fmt.Sprint("p", i))
		pols = append(pols, id)
		ups = append(ups, policySel(id, "all()", udpRules, nil))
	}
	h.send(append(ups, wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", pols, nil))))...)
	group := rules.GroupChain(rules.Filter, false, pols)
	if !strings.HasPrefix(h.chainRules(group), "meta l4proto udp goto "+group+":17") || h.chainRules(group+":17") == "" {
		t.Fatalf("group:\n%s", h.chainRules(group))
	}
	var small []calc.Update
	for _, id := range pols[1:] {
		small = append(small, policySel(id, "all()", nil, nil))
	}
	h.send(small...)
	if h.chainRules(group+":17") != "" || strings.Contains(h.fake.Dump(), group+":17") {
		t.Errorf("the protocol chain stayed once the group stopped splitting:\n%s", h.chainRules(group))
	}
	h.send(append(ups[1:], policySel(pols[0], "all()", udpRules, nil))...)
	if h.chainRules(group+":17") == "" {
		t.Fatal("the group did not split again")
	}
	h.send(calc.WorkloadEndpointRemove{ID: wepID("w1")})
	if d := h.fake.Dump(); strings.Contains(d, group) {
		t.Errorf("the group's chains stayed:\n%s", d)
	}
}

package ruleset

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// TestFlowLogStatements: with flow logs on, every verdict rule of the filter layer carries its
// NFLOG statement inside it, before the counter (policy allow, deny and pass, profile rules,
// end of tier, no profile matched; ingress to group 1, egress to 2), log rules do not, and the
// published table names every prefix; the tables apply (the fake refuses what the kernel does).
// Removing the endpoint takes the policies' prefixes out of the next table.
func TestFlowLogStatements(t *testing.T) {
	cfg := testConfig(true)
	cfg.FlowLogs = true
	h := newHarnessWith(t, cfg)
	p1, p2 := gnpID("p1"), calc.PolicyID{Tier: "security", Kind: "np", Namespace: "prod", Name: "db"}
	h.policy(p1, "all()", []calc.Rule{{Action: calc.RuleLog}, {Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(81), Index: 1},
		{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(80), Index: 2}}, []calc.Rule{{Action: calc.RulePass}})
	h.policy(p2, "all()", []calc.Rule{{Action: calc.RuleAllow, Protocol: 17}}, nil)
	h.profile("kns.prod", []calc.Rule{{Action: calc.RuleAllow}}, nil)
	h.endpoint("w1", workload("cali11111111111", []calc.TierInfo{
		{Name: "security", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{p2}},
		{Name: "default", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{p1}, EgressPolicies: []calc.PolicyID{p1}}}, "kns.prod"))
	h.build()
	for chain, want := range map[string]string{
		rules.PolicyChain(rules.Filter, p1, false): `log prefix "calico-packet: " level info
tcp dport 81 log prefix "DPI1|gnp/p1" group 1 snaplen 80 counter drop
tcp dport 80 log prefix "API2|gnp/p1" group 1 snaplen 80 counter meta mark set meta mark | 0x00010000 return`,
		rules.PolicyChain(rules.Filter, p1, true):           `log prefix "PPE0|gnp/p1" group 2 snaplen 80 counter meta mark set meta mark | 0x00020000 return`,
		rules.PolicyChain(rules.Filter, p2, false):          `meta l4proto udp log prefix "API0|np/prod/db" group 1 snaplen 80 counter meta mark set meta mark | 0x00010000 return`,
		rules.ProfileChain(rules.Filter, "kns.prod", false): `log prefix "ARI0|kns.prod" group 1 snaplen 80 counter meta mark set meta mark | 0x00010000 return`,
	} {
		if got := h.chainRules(chain); got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", chain, got, want)
		}
	}
	tw, fw := h.chainRules(h.workloadChain("cali11111111111", false)), h.chainRules(h.workloadChain("cali11111111111", true))
	for _, want := range []string{
		`meta mark & 0x00020000 == 0x00000000 log prefix "DPI|security" group 1 snaplen 80 counter drop comment "End of tier security`,
		`meta mark & 0x00020000 == 0x00000000 log prefix "DPI|default" group 1 snaplen 80 counter drop comment "End of tier default`,
		`log prefix "DRI" group 1 snaplen 80 counter drop comment "Drop if no profiles matched"`,
	} {
		if !strings.Contains(tw, want) {
			t.Errorf("to-workload chain lacks %s:\n%s", want, tw)
		}
	}
	if !strings.Contains(fw, `log prefix "DPE|default" group 2 snaplen 80 counter drop`) || !strings.Contains(fw, `log prefix "DRE" group 2`) {
		t.Errorf("from-workload chain:\n%s", fw)
	}
	table, refused := h.b.FlowLogTable()
	for prefix, want := range map[string]ruleid.RuleID{
		"DPI1|gnp/p1":     {Kind: flowlog.KindGlobalNetworkPolicy, Tier: "default", Name: "p1", Direction: ruleid.Ingress, Index: 1, Action: flowlog.Deny},
		"API0|np/prod/db": {Kind: flowlog.KindCalicoNetworkPolicy, Tier: "security", Namespace: "prod", Name: "db", Direction: ruleid.Ingress, Action: flowlog.Allow},
		"ARI0|kns.prod":   {Kind: flowlog.KindProfile, Name: "kns.prod", Direction: ruleid.Ingress, Action: flowlog.Allow},
		"DPI|security":    {Kind: flowlog.KindEndOfTier, Tier: "security", Direction: ruleid.Ingress, Index: -1, Action: flowlog.Deny},
		"DRE":             {Kind: flowlog.KindProfile, Name: ruleid.NoMatchProfile, Direction: ruleid.Egress, Action: flowlog.Deny},
	} {
		if got, ok := table.Lookup(prefix); !ok || got != want {
			t.Errorf("table[%q] = %v %v, want %v", prefix, got, ok, want)
		}
	}
	if refused != 0 {
		t.Errorf("%d rules refused a prefix", refused)
	}
	h.endpoint("w1", nil)
	h.build()
	after, _ := h.b.FlowLogTable()
	if _, ok := after.Lookup("DPI1|gnp/p1"); ok || after == table {
		t.Error("the prefixes of a policy no chain holds are still in the table")
	}
	if _, ok := table.Lookup("DPI1|gnp/p1"); !ok {
		t.Error("a published table changed")
	}
}

// TestFlowLogsOff: with flow logs off there is no table and no log statement.
func TestFlowLogsOff(t *testing.T) {
	h := newHarness(t, false)
	p := gnpID("p")
	h.policy(p, "all()", []calc.Rule{{Action: calc.RuleAllow}}, nil)
	h.endpoint("w1", workload("cali11111111111", []calc.TierInfo{ingress("default", p)}, "prof"))
	h.build()
	if table, _ := h.b.FlowLogTable(); table != nil || strings.Contains(h.fake.Dump(), "group") {
		t.Errorf("flow logs off: table %v, dump:\n%s", table, h.fake.Dump())
	}
}

// TestAttributionClash: a rule whose prefix another rule holds (the same policy in two tiers,
// while it moves) gets no log statement and is counted; once the holder releases the prefix
// the refused owner is rendered again and gets it. A policy whose name cannot be a prefix
// counts its verdict rules until it goes.
func TestAttributionClash(t *testing.T) {
	a := newAttribution(true, zerolog.Nop())
	rs := []calc.Rule{{Action: calc.RuleAllow}}
	old, moved := calc.PolicyID{Tier: "t1", Kind: "gnp", Name: "x"}, calc.PolicyID{Tier: "t2", Kind: "gnp", Name: "x"}
	if got := a.policy("old", old, false, rs); got[0].Prefix != "API0|gnp/x" || got[0].Group != 1 {
		t.Fatalf("first claim: %+v", got)
	}
	if got := a.policy("new", moved, false, rs); got[0] != (rules.LogTo{}) || a.refused != 1 {
		t.Fatalf("clashing claim: %+v, refused %d", got, a.refused)
	}
	if r, _ := a.Table().Lookup("API0|gnp/x"); r.Tier != "t1" {
		t.Errorf("table names %v", r)
	}
	a.release("old")
	if retry := a.takeRetry(); len(retry) != 1 || retry[0] != "new" {
		t.Fatalf("retry %v", retry)
	}
	if got := a.policy("new", moved, false, rs); got[0].Prefix != "API0|gnp/x" || a.refused != 0 {
		t.Errorf("after release: %+v, refused %d", got, a.refused)
	}
	bad := calc.PolicyID{Tier: "t1", Kind: "gnp", Name: "no spaces"}
	if got := a.policy("bad", bad, false, append(rs, calc.Rule{Action: calc.RuleLog})); got[0] != (rules.LogTo{}) || a.refused != 1 {
		t.Errorf("unnameable policy: %+v, refused %d", got, a.refused)
	}
	if a.release("bad"); a.refused != 0 {
		t.Errorf("refused %d after the unnameable policy went", a.refused)
	}
	if r, _ := a.Table().Lookup("API0|gnp/x"); r.Tier != "t2" {
		t.Errorf("table names %v after the move", r)
	}
}

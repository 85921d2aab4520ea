package ruleid

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

func TestPathEnforced(t *testing.T) {
	id := ok(t)
	pass := id(Rule(gnp("to-app"), "platform", Ingress, 2, flowlog.Pass))
	stagedTier := id(EndOfTier("staging", Ingress, flowlog.Pass))
	allow := id(Rule(Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "web"}, "app", Ingress, 0, flowlog.Allow))
	eot := id(EndOfTier("app", Ingress, flowlog.Deny))
	last := Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "db"}
	trigger := func(tier string) (Policy, bool) { return last, tier == "app" }

	hits, err := Path{pass, stagedTier, allow}.Enforced(trigger)
	if err != nil {
		t.Fatal(err)
	}
	want := []flowlog.PolicyHit{
		{Kind: flowlog.KindGlobalNetworkPolicy, Name: "to-app", Tier: "platform", Action: flowlog.Pass, PolicyIndex: 0, RuleIndex: 2},
		{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "web", Tier: "app", Action: flowlog.Allow, PolicyIndex: 1},
	}
	if d := cmp.Diff(want, hits); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
	hits, err = Path{pass, eot}.Enforced(trigger)
	if err != nil || len(hits) != 2 || hits[1].String() != "1|app|np:prod/db|deny|-1" {
		t.Errorf("end of tier: %v, %v", hits, err)
	}
	if _, err := (Path{pass}).Enforced(trigger); err == nil {
		t.Error("path without verdict accepted")
	}
	if _, err := (Path{id(EndOfTier("other", Ingress, flowlog.Deny))}).Enforced(trigger); err == nil {
		t.Error("end of tier without trigger accepted")
	}
}

// A path through a workload's egress policy and a host endpoint's forward policy is reported
// by its second decision's part, or by the first when the forward tiers all passed; a path
// with one decision, or none yet, is reported whole; a staged policy's allow or deny (pending
// evaluation) decides too.
func TestPathLatest(t *testing.T) {
	id := ok(t)
	pass := id(Rule(gnp("p"), "t1", Egress, 0, flowlog.Pass))
	wepAllow := id(Rule(gnp("wep-out"), "t2", Egress, 1, flowlog.Allow))
	hepPass := id(Rule(gnp("hep-p"), "t1", Egress, 3, flowlog.Pass))
	hepDeny := id(Rule(gnp("hep-fwd"), "t2", Egress, 0, flowlog.Deny))
	staged := id(Rule(Policy{Kind: flowlog.KindStagedGlobalNetworkPolicy, Name: "s"}, "t2", Egress, 0, flowlog.Allow))
	for _, c := range []struct{ in, want Path }{
		{Path{pass, wepAllow, hepPass, hepDeny}, Path{hepPass, hepDeny}},
		{Path{pass, wepAllow}, Path{pass, wepAllow}},
		{Path{pass, wepAllow, hepPass}, Path{pass, wepAllow}},
		{Path{hepPass, pass, wepAllow}, Path{hepPass, pass, wepAllow}},
		{Path{pass}, Path{pass}},
		{Path{staged, hepDeny}, Path{hepDeny}},
		{nil, nil},
	} {
		if got := c.in.Latest(); !cmp.Equal(got, c.want) {
			t.Errorf("%v.Latest() = %v, want %v", c.in, got, c.want)
		}
	}
}

// Hits of two connections interleave; each path completes at its own verdict.
func TestAssembler(t *testing.T) {
	id := ok(t)
	a := NewAssembler(10)
	t1 := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: netip.MustParseAddr("10.65.0.2"), Proto: 6, SrcPort: 1, DstPort: 80}
	t2 := t1
	t2.SrcPort = 2
	pass := id(Rule(gnp("p"), "t1", Ingress, 0, flowlog.Pass))
	allow := id(Rule(gnp("a"), "t2", Ingress, 0, flowlog.Allow))
	deny := id(NoProfileMatch(Ingress))
	egressPass := id(Rule(gnp("p"), "t1", Egress, 0, flowlog.Pass))
	steps := []struct {
		tuple flowlog.Tuple
		rule  RuleID
		done  Path
	}{
		{t1, pass, nil},
		{t2, pass, nil},
		{t1, egressPass, nil},
		{t2, deny, Path{pass, deny}},
		{t1, allow, Path{pass, allow}},
	}
	for i, s := range steps {
		p, done := a.Add(s.tuple, s.rule)
		if done != (s.done != nil) || !cmp.Equal(p, s.done) {
			t.Errorf("step %d: %v %v, want %v", i, p, done, s.done)
		}
	}
	if a.Open() != 1 {
		t.Errorf("%d open, want the egress path", a.Open())
	}
	a.Forget(t1)
	full := NewAssembler(1)
	full.Add(t1, pass)
	full.Add(t2, pass)
	if p, done := full.Add(t2, deny); !done || !cmp.Equal(p, Path{deny}) || full.Open() != 1 {
		t.Errorf("bound not kept: %v %v, %d open", p, done, full.Open())
	}
}

// A path still open at the second Expire after it began (its packet met no verdict: a host
// endpoint's forward tiers that all passed) is dropped, so the next packet of its tuple (ICMP and
// bare IP protocols reuse tuples) starts a path of its own; one begun since the last Expire stays.
func TestAssemblerExpire(t *testing.T) {
	id := ok(t)
	tu := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: netip.MustParseAddr("10.65.0.2"), Proto: 253}
	pass := id(Rule(gnp("p"), "t1", Ingress, 0, flowlog.Pass))
	deny := id(EndOfTier("t2", Ingress, flowlog.Deny))
	a := NewAssembler(10)
	a.Add(tu, pass)
	a.Expire()
	if a.Open() != 1 {
		t.Fatalf("a path begun since the last Expire was dropped")
	}
	a.Expire()
	if p, done := a.Add(tu, deny); !done || !cmp.Equal(p, Path{deny}) {
		t.Errorf("next packet's path %v %v, want [%v] alone", p, done, deny)
	}
}

package trace

import (
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/collector"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// The collector takes the evaluator's Evaluate as its Pending.
var _ collector.Pending = (*PendingEvaluator)(nil).Evaluate

func TestPendingEvaluator(t *testing.T) {
	ups := twoWorkloads(t, gnp("stagedglobalnetworkpolicies", "lockdown", `{"order":1,"selector":"app == 'b'",
		"types":["Ingress"],"ingress":[{"action":"Deny","protocol":"TCP"}]}`))
	p, err := NewPending(ups, "h1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := netip.MustParseAddr("10.65.0.1"), netip.MustParseAddr("10.65.0.2"), netip.MustParseAddr("10.65.1.1")
	tcp := flowlog.Tuple{Src: a, Dst: b, Proto: flowlog.ProtoTCP, SrcPort: 5000, DstPort: 80}
	hits, ok := p.Evaluate(tcp, ruleid.Ingress)
	if !ok || len(hits) != 1 || hits[0].Kind != flowlog.KindStagedGlobalNetworkPolicy || hits[0].Name != "lockdown" ||
		hits[0].Action != flowlog.Deny {
		t.Errorf("ingress of %v: %+v %v, want the staged deny", tcp, hits, ok)
	}
	if hits, ok = p.Evaluate(tcp, ruleid.Egress); !ok || hits[0].Name != "allow-out" {
		t.Errorf("egress of %v: %+v %v, want allow-out", tcp, hits, ok)
	}
	sp, dp := flowlog.ICMPPorts(7, 8, 0)
	ping := flowlog.Tuple{Src: a, Dst: b, Proto: flowlog.ProtoICMP, SrcPort: sp, DstPort: dp}
	if hits, ok = p.Evaluate(ping, ruleid.Ingress); !ok || hits[0].Kind != flowlog.KindEndOfTier {
		t.Errorf("ingress of %v: %+v %v, want the end of tier default", ping, hits, ok)
	}
	if _, ok := p.Evaluate(flowlog.Tuple{Src: c, Dst: a, Proto: flowlog.ProtoTCP, DstPort: 80}, ruleid.Egress); ok {
		t.Error("egress of a remote workload evaluated")
	}
}

// A PendingSource follows the syncer: a staged policy written later changes the pending trace.
func TestPendingSource(t *testing.T) {
	ups := twoWorkloads(t)
	staged := decode(t, gnp("stagedglobalnetworkpolicies", "lockdown", `{"order":1,"selector":"app == 'b'",
		"types":["Ingress"],"ingress":[{"action":"Deny","protocol":"TCP"}]}`))
	s := NewPendingSource("h1", zerolog.Nop())
	s.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups})
	tcp := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: netip.MustParseAddr("10.65.0.2"), Proto: flowlog.ProtoTCP,
		SrcPort: 5000, DstPort: 80}
	name := func() string {
		p, err := s.Evaluator()
		if err != nil {
			t.Fatal(err)
		}
		hits, ok := p.Evaluate(tcp, ruleid.Ingress)
		if !ok {
			t.Fatal("no pending trace")
		}
		return hits[len(hits)-1].Name
	}
	if n := name(); n != "web" {
		t.Errorf("before the staged policy: %s", n)
	}
	s.OnMessage(syncer.Message{Status: syncer.InSync, Updates: staged})
	if n := name(); n != "lockdown" {
		t.Errorf("after the staged policy: %s", n)
	}
	s.OnMessage(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{{ID: staged[0].ID}}})
	if n := name(); n != "web" {
		t.Errorf("after its deletion: %s", n)
	}
}

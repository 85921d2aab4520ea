package trace

import (
	"net/netip"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// BenchmarkRun is one calicoctl trace between two hosts: calc, the ruleset build and the
// simulation for each host, enforced and pending.
func BenchmarkRun(b *testing.B) {
	ups := twoWorkloads(b)
	for b.Loop() {
		if _, err := Run(ups, Request{Src: "a", Dst: "c", Proto: flowlog.ProtoTCP, Port: 80}, zerolog.Nop()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPendingEvaluate is one pending trace for the collector (a simulated packet through
// the host's pending tables).
func BenchmarkPendingEvaluate(b *testing.B) {
	ups := twoWorkloads(b)
	p, err := NewPending(ups, "h1", zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	tcp := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: netip.MustParseAddr("10.65.0.2"), Proto: flowlog.ProtoTCP,
		SrcPort: 5000, DstPort: 80}
	for b.Loop() {
		if _, ok := p.Evaluate(tcp, ruleid.Ingress); !ok {
			b.Fatal("no pending trace")
		}
	}
}

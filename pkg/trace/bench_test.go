package trace

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
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

package felix

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// BenchmarkPendingAdd: what the pending feed costs calc's loop per syncer message (calc calls
// add before applying each one; there is no goroutine between the syncer and calc):
// "dropped" is felix with flow logs off or FlowLogsPolicyEvaluationMode None, "keeping" with
// them on (the feed's goroutine takes the queue now and then). Compare with calc's own cost
// per update (pkg/felix/calc BenchmarkLabelChange).
//
//	go test ./pkg/felix -run '^$' -bench PendingAdd
func BenchmarkPendingAdd(b *testing.B) {
	msg := syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{{Revision: 1}}}
	for _, keep := range []bool{false, true} {
		name := "dropped"
		if keep {
			name = "keeping"
		}
		b.Run(name, func(b *testing.B) {
			p := newPendingFeed()
			if !keep {
				p.drop()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p.add(msg)
				if i++; keep && i%1024 == 0 {
					p.take()
				}
			}
		})
	}
}

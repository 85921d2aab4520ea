package dataplane

import (
	"runtime/debug"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestBigCommitReleasesMemory: the full sync of a big host is marked for a memory release; the
// partial syncs after it, and a small host's first sync, are not.
func TestBigCommitReleasesMemory(t *testing.T) {
	big := benchUpdates(t, benchShape{local: 500, remote: 500, policies: 300})
	small := example19()
	for _, tc := range []struct {
		name      string
		initial   []calc.Update
		wantFirst bool
	}{
		{"big host", big, true},
		{"small host", small, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Hostname: "host1"})
			h.send(tc.initial...)
			if ops := len(h.fake.LastBatch().Ops); (ops >= bigCommitOps) != tc.wantFirst {
				t.Fatalf("the test data committed %d operations", ops)
			}
			if h.dp.bigCommit != tc.wantFirst {
				t.Errorf("after the first sync: bigCommit %t, want %t", h.dp.bigCommit, tc.wantFirst)
			}
			h.send(calc.IPSetDelta{ID: "s:extra", Added: []calc.IPSetMember{{Prefix: pfx("10.65.9.9/32")}}})
			if h.dp.bigCommit {
				t.Error("a partial sync is marked as a big commit")
			}
		})
	}
}

// TestTightenGC: GOGC is lowered for a full sync and restored after it; a partial sync, or a
// GOGC already at or below the target, is left alone.
func TestTightenGC(t *testing.T) {
	for _, tc := range []struct {
		name       string
		gogc       int
		full       bool
		wantDuring int
	}{
		{"full sync", 100, true, fullSyncGCPercent},
		{"partial sync", 100, false, 100},
		{"GOGC already low", 20, true, 20},
		{"GC off", -1, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(tc.gogc))
			h := newHarness(t, Config{Hostname: "host1"})
			if !tc.full {
				h.send(example19()...)
			}
			restore := h.dp.tightenGC()
			if got := debug.SetGCPercent(tc.wantDuring); got != tc.wantDuring {
				t.Errorf("GOGC during the sync: %d, want %d", got, tc.wantDuring)
			}
			restore()
			if got := debug.SetGCPercent(tc.gogc); got != tc.gogc {
				t.Errorf("GOGC after the sync: %d, want %d", got, tc.gogc)
			}
		})
	}
}

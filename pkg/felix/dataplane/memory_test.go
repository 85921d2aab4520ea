package dataplane

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestBigCommitReleasesMemory: the full sync of a big host is marked for a memory release (the
// loop releases it after a successful apply); the partial syncs after it, and a small host's
// first sync, are not. A big commit whose apply failed elsewhere (routes) stays marked, for the
// retry to release it: it was not, and felix stayed at its peak size.
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
			h.dp.bigCommit = false // released, as the loop does
			h.send(calc.IPSetDelta{ID: "s:extra", Added: []calc.IPSetMember{{Prefix: pfx("10.65.9.9/32")}}})
			if h.dp.bigCommit {
				t.Error("a partial sync is marked as a big commit")
			}
		})
	}
	t.Run("routes failed", func(t *testing.T) {
		h := newHarness(t, Config{Hostname: "host1"})
		h.routes.fail = []error{errors.New("routes refused")}
		for _, u := range big {
			h.dp.model.apply(u)
		}
		if _, err := h.dp.apply(context.Background()); err == nil {
			t.Fatal("the apply did not fail")
		}
		if !h.dp.bigCommit {
			t.Error("the big commit of an apply that failed elsewhere is not marked for a release")
		}
	})
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

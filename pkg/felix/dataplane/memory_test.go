package dataplane

import (
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
			if ops := h.fake.LastTransaction().Len(); (ops >= bigCommitOps) != tc.wantFirst {
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

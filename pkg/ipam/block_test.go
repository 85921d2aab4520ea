package ipam

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

func TestOrdinalAddressRoundTrip(t *testing.T) {
	cases := []struct {
		cidr string
		ord  int
		want string
	}{
		{"10.65.54.0/26", 0, "10.65.54.0"},
		{"10.65.54.0/26", 63, "10.65.54.63"},
		{"10.65.255.192/26", 63, "10.65.255.255"},
		{"fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122", 1, "fd5c:1:2:13f2:fcce:4caf:5a2d:bc41"},
		{"fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122", 63, "fd5c:1:2:13f2:fcce:4caf:5a2d:bc7f"},
		{"fd5c::ff00/120", 255, "fd5c::ffff"},
	}
	for _, c := range cases {
		cidr := netip.MustParsePrefix(c.cidr)
		got := ordinalAddr(cidr, c.ord)
		if got.String() != c.want {
			t.Errorf("ordinalAddr(%s, %d) = %s, want %s", c.cidr, c.ord, got, c.want)
		}
		back, ok := addrOrdinal(cidr, got)
		if !ok || back != c.ord {
			t.Errorf("addrOrdinal(%s, %s) = %d %v, want %d", c.cidr, got, back, ok, c.ord)
		}
	}
	if _, ok := addrOrdinal(netip.MustParsePrefix("10.65.0.0/26"), netip.MustParseAddr("10.65.0.64")); ok {
		t.Error("address outside the block got an ordinal")
	}
}

func TestNewBlockLayout(t *testing.T) {
	now := time.Unix(1795958197, 868074335)
	b := newBlock(netip.MustParsePrefix("10.65.0.0/26"), "host-a", now)
	if len(b.Allocations) != 64 || len(b.Unallocated) != 64 || b.Unallocated[0] != 0 || b.Unallocated[63] != 63 {
		t.Fatalf("bad layout: %d allocations, unallocated %v", len(b.Allocations), b.Unallocated)
	}
	if *b.Affinity != "host:host-a" || b.SequenceNumber != uint64(now.UnixNano()) || b.AffinityClaimTime != "2026-11-29T13:16:37Z" {
		t.Errorf("affinity %q seq %d claim %q", *b.Affinity, b.SequenceNumber, b.AffinityClaimTime)
	}
}

func TestAssignAndReleaseSequence(t *testing.T) {
	// Replays what the fixture records: ADD c1, ADD c2, DEL c2 on a fresh block.
	b := newBlock(netip.MustParsePrefix("10.65.54.0/26"), "host-a", time.Unix(0, 1000))
	attrs := map[string]string{"node": "host-a"}
	if got := assignN(b, 1, "net.c1", attrs); !slices.Equal(got, []int{0}) {
		t.Fatalf("first assignment took %v", got)
	}
	if got := assignN(b, 1, "net.c2", attrs); !slices.Equal(got, []int{1}) {
		t.Fatalf("second assignment took %v", got)
	}
	if len(b.Attributes) != 2 || b.SequenceNumberForAllocation["1"] != 1001 {
		t.Fatalf("attributes %v seq-for-alloc %v", b.Attributes, b.SequenceNumberForAllocation)
	}
	counts := release(b, ordinalsOfHandle(b, "net.c2"))
	if counts["net.c2"] != 1 || len(counts) != 1 {
		t.Fatalf("release counts %v", counts)
	}
	if b.SequenceNumber != 1003 || b.SequenceNumberForAllocation["0"] != 1000 || len(b.SequenceNumberForAllocation) != 1 {
		t.Errorf("seq %d seq-for-alloc %v", b.SequenceNumber, b.SequenceNumberForAllocation)
	}
	if len(b.Attributes) != 1 || *b.Attributes[0].HandleID != "net.c1" || *b.Allocations[0] != 0 {
		t.Errorf("attributes not compacted: %+v", b.Attributes)
	}
	if b.Unallocated[0] != 2 || b.Unallocated[len(b.Unallocated)-1] != 1 || freeCount(b) != 63 {
		t.Errorf("released ordinal must go to the tail: %v", b.Unallocated)
	}
}

func TestAssignSharesAttributesPerHandle(t *testing.T) {
	b := newBlock(netip.MustParsePrefix("10.65.0.0/28"), "h", time.Unix(0, 1))
	assignN(b, 2, "net.a", nil)
	assignN(b, 1, "net.b", nil)
	assignN(b, 1, "net.a", nil)
	if len(b.Attributes) != 2 {
		t.Fatalf("want 2 attributes (one per handle), got %d", len(b.Attributes))
	}
	if got := ordinalsOfHandle(b, "net.a"); !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("net.a holds %v", got)
	}
	release(b, []int{0})
	if got := ordinalsOfHandle(b, "net.a"); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("after releasing 0, net.a holds %v", got)
	}
}

func TestAssignOrdinal(t *testing.T) {
	b := newBlock(netip.MustParsePrefix("10.65.0.0/28"), "h", time.Unix(0, 1))
	if err := assignOrdinal(b, 5, "x", nil); err != nil {
		t.Fatal(err)
	}
	if err := assignOrdinal(b, 5, "y", nil); err != ErrAlreadyAssigned {
		t.Fatalf("second assignment of ordinal 5: %v", err)
	}
	if slices.Contains(b.Unallocated, 5) || len(b.Unallocated) != 15 {
		t.Errorf("ordinal 5 still free: %v", b.Unallocated)
	}
	// The next automatic assignment skips 5.
	got := assignN(b, 6, "z", nil)
	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 6}) {
		t.Errorf("auto-assign took %v", got)
	}
}

func TestAssignDropsStaleFreeEntries(t *testing.T) {
	b := newBlock(netip.MustParsePrefix("10.65.0.0/30"), "h", time.Unix(0, 1))
	other := "other"
	b.Attributes = []api.AllocationAttribute{{HandleID: &other}}
	zero := 0
	b.Allocations[0] = &zero // allocated but still listed free: must not be handed out twice
	got := assignN(b, 4, "z", nil)
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("took %v", got)
	}
}

func TestFreeListProblem(t *testing.T) {
	b := newBlock(netip.MustParsePrefix("10.65.0.0/30"), "h", time.Unix(0, 1))
	if p := freeListProblem(b); p != "" {
		t.Errorf("fresh block: %s", p)
	}
	assignN(b, 1, "a", nil)
	b.Unallocated = append(b.Unallocated, 0)
	if p := freeListProblem(b); p == "" {
		t.Error("allocated ordinal listed free was not reported")
	}
}

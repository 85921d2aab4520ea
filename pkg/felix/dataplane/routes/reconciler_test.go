package routes

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/internal/logtest"
)

var ctx = context.Background()

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func wl(dst, dev string) Route { return Route{Dst: pfx(dst), Dev: dev} }
func vx(dst, gw string) Route {
	return Route{Dst: pfx(dst), Dev: "vxlan.calico", Gateway: addr(gw), Onlink: true}
}

func apply(t *testing.T, r *Reconciler, desired []Route) Stats {
	t.Helper()
	st, err := r.Apply(ctx, desired)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return st
}

func newFakeWithLinks(names ...string) *Fake {
	f := NewFake()
	for _, n := range names {
		f.AddLink(n)
	}
	return f
}

// states are desired route lists with the kernel's routes after applying each.
var states = []struct {
	name    string
	desired []Route
	want    []string
}{
	{"empty", nil, nil},
	{"workloads and blocks", []Route{
		wl("10.65.1.5/32", "cali1"),
		wl("10.65.1.6/32", "cali2"),
		vx("10.65.2.0/26", "10.65.2.0"),
		{Dst: pfx("10.65.1.0/26"), Blackhole: true},
	}, []string{
		"10.65.1.5/32 dev cali1 scope link proto 80",
		"10.65.1.6/32 dev cali2 scope link proto 80",
		"10.65.2.0/26 via 10.65.2.0 dev vxlan.calico onlink proto 80",
		"blackhole 10.65.1.0/26 proto 80",
	}},
	{"v6 and a table", []Route{
		wl("fd5c::5/128", "cali1"),
		{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3"), Table: 100},
		{Dst: pfx("10.65.1.5/32"), Dev: "cali2", Src: addr("198.18.0.1")},
	}, []string{
		"10.65.1.5/32 dev cali2 scope link src 198.18.0.1 proto 80",
		"10.65.3.0/26 via 198.18.0.3 dev eth0 table 100 proto 80",
		"fd5c::5/128 dev cali1 proto 80",
	}},
	{"moved gateway", []Route{
		vx("10.65.2.0/26", "10.65.2.64"),
		wl("10.65.1.6/32", "cali2"),
	}, []string{
		"10.65.1.6/32 dev cali2 scope link proto 80",
		"10.65.2.0/26 via 10.65.2.64 dev vxlan.calico onlink proto 80",
	}},
}

func TestStates(t *testing.T) {
	f := newFakeWithLinks("eth0", "cali1", "cali2", "vxlan.calico")
	r := New(f, Ownership{}, logtest.Logger(t))
	for _, s := range states {
		apply(t, r, s.desired)
		if d := cmp.Diff(s.want, f.Dump()); d != "" {
			t.Errorf("state %q (-want +got):\n%s", s.name, d)
		}
	}
}

// TestConvergesFromAnyState replays the states in random order, with resyncs at random, and checks
// that every Apply reaches exactly the state's routes.
func TestConvergesFromAnyState(t *testing.T) {
	f := newFakeWithLinks("eth0", "cali1", "cali2", "vxlan.calico")
	r := New(f, Ownership{}, logtest.Logger(t))
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 5*len(states)*len(states); i++ {
		s := states[rng.Intn(len(states))]
		if rng.Intn(3) == 0 {
			r.RequestResync()
		}
		apply(t, r, s.desired)
		if d := cmp.Diff(s.want, f.Dump()); d != "" {
			t.Fatalf("step %d state %q (-want +got):\n%s", i, s.name, d)
		}
		// A second Apply of the same state writes nothing.
		before := f.Writes
		if st := apply(t, r, s.desired); st.Replaced+st.Deleted != 0 || f.Writes != before {
			t.Fatalf("step %d: re-applying %q wrote %d routes", i, s.name, f.Writes-before)
		}
	}
}

func manyRoutes(n int) []Route {
	out := make([]Route, n)
	for i := range out {
		out[i] = wl(fmt.Sprintf("10.65.%d.%d/32", i/256, i%256), "cali1")
	}
	return out
}

func TestPartialApplyTouchesOnlyChanges(t *testing.T) {
	f := newFakeWithLinks("cali1", "cali2")
	r := New(f, Ownership{}, logtest.Logger(t))
	desired := manyRoutes(500)
	st := apply(t, r, desired)
	if !st.Full || st.Replaced != 500 || f.Lists != 1 {
		t.Fatalf("first apply: %+v lists=%d", st, f.Lists)
	}
	desired[7].Dev = "cali2"
	desired = append(desired[:100], desired[101:]...) // one removed
	writes := f.Writes
	st = apply(t, r, desired)
	if st.Full || st.Replaced != 1 || st.Deleted != 1 || f.Writes-writes != 2 || f.Lists != 1 {
		t.Fatalf("partial apply: %+v writes=%d lists=%d", st, f.Writes-writes, f.Lists)
	}
}

func TestResyncRepairsDrift(t *testing.T) {
	f := newFakeWithLinks("eth0", "cali1", "cali2")
	r := New(f, Ownership{}, logtest.Logger(t))
	desired := []Route{wl("10.65.1.5/32", "cali1"), wl("10.65.1.6/32", "cali2")}
	apply(t, r, desired)

	f.RemoveRoute(desired[0])                                           // deleted behind our back
	must(t, f.AddRoute(wl("10.65.9.9/32", "cali2"), DefaultProtocol))   // an extra route of ours
	must(t, f.AddRoute(wl("10.65.8.8/32", "eth0"), unix.RTPROT_BOOT))   // someone else's
	must(t, f.AddRoute(wl("10.65.1.6/32", "eth0"), unix.RTPROT_STATIC)) // someone else's, same dst as ours
	must(t, f.AddRoute(Route{Dst: pfx("0.0.0.0/0"), Dev: "eth0", Gateway: addr("198.18.0.254")}, unix.RTPROT_BOOT))

	// A partial apply trusts the mirror and sees nothing to do.
	if st := apply(t, r, desired); st.Replaced+st.Deleted != 0 {
		t.Fatalf("partial apply changed routes: %+v", st)
	}
	r.RequestResync()
	st := apply(t, r, desired)
	if !st.Full || st.Replaced != 2 || st.Deleted != 1 {
		t.Fatalf("resync: %+v", st)
	}
	want := []string{
		"0.0.0.0/0 via 198.18.0.254 dev eth0 proto 3",
		"10.65.1.5/32 dev cali1 scope link proto 80",
		"10.65.1.6/32 dev cali2 scope link proto 80",
		"10.65.8.8/32 dev eth0 scope link proto 3",
	}
	if d := cmp.Diff(want, f.Dump()); d != "" {
		t.Errorf("after resync (-want +got):\n%s", d)
	}
}

func TestPendingDevices(t *testing.T) {
	f := newFakeWithLinks("eth0")
	r := New(f, Ownership{}, logtest.Logger(t))
	desired := []Route{wl("10.65.1.5/32", "cali1"), wl("10.65.1.6/32", "eth0")}
	st := apply(t, r, desired)
	if st.Pending != 1 || st.Replaced != 1 {
		t.Fatalf("device missing: %+v", st)
	}
	// Still missing: no writes, one link listing per Apply at most.
	writes := f.Writes
	if st := apply(t, r, desired); st.Pending != 1 || f.Writes != writes {
		t.Fatalf("still missing: %+v writes=%d", st, f.Writes-writes)
	}
	f.AddLink("cali1")
	if st := apply(t, r, desired); st.Pending != 0 || st.Replaced != 1 {
		t.Fatalf("device appeared: %+v", st)
	}
	// The device is re-created: the kernel drops the route and the index changes.
	f.DelLink("cali1")
	f.AddLink("cali1")
	r.InterfaceChanged("cali1")
	if st := apply(t, r, desired); st.Replaced != 1 {
		t.Fatalf("device re-created: %+v", st)
	}
	want := []string{"10.65.1.5/32 dev cali1 scope link proto 80", "10.65.1.6/32 dev eth0 scope link proto 80"}
	if d := cmp.Diff(want, f.Dump()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// A new route through a down device waits for it to come up.
	f.SetLinkUp("eth0", false)
	desired = append(desired, wl("10.65.1.7/32", "eth0"))
	if st := apply(t, r, desired); st.Pending != 1 || st.Failed != 0 {
		t.Fatalf("device down: %+v", st)
	}
	f.SetLinkUp("eth0", true)
	if st := apply(t, r, desired); st.Pending != 0 || st.Replaced != 1 {
		t.Fatalf("device up: %+v", st)
	}
	desired = desired[:2]
	apply(t, r, desired)

	// The device goes away for good: the route is pending again and nothing is deleted.
	f.DelLink("cali1")
	r.InterfaceChanged("cali1")
	if st := apply(t, r, desired); st.Pending != 1 || st.Deleted != 0 {
		t.Fatalf("device deleted: %+v", st)
	}
}

func TestFailuresKeepGoingAndResync(t *testing.T) {
	f := newFakeWithLinks("cali1")
	r := New(f, Ownership{}, logtest.Logger(t))
	bad := wl("10.65.1.7/32", "cali1")
	f.FailReplace = func(kr KernelRoute) error {
		if kr.Dst == bad.Dst {
			return unix.EINVAL
		}
		return nil
	}
	desired := []Route{wl("10.65.1.5/32", "cali1"), bad, {Dst: pfx("10.65.1.8/32")} /* no device */}
	st, err := r.Apply(ctx, desired)
	if err == nil || !errors.Is(err, unix.EINVAL) || st.Failed != 2 || st.Replaced != 1 {
		t.Fatalf("Apply = %+v, %v", st, err)
	}
	f.FailReplace = nil
	st, err = r.Apply(ctx, desired[:2])
	if err != nil || !st.Full || st.Replaced != 1 {
		t.Fatalf("retry = %+v, %v", st, err)
	}
}

// recorder wraps a Handle and records the order of writes.
type recorder struct {
	Handle
	ops []string
}

func (r *recorder) ReplaceRoute(kr KernelRoute) error {
	r.ops = append(r.ops, "replace "+kr.Dst.String())
	return r.Handle.ReplaceRoute(kr)
}

func (r *recorder) DeleteRoute(kr KernelRoute) error {
	r.ops = append(r.ops, "delete "+kr.Dst.String())
	return r.Handle.DeleteRoute(kr)
}

func TestAddsBeforeDeletes(t *testing.T) {
	rec := &recorder{Handle: newFakeWithLinks("cali1")}
	r := New(rec, Ownership{}, logtest.Logger(t))
	apply(t, r, manyRoutes(20))
	rec.ops = nil
	apply(t, r, manyRoutes(40)[20:])
	seenDelete := false
	for _, op := range rec.ops {
		if strings.HasPrefix(op, "delete") {
			seenDelete = true
		} else if seenDelete {
			t.Fatalf("replace after a delete: %v", rec.ops)
		}
	}
	if len(rec.ops) != 40 {
		t.Fatalf("ops = %d, want 40", len(rec.ops))
	}
}

func TestConflictingAndInvalidRoutes(t *testing.T) {
	tests := []struct {
		name  string
		route Route
	}{
		{"no destination", Route{Dev: "cali1"}},
		{"no device", Route{Dst: pfx("10.65.1.0/26")}},
		{"blackhole with device", Route{Dst: pfx("10.65.1.0/26"), Dev: "cali1", Blackhole: true}},
		{"mixed families", Route{Dst: pfx("10.65.1.0/26"), Dev: "cali1", Gateway: addr("fd5c::1")}},
		{"conflict", wl("10.65.1.5/32", "cali2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeWithLinks("cali1", "cali2")
			r := New(f, Ownership{}, logtest.Logger(t))
			st, err := r.Apply(ctx, []Route{wl("10.65.1.5/32", "cali1"), tc.route})
			if err == nil || st.Failed != 1 || st.Replaced != 1 {
				t.Fatalf("Apply = %+v, %v", st, err)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		in   Route
		want string
	}{
		{wl("10.65.1.5/24", "cali1"), "10.65.1.0/24 dev cali1 scope link"},
		{Route{Dst: pfx("10.65.1.0/24"), Dev: "eth0", Gateway: addr("198.18.0.1")}, "10.65.1.0/24 via 198.18.0.1 dev eth0"},
		{Route{Dst: pfx("10.65.1.0/24"), Dev: "eth0", Scope: ScopeHost}, "10.65.1.0/24 dev eth0 scope host"},
		{Route{Dst: pfx("fd5c::/64"), Dev: "eth0", Scope: ScopeLink}, "fd5c::/64 dev eth0"},
		{Route{Dst: pfx("10.65.1.0/24"), Dev: "eth0", Onlink: true}, "10.65.1.0/24 dev eth0 scope link"},
	}
	for _, tc := range tests {
		c, err := canonical(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if c.String() != tc.want || c.Table != unix.RT_TABLE_MAIN {
			t.Errorf("canonical(%s) = %s table %d, want %s", tc.in, c, c.Table, tc.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

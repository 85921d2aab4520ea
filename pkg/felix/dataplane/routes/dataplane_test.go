package routes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestDataplaneRoutes: the routes the dataplane asks for (workload routes with scope link or
// the default, VXLAN routes through an onlink gateway, blackholes, routes through a device that
// appears later), with InterfaceChanged and RequestResync as the dataplane calls them.
func TestDataplaneRoutes(t *testing.T) {
	f := newFakeWithLinks("cali1", "vxlan.calico")
	s := New(f, Ownership{}, logtest.Logger(t))
	desired := []Route{
		{Dst: pfx("10.65.1.5/32"), Dev: "cali1", Scope: ScopeLink},
		{Dst: pfx("10.65.1.6/32"), Dev: "cali1"}, // ScopeAuto: the kernel's default
		{Dst: pfx("10.65.2.0/26"), Dev: "vxlan.calico", Gateway: addr("10.65.2.0"), Onlink: true},
		{Dst: pfx("10.65.1.0/26"), Blackhole: true},
		{Dst: pfx("10.65.3.0/26"), Dev: "cali9"}, // pending: no error
	}
	if _, err := s.Apply(ctx, desired); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"10.65.1.5/32 dev cali1 scope link proto 80",
		"10.65.1.6/32 dev cali1 scope link proto 80",
		"10.65.2.0/26 via 10.65.2.0 dev vxlan.calico onlink proto 80",
		"blackhole 10.65.1.0/26 proto 80",
	}
	if d := cmp.Diff(want, f.Dump()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	f.AddLink("cali9")
	s.InterfaceChanged("cali9")
	if _, err := s.Apply(ctx, desired[4:]); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"10.65.3.0/26 dev cali9 scope link proto 80"}, f.Dump()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	s.RequestResync()
	lists := f.Lists
	if _, err := s.Apply(ctx, desired[4:]); err != nil || f.Lists != lists+1 {
		t.Errorf("resync: lists %d -> %d, %v", lists, f.Lists, err)
	}
}

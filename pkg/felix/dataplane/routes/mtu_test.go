package routes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestNetnsRouteMTU: a route's MTU (felix gives the routes through tunl0 tunl0's MTU, as
// Project Calico's does) reaches the kernel, reads back equal (a resync writes nothing), is
// changed when the desired MTU changes, and is repaired when someone else changes it.
func TestNetnsRouteMTU(t *testing.T) {
	ns := newTestNS(t)
	ns.veth(t, "eth0", "eth0p")
	ns.IP(t, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	r := New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t))
	desired := func(mtu int) []Route {
		return []Route{
			{Dst: pfx("10.65.2.0/26"), Dev: "eth0", Gateway: addr("198.18.1.2"), Onlink: true, MTU: mtu},
			{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3")},
		}
	}
	if st := apply(t, r, desired(1480)); st.Replaced != 2 || st.Failed != 0 {
		t.Fatalf("first apply: %+v", st)
	}
	want := []string{"10.65.2.0/26 via 198.18.1.2 dev eth0 onlink mtu 1480", "10.65.3.0/26 via 198.18.0.3 dev eth0"}
	if d := cmp.Diff(want, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	r.RequestResync()
	if st := apply(t, r, desired(1480)); !st.Full || st.Replaced+st.Deleted != 0 {
		t.Fatalf("resync after apply: %+v", st)
	}
	if st := apply(t, r, desired(1400)); st.Replaced != 1 {
		t.Fatalf("MTU change: %+v", st)
	}
	ns.IP(t, "route", "replace", "10.65.2.0/26", "via", "198.18.1.2", "dev", "eth0", "onlink", "mtu", "1300", "proto", "80")
	r.RequestResync()
	if st := apply(t, r, desired(1400)); st.Replaced != 1 {
		t.Fatalf("resync after drift: %+v", st)
	}
	want[0] = "10.65.2.0/26 via 198.18.1.2 dev eth0 onlink mtu 1400"
	if d := cmp.Diff(want, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("routes after the repair (-want +got):\n%s", d)
	}
}

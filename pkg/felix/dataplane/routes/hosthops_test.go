package routes

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestWorkloadRouteNeverTakesHostNextHop: a route through a workload interface whose destination
// holds a next hop of the host's routes (its default gateway, a static route's gateway) is left
// out without failing the apply, the other routes written; one already written is removed once a
// resync sees the host's route. A next hop of a route through a workload interface (BIRD's, via
// a local workload peer) is the workload's, not the host's.
func TestWorkloadRouteNeverTakesHostNextHop(t *testing.T) {
	f := newFakeWithLinks("eth0", "cali1", "cali2")
	own := NewOwnership(unix.RTPROT_BOOT, []string{"cali"}, true, nil)
	r := New(f, own, logtest.Logger(t))
	if err := f.AddRoute(Route{Dst: pfx("0.0.0.0/0"), Dev: "eth0", Gateway: addr("198.18.0.2")}, unix.RTPROT_DHCP); err != nil {
		t.Fatal(err)
	}
	if err := f.AddRoute(Route{Dst: pfx("10.99.0.0/16"), Dev: "cali2", Gateway: addr("10.65.0.2"), Onlink: true}, unix.RTPROT_BIRD); err != nil {
		t.Fatal(err)
	}
	gw := Route{Dst: pfx("198.18.0.0/30"), Dev: "cali1", Owner: "endpoint a"}
	peer := wl("10.65.0.2/32", "cali2")
	st := apply(t, r, []Route{gw, peer, wl("10.65.0.1/32", "cali1")})
	if st.Refused != 1 || st.Failed != 0 {
		t.Errorf("stats %+v, want 1 refused, 0 failed", st)
	}
	dump := f.Dump()
	if !slices.Contains(dump, "10.65.0.1/32 dev cali1 scope link proto 80") || !slices.Contains(dump, "10.65.0.2/32 dev cali2 scope link proto 80") ||
		slices.ContainsFunc(dump, func(s string) bool { return strings.HasPrefix(s, "198.18.0.0/30") }) {
		t.Errorf("kernel routes %q: want both workloads' routes, none to the gateway", dump)
	}

	// Written before the host's route existed: removed at the next resync.
	f.RemoveRoute(Route{Dst: pfx("0.0.0.0/0"), Dev: "eth0"})
	r.RequestResync()
	apply(t, r, []Route{gw})
	if !slices.Contains(f.Dump(), "198.18.0.0/30 dev cali1 scope link proto 80") {
		t.Fatalf("without the host's route the workload's is not written: %q", f.Dump())
	}
	if err := f.AddRoute(Route{Dst: pfx("0.0.0.0/0"), Dev: "eth0", Gateway: addr("198.18.0.2")}, unix.RTPROT_DHCP); err != nil {
		t.Fatal(err)
	}
	r.RequestResync()
	if st := apply(t, r, []Route{gw}); st.Refused != 1 || slices.Contains(f.Dump(), "198.18.0.0/30 dev cali1 scope link proto 80") {
		t.Errorf("after a resync seeing the host's gateway: %+v, kernel %q; want the workload's route removed", st, f.Dump())
	}
}

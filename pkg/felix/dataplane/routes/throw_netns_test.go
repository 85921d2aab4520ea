package routes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestNetnsThrowRoutes: throw routes (felix's WireGuard table) in tables above 255, both
// families, are written, read back as written (a resync and a restart write nothing) and
// deleted.
func TestNetnsThrowRoutes(t *testing.T) {
	ns := newTestNS(t)
	r := New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t))
	desired := []Route{
		{Dst: pfx("10.65.5.0/26"), Throw: true, Table: 1000},
		{Dst: pfx("10.65.6.7/32"), Throw: true, Table: 1000},
		{Dst: pfx("fd5c:3::/122"), Throw: true, Table: 1001},
	}
	if st := apply(t, r, desired); st.Replaced != len(desired) || st.Failed != 0 {
		t.Fatalf("first apply: %+v", st)
	}
	if d := cmp.Diff([]string{"throw 10.65.5.0/26 table 1000", "throw 10.65.6.7 table 1000"}, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("IPv4 routes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"throw fd5c:3::/122 dev lo table 1001 metric 1024 pref medium"}, ns.routes(t, "-6", "80")); d != "" {
		t.Errorf("IPv6 routes (-want +got):\n%s", d)
	}
	r.RequestResync()
	if st := apply(t, r, desired); !st.Full || st.Replaced+st.Deleted != 0 {
		t.Fatalf("resync after apply: %+v", st)
	}
	if st := apply(t, New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t)), desired); st.Replaced+st.Deleted != 0 {
		t.Fatalf("restart: %+v", st)
	}
	if st := apply(t, r, nil); st.Deleted != len(desired) {
		t.Fatalf("delete all: %+v", st)
	}
}

// TestThrowRouteShape: a throw route has no device or gateway.
func TestThrowRouteShape(t *testing.T) {
	for _, r := range []Route{
		{Dst: pfx("10.65.5.0/26"), Throw: true, Dev: "eth0"},
		{Dst: pfx("10.65.5.0/26"), Throw: true, Gateway: addr("198.18.0.1")},
		{Dst: pfx("10.65.5.0/26"), Throw: true, Blackhole: true},
	} {
		if _, err := canonical(r); err == nil {
			t.Errorf("%s accepted", r)
		}
	}
}

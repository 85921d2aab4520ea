package routes

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// These tests program only network namespaces they create (never the host's), as root.

type testNS struct {
	*netnstest.NS
	h *netlink.Handle
}

func newTestNS(t testing.TB) *testNS {
	t.Helper()
	ns := netnstest.New(t, "routes")
	return &testNS{NS: ns, h: ns.Handle(t)}
}

// veth creates an up veth pair (both ends in the namespace).
func (ns *testNS) veth(t testing.TB, a, b string) {
	t.Helper()
	ns.IP(t, "link", "add", a, "type", "veth", "peer", "name", b)
	ns.IP(t, "link", "set", a, "up")
	ns.IP(t, "link", "set", b, "up")
}

// routes lists the namespace's routes of a protocol as `ip` prints them, sorted.
func (ns *testNS) routes(t *testing.T, family, proto string) []string {
	t.Helper()
	out := ns.IP(t, family, "route", "show", "table", "all", "proto", proto)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func TestNetnsApply(t *testing.T) {
	ns := newTestNS(t)
	ns.veth(t, "eth0", "eth0p")
	ns.IP(t, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	ns.IP(t, "-6", "addr", "add", "fd5c:ffff::1/64", "dev", "eth0", "nodad")
	ns.veth(t, "cali1", "cali1p")
	r := New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t))

	desired := []Route{
		wl("10.65.1.5/32", "cali1"),
		{Dst: pfx("10.65.2.0/26"), Dev: "eth0", Gateway: addr("10.65.2.0"), Onlink: true},
		{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3")},
		{Dst: pfx("10.65.1.0/26"), Blackhole: true},
		{Dst: pfx("10.65.4.0/26"), Dev: "eth0", Gateway: addr("198.18.0.4"), Table: 100},
		{Dst: pfx("10.65.1.6/32"), Dev: "cali1", Src: addr("198.18.0.1")},
		wl("fd5c::5/128", "cali1"),
		{Dst: pfx("fd5c:1::/122"), Dev: "eth0", Gateway: addr("fd5c:ffff::2")},
		{Dst: pfx("fd5c:2::/122"), Blackhole: true},
	}
	st := apply(t, r, desired)
	if st.Replaced != len(desired) || st.Failed != 0 {
		t.Fatalf("first apply: %+v", st)
	}
	want4 := []string{
		"10.65.1.5 dev cali1 scope link",
		"10.65.1.6 dev cali1 scope link src 198.18.0.1",
		"10.65.2.0/26 via 10.65.2.0 dev eth0 onlink",
		"10.65.3.0/26 via 198.18.0.3 dev eth0",
		"10.65.4.0/26 via 198.18.0.4 dev eth0 table 100",
		"blackhole 10.65.1.0/26",
	}
	if d := cmp.Diff(want4, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("IPv4 routes (-want +got):\n%s", d)
	}
	want6 := []string{
		"blackhole fd5c:2::/122 dev lo metric 1024 pref medium",
		"fd5c:1::/122 via fd5c:ffff::2 dev eth0 metric 1024 pref medium",
		"fd5c::5 dev cali1 metric 1024 pref medium",
	}
	if d := cmp.Diff(want6, ns.routes(t, "-6", "80")); d != "" {
		t.Errorf("IPv6 routes (-want +got):\n%s", d)
	}

	// Reading the kernel back finds exactly what was written: a resync writes nothing.
	r.RequestResync()
	if st := apply(t, r, desired); !st.Full || st.Replaced+st.Deleted != 0 {
		t.Fatalf("resync after apply: %+v", st)
	}
	// A fresh Reconciler (a restart) also finds nothing to do.
	if st := apply(t, New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t)), desired); st.Replaced+st.Deleted != 0 {
		t.Fatalf("restart: %+v", st)
	}

	// Removing everything deletes only our routes.
	if st := apply(t, r, nil); st.Deleted != len(desired) {
		t.Fatalf("delete all: %+v", st)
	}
	for _, fam := range []string{"-4", "-6"} {
		if got := ns.routes(t, fam, "80"); len(got) != 0 {
			t.Errorf("left over %s: %v", fam, got)
		}
	}
	if got := ns.routes(t, "-4", "kernel"); len(got) == 0 {
		t.Errorf("kernel routes were deleted")
	}
}

func TestNetnsDriftAndPending(t *testing.T) {
	ns := newTestNS(t)
	ns.veth(t, "eth0", "eth0p")
	ns.IP(t, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	h, err := OpenNetlink(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := New(h, Ownership{}, logtest.Logger(t))
	desired := []Route{
		wl("10.65.1.5/32", "cali1"), // device does not exist yet
		{Dst: pfx("10.65.2.0/26"), Dev: "eth0", Gateway: addr("198.18.0.2")},
		{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3")},
	}
	if st := apply(t, r, desired); st.Pending != 1 || st.Replaced != 2 {
		t.Fatalf("first apply: %+v", st)
	}
	ns.IP(t, "link", "add", "cali1", "type", "veth", "peer", "name", "cali1p")
	if st := apply(t, r, desired); st.Pending != 1 || st.Failed != 0 {
		t.Fatalf("device down: %+v", st)
	}
	ns.IP(t, "link", "set", "cali1", "up")
	ns.IP(t, "link", "set", "cali1p", "up")
	if st := apply(t, r, desired); st.Pending != 0 || st.Replaced != 1 {
		t.Fatalf("after the device came up: %+v", st)
	}

	ns.IP(t, "route", "del", "10.65.2.0/26")
	ns.IP(t, "route", "replace", "10.65.3.0/26", "via", "198.18.0.9", "dev", "eth0", "proto", "80")
	ns.IP(t, "route", "add", "10.65.9.0/26", "via", "198.18.0.9", "proto", "80")
	ns.IP(t, "route", "add", "10.65.8.0/26", "via", "198.18.0.8", "proto", "static")
	r.RequestResync()
	if st := apply(t, r, desired); st.Replaced != 2 || st.Deleted != 1 {
		t.Fatalf("resync: %+v", st)
	}
	want := []string{
		"10.65.1.5 dev cali1 scope link",
		"10.65.2.0/26 via 198.18.0.2 dev eth0",
		"10.65.3.0/26 via 198.18.0.3 dev eth0",
	}
	if d := cmp.Diff(want, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("after resync (-want +got):\n%s", d)
	}
	if got := ns.routes(t, "-4", "static"); len(got) != 1 {
		t.Errorf("static routes: %v", got)
	}

	// The workload's device is re-created: its route comes back on the new device.
	ns.IP(t, "link", "del", "cali1")
	ns.veth(t, "cali1", "cali1p")
	r.InterfaceChanged("cali1")
	if st := apply(t, r, desired); st.Replaced != 1 {
		t.Fatalf("re-created device: %+v", st)
	}
	if d := cmp.Diff(want, ns.routes(t, "-4", "80")); d != "" {
		t.Errorf("after re-creation (-want +got):\n%s", d)
	}
}

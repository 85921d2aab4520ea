package routes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestOwnershipPolicy: which kernel routes are ours under Project Calico's main-table policy, for
// DeviceRouteProtocol boot (3) and another value, with and without RemoveExternalRoutes.
func TestOwnershipPolicy(t *testing.T) {
	kr := func(dst, dev string, proto, table int) KernelRoute {
		r := KernelRoute{Route: Route{Dst: pfx(dst), Dev: dev, Protocol: proto, Table: table}}
		if r.Table == 0 {
			r.Table = 254
		}
		r.Blackhole = dev == ""
		return r
	}
	routes := []struct {
		name string
		r    KernelRoute
		// ours under: boot+remove, boot+keep, 77+remove, 77+keep
		want [4]bool
	}{
		{"boot via workload", kr("10.65.0.1/32", "cali1", 3, 0), [4]bool{true, true, true, false}},
		{"static via workload", kr("10.65.0.1/32", "cali1", 4, 0), [4]bool{true, false, true, false}},
		{"bird via workload (local workload peering)", kr("10.65.50.0/24", "cali1", 12, 0), [4]bool{false, false, false, false}},
		{"80 via workload", kr("10.65.0.1/32", "cali1", 80, 0), [4]bool{true, true, true, true}},
		{"77 via workload", kr("10.65.0.1/32", "cali1", 77, 0), [4]bool{true, false, true, true}},
		{"kernel fe80::/64 via workload", kr("fe80::/64", "cali1", 2, 0), [4]bool{false, false, false, false}},
		{"boot via eth0", kr("10.65.0.0/26", "eth0", 3, 0), [4]bool{false, false, false, false}},
		{"80 via eth0", kr("10.65.0.0/26", "eth0", 80, 0), [4]bool{true, true, true, true}},
		{"77 via eth0", kr("10.65.0.0/26", "eth0", 77, 0), [4]bool{false, false, true, true}},
		{"static via vxlan.calico", kr("10.65.0.0/26", "vxlan.calico", 4, 0), [4]bool{true, true, true, true}},
		{"boot blackhole", kr("10.65.0.0/26", "", 3, 0), [4]bool{false, false, false, false}},
		{"80 blackhole", kr("10.65.0.0/26", "", 80, 0), [4]bool{true, true, true, true}},
		{"boot via workload, table 100", kr("10.65.0.1/32", "cali1", 3, 100), [4]bool{false, false, false, false}},
		{"77 via workload, table 100 (not felix's)", kr("10.65.0.1/32", "cali1", 77, 100), [4]bool{false, false, false, false}},
		{"77 via eth0, local table", kr("198.18.0.1/32", "eth0", 77, 255), [4]bool{false, false, false, false}},
		{"80 via eth0, table 100", kr("10.65.0.0/26", "eth0", 80, 100), [4]bool{true, true, true, true}},
		{"77 via wireguard.cali, WireGuard table 1", kr("10.65.0.0/26", "wireguard.cali", 77, 1), [4]bool{false, false, true, true}},
		{"boot via wireguard.cali, WireGuard table 1", kr("10.65.0.0/26", "wireguard.cali", 3, 1), [4]bool{false, false, false, false}},
		{"bird via tunl0", kr("10.65.0.0/26", "tunl0", 12, 0), [4]bool{false, false, false, false}},
		{"static via unknown interface", kr("10.65.0.1/32", "", 4, 0), [4]bool{false, false, false, false}},
	}
	owners := []Ownership{
		NewOwnership(3, []string{"cali", "tap"}, true, []string{"vxlan.calico"}, 1, 2),
		NewOwnership(3, []string{"cali", "tap"}, false, []string{"vxlan.calico"}, 1, 2),
		NewOwnership(77, []string{"cali", "tap"}, true, []string{"vxlan.calico"}, 1, 2),
		NewOwnership(77, []string{"cali", "tap"}, false, []string{"vxlan.calico"}, 1, 2),
	}
	for _, tc := range routes {
		for i, o := range owners {
			if got := o.owns(tc.r); got != tc.want[i] {
				t.Errorf("%s under %+v: ours = %v, want %v", tc.name, o, got, tc.want[i])
			}
		}
	}
	// Felix programs the IPIP pools' routes: BIRD's routes through tunl0 are its (and only those).
	ipipOwner := owners[0]
	ipipOwner.BIRDDevices = []string{"tunl0"}
	for _, tc := range []struct {
		r    KernelRoute
		want bool
	}{
		{kr("10.65.0.0/26", "tunl0", 12, 0), true},
		{kr("10.65.0.0/26", "tunl0", 4, 0), false},
		{kr("10.65.0.0/26", "eth0", 12, 0), false},
		{kr("10.65.0.0/26", "tunl0", 12, 100), false},
	} {
		if got := ipipOwner.owns(tc.r); got != tc.want {
			t.Errorf("%+v with BIRDDevices tunl0: ours = %v, want %v", tc.r, got, tc.want)
		}
	}
	if p := owners[0].Protocol; p != 80 {
		t.Errorf("DeviceRouteProtocol boot: other routes carry %d, want 80", p)
	}
	if p := owners[2].Protocol; p != 77 {
		t.Errorf("DeviceRouteProtocol 77: other routes carry %d, want 77", p)
	}
}

// TestFakeOwnershipAndPriorities: with the fake kernel, desired routes are written with their
// own protocol, metric and src or the Reconciler's protocol, and a restart under a new
// DeviceRouteProtocol converges on exactly the desired routes.
func TestFakeOwnershipAndPriorities(t *testing.T) {
	f := newFakeWithLinks("cali1", "eth0", "vxlan.calico")
	must(t, f.AddRoute(Route{Dst: pfx("10.65.9.1/32"), Dev: "cali1"}, 4))
	must(t, f.AddRoute(Route{Dst: pfx("10.65.9.2/32"), Dev: "eth0"}, 3))
	desired := []Route{
		{Dst: pfx("10.65.1.5/32"), Dev: "cali1", Metric: 1024, Protocol: 3, Src: addr("198.18.0.1")},
		{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3")},
	}
	apply(t, New(f, NewOwnership(3, []string{"cali"}, true, nil), logtest.Logger(t)), desired)
	want := []string{
		"10.65.1.5/32 dev cali1 scope link src 198.18.0.1 proto 3 metric 1024",
		"10.65.3.0/26 via 198.18.0.3 dev eth0 proto 80",
		"10.65.9.2/32 dev eth0 scope link proto 3",
	}
	if d := cmp.Diff(want, f.Dump()); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	desired[0].Protocol = 77
	apply(t, New(f, NewOwnership(77, []string{"cali"}, true, nil), logtest.Logger(t)), desired)
	want = []string{
		"10.65.1.5/32 dev cali1 scope link src 198.18.0.1 proto 77 metric 1024",
		"10.65.3.0/26 via 198.18.0.3 dev eth0 proto 77",
		"10.65.9.2/32 dev eth0 scope link proto 3",
	}
	if d := cmp.Diff(want, f.Dump()); d != "" {
		t.Errorf("after DeviceRouteProtocol 77 (-want +got):\n%s", d)
	}
}

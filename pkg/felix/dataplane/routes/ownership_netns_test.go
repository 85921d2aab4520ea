package routes

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

// mainRoutes lists a family's routes of the main table (and, IPv4, table 100) as `ip -d` prints
// them (which always names the protocol), sorted, without "unicast" and "scope global", the
// kernel's own (proto kernel) and IPv6 multicast/link-local routes.
func (ns *testNS) mainRoutes(t *testing.T, family string) []string {
	t.Helper()
	var out []string
	tables := []string{"main", "100"}
	if family == "-6" {
		tables = tables[:1]
	}
	for _, table := range tables {
		for _, l := range strings.Split(strings.TrimSpace(ns.IP(t, "-d", family, "route", "show", "table", table)), "\n") {
			l = strings.TrimPrefix(strings.Join(strings.Fields(l), " "), "unicast ")
			l = strings.Replace(l, " scope global", "", 1)
			if l == "" || strings.Contains(l, "proto kernel") || strings.HasPrefix(l, "fe80::") || strings.HasPrefix(l, "multicast") {
				continue
			}
			if table == "100" {
				l += " [table 100]"
			}
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// ownershipNS is a namespace with a workload interface cali1, a host interface eth0 holding
// 198.18.0.1/24 and fd5c:ffff::1/64, vxlan.calico, and routes of other owners: a static route
// through cali1, boot and static routes through eth0, a route of protocol 80 through eth0, a
// static route through vxlan.calico, a boot blackhole, a boot route through cali1 in table 100,
// a bird route through cali1 and a boot route through cali1.
func ownershipNS(t *testing.T) *testNS {
	ns := newTestNS(t)
	ns.veth(t, "eth0", "eth0p")
	ns.IP(t, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	ns.IP(t, "-6", "addr", "add", "fd5c:ffff::1/64", "dev", "eth0", "nodad")
	ns.veth(t, "cali1", "cali1p")
	ns.IP(t, "link", "add", "vxlan.calico", "type", "vxlan", "id", "4096", "dstport", "4789", "local", "198.18.0.1")
	ns.IP(t, "link", "set", "vxlan.calico", "up")
	for _, r := range [][]string{
		{"10.65.9.1/32", "dev", "cali1", "proto", "static"},
		{"10.65.9.2/32", "dev", "eth0", "proto", "boot"},
		{"10.65.9.3/32", "dev", "eth0", "proto", "static"},
		{"10.65.9.4/32", "dev", "eth0", "proto", "80"},
		{"10.65.9.5/32", "dev", "vxlan.calico", "proto", "static"},
		{"blackhole", "10.65.8.0/26", "proto", "boot"},
		{"10.65.9.6/32", "dev", "cali1", "proto", "boot", "table", "100"},
		{"10.65.9.7/32", "dev", "cali1", "proto", "bird"},
		{"10.65.9.8/32", "dev", "cali1", "proto", "boot"},
	} {
		ns.IP(t, append([]string{"route", "add"}, r...)...)
	}
	return ns
}

// ownershipDesired is what felix wants with the given device protocol: a workload route (IPv4
// and IPv6, metric 1024, src), a VXLAN route with the device protocol and a same-subnet route
// with our other protocol.
func ownershipDesired(deviceProto int) []Route {
	return []Route{
		{Dst: pfx("10.65.1.5/32"), Dev: "cali1", Metric: 1024, Protocol: deviceProto, Src: addr("198.18.0.1")},
		{Dst: pfx("fd5c::5/128"), Dev: "cali1", Metric: 1024, Protocol: deviceProto, Src: addr("fd5c:ffff::1")},
		{Dst: pfx("10.65.2.0/26"), Dev: "vxlan.calico", Gateway: addr("10.65.2.0"), Onlink: true, Protocol: deviceProto, Src: addr("198.18.0.1")},
		{Dst: pfx("10.65.3.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3"), Src: addr("198.18.0.1")},
	}
}

// TestNetnsOwnershipDefaults: Project Calico's defaults (DeviceRouteProtocol 3,
// RemoveExternalRoutes true): workload and VXLAN routes are written with protocol boot, the
// same-subnet route with 80, metrics and src as asked; every route through cali1 and
// vxlan.calico in the main table that is not desired goes, whatever its protocol but BIRD's
// (learnt from a workload peering with the host), and so does protocol 80 anywhere; boot and
// static routes elsewhere, the blackhole and table 100 stay.
func TestNetnsOwnershipDefaults(t *testing.T) {
	ns := ownershipNS(t)
	own := NewOwnership(3, []string{"cali"}, true, []string{"vxlan.calico"})
	r := New(NewNetlink(ns.h), own, logtest.Logger(t))
	desired := ownershipDesired(3)
	if st := apply(t, r, desired); st.Replaced != 4 || st.Deleted != 4 || st.Failed != 0 {
		t.Fatalf("apply: %+v", st)
	}
	want4 := []string{
		"10.65.1.5 dev cali1 proto boot scope link src 198.18.0.1 metric 1024",
		"10.65.2.0/26 via 10.65.2.0 dev vxlan.calico proto boot src 198.18.0.1 onlink",
		"10.65.3.0/26 via 198.18.0.3 dev eth0 proto 80 src 198.18.0.1",
		"10.65.9.2 dev eth0 proto boot scope link",
		"10.65.9.3 dev eth0 proto static scope link",
		"10.65.9.6 dev cali1 proto boot scope link [table 100]",
		"10.65.9.7 dev cali1 proto bird scope link",
		"blackhole 10.65.8.0/26 proto boot",
	}
	if d := cmp.Diff(want4, ns.mainRoutes(t, "-4")); d != "" {
		t.Errorf("IPv4 routes (-want +got):\n%s", d)
	}
	want6 := []string{"fd5c::5 dev cali1 proto boot src fd5c:ffff::1 metric 1024 pref medium"}
	if d := cmp.Diff(want6, ns.mainRoutes(t, "-6")); d != "" {
		t.Errorf("IPv6 routes (-want +got):\n%s", d)
	}
	if got := ns.IP(t, "-6", "route", "show", "fe80::/64"); !strings.Contains(got, "dev cali1") {
		t.Errorf("the kernel's fe80::/64 route through cali1 was removed: %q", got)
	}
	// A restart finds its routes and nothing else to do.
	if st := apply(t, New(NewNetlink(ns.h), own, logtest.Logger(t)), desired); st.Replaced+st.Deleted != 0 {
		t.Fatalf("restart: %+v", st)
	}
}

// TestNetnsKeepExternalRoutes: RemoveExternalRoutes false: through cali1 only boot (and 80)
// routes are ours; the static and bird routes stay.
func TestNetnsKeepExternalRoutes(t *testing.T) {
	ns := ownershipNS(t)
	r := New(NewNetlink(ns.h), NewOwnership(3, []string{"cali"}, false, []string{"vxlan.calico"}), logtest.Logger(t))
	if st := apply(t, r, ownershipDesired(3)); st.Deleted != 3 || st.Failed != 0 {
		t.Fatalf("apply: %+v", st)
	}
	got := ns.mainRoutes(t, "-4")
	for _, want := range []string{"10.65.9.1 dev cali1 proto static scope link", "10.65.9.7 dev cali1 proto bird scope link"} {
		if !slices.Contains(got, want) {
			t.Errorf("lost %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, gone := range []string{"10.65.9.8 ", "10.65.9.4 ", "10.65.9.5 "} {
		if slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, gone) }) {
			t.Errorf("%q should have been removed:\n%s", gone, strings.Join(got, "\n"))
		}
	}
}

// TestNetnsDeviceProtocolChange: a host whose routes were written by an earlier calico-host
// (every route protocol 80, workload routes metric 0) restarts with Project Calico's defaults,
// then with DeviceRouteProtocol 77: each time exactly the desired routes remain, with the new
// protocol and metric, and routes of other owners are untouched.
func TestNetnsDeviceProtocolChange(t *testing.T) {
	ns := ownershipNS(t)
	old := ownershipDesired(0)
	for i := range old {
		old[i].Metric, old[i].Src = 0, netip.Addr{}
	}
	apply(t, New(NewNetlink(ns.h), Ownership{}, logtest.Logger(t)), old)
	for _, proto := range []int{3, 77} {
		r := New(NewNetlink(ns.h), NewOwnership(proto, []string{"cali"}, false, []string{"vxlan.calico"}), logtest.Logger(t))
		apply(t, r, ownershipDesired(proto))
		name := map[int]string{3: "boot", 77: "77"}[proto]
		want := []string{
			"10.65.1.5 dev cali1 proto " + name + " scope link src 198.18.0.1 metric 1024",
			"10.65.2.0/26 via 10.65.2.0 dev vxlan.calico proto " + name + " src 198.18.0.1 onlink",
			"10.65.3.0/26 via 198.18.0.3 dev eth0 proto " + map[int]string{3: "80", 77: "77"}[proto] + " src 198.18.0.1",
			"10.65.9.1 dev cali1 proto static scope link",
			"10.65.9.2 dev eth0 proto boot scope link",
			"10.65.9.3 dev eth0 proto static scope link",
			"10.65.9.6 dev cali1 proto boot scope link [table 100]",
			"10.65.9.7 dev cali1 proto bird scope link",
			"blackhole 10.65.8.0/26 proto boot",
		}
		if d := cmp.Diff(want, ns.mainRoutes(t, "-4")); d != "" {
			t.Errorf("DeviceRouteProtocol %d: IPv4 routes (-want +got):\n%s", proto, d)
		}
		if got := ns.mainRoutes(t, "-6"); len(got) != 1 || !strings.Contains(got[0], "proto "+name) {
			t.Errorf("DeviceRouteProtocol %d: IPv6 routes %q", proto, got)
		}
	}
}

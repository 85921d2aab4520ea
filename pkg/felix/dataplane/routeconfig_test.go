package dataplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestDesiredRoutesRouteConfig: DeviceRouteProtocol goes on the workload and VXLAN routes (the
// same-subnet route and the blackhole take the Reconciler's, which is the same value when it is not boot),
// IPv4/IPv6NormalRoutePriority on the workload routes only, DeviceRouteSourceAddress(IPv6) as src
// on every main-table route of its family; and the Reconciler's ownership follows
// RemoveExternalRoutes and the interface prefixes.
func TestDesiredRoutesRouteConfig(t *testing.T) {
	rc := RouteConfig{DeviceProtocol: 77, NormalPriority: 100, NormalPriorityV6: 200,
		SourceAddr: addr("198.18.0.1"), SourceAddrV6: addr("fd5c:ffff::1"), KeepExternal: true}
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true, Routes: rc})
	h.dp.model.applyIface(iface("eth0", true, pfx("198.18.0.1/24")))
	w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withV6("fd5c::1/128"))
	h.up("cali11111111111")
	h.send(append(vxlanHosts(), w)...)
	src4, src6 := addr("198.18.0.1"), addr("fd5c:ffff::1")
	want := []routes.Route{
		{Dst: pfx("10.65.0.0/26"), Blackhole: true, Src: src4},
		{Dst: pfx("10.65.0.1/32"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 100, Protocol: 77, Src: src4},
		{Dst: pfx("10.65.1.0/26"), Dev: "vxlan.calico", Gateway: addr("10.65.1.1"), Onlink: true, Protocol: 77, Src: src4},
		{Dst: pfx("10.65.2.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3"), Onlink: true, Src: src4},
		{Dst: pfx("fd5c::1/128"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 200, Protocol: 77, Src: src6},
	}
	if diff := cmp.Diff(want, h.routes.routes(), cmpAddrs, cmpPrefixes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	own := FelixDefaults(Config{InterfacePrefixes: []string{"cali", "tap"}, Routes: rc}).routeOwnership()
	wantOwn := routes.Ownership{Protocol: 77, Exclusive: []int{77, 80}, DeviceProtocols: []int{77, 80},
		WorkloadPrefixes: []string{"cali", "tap"}, Devices: []string{"vxlan.calico", "vxlan-v6.calico"},
		BIRDDevices: []string{"tunl0"}, // ProgramClusterRoutes EnabledIPIPOnly (the default)
		Tables:      []int{1, 2}}       // the WireGuard tables (RouteTableRanges defaults)
	if d := cmp.Diff(wantOwn, own); d != "" {
		t.Errorf("ownership (-want +got):\n%s", d)
	}
	noIPIP := FelixDefaults(Config{})
	noIPIP.Routes.ClusterRoutes = calc.ClusterRoutesNoEncap
	if own := noIPIP.routeOwnership(); len(own.BIRDDevices) != 0 {
		t.Errorf("EnabledNoEncapOnly: BIRD's routes through %v are felix's", own.BIRDDevices)
	}
	if own := felixDefaults().routeOwnership(); own.Protocol != 80 || !own.RemoveExternal ||
		!cmp.Equal(own.DeviceProtocols, []int{3, 80}) || !cmp.Equal(own.WorkloadPrefixes, []string{"cali"}) {
		t.Errorf("default ownership: %+v", own)
	}
}

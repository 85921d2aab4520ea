package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// TestRouteParams: DeviceRouteProtocol, DeviceRouteSourceAddress(IPv6), RemoveExternalRoutes,
// RouteSource, IPv4/IPv6NormalRoutePriority, IPv4/IPv6ElevatedRoutePriority and
// LiveMigrationRouteConvergenceTime keep Project Calico's defaults when unset, reach
// the dataplane's Config from the datastore (typed) and the environment (text), and are not
// reported as not implemented.
func TestRouteParams(t *testing.T) {
	def, problems := Resolve()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	want := dataplane.RouteConfig{DeviceProtocol: 3, NormalPriority: 1024, NormalPriorityV6: 1024,
		ElevatedPriority: 512, ElevatedPriorityV6: 512}
	if d := cmp.Diff(want, def.Dataplane(false).Routes, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	if got := def.Dataplane(false).LiveMigrationRouteConvergenceTime; got != 30*time.Second {
		t.Errorf("default LiveMigrationRouteConvergenceTime %v", got)
	}
	if !def.RemoveExternalRoutes || def.RouteSource != "CalicoIPAM" {
		t.Errorf("defaults: RemoveExternalRoutes %v, RouteSource %q", def.RemoveExternalRoutes, def.RouteSource)
	}

	proto, off, prio4, prio6, elev4, elev6 := 77, false, 100, 200, 50, 60
	ds := SpecLayer(&api.FelixConfigurationSpec{DeviceRouteProtocol: &proto, RemoveExternalRoutes: &off,
		DeviceRouteSourceAddress: "198.18.0.1", RouteSource: "workloadips",
		IPv4NormalRoutePriority: &prio4, IPv6NormalRoutePriority: &prio6,
		IPv4ElevatedRoutePriority: &elev4, IPv6ElevatedRoutePriority: &elev6,
		LiveMigrationRouteConvergenceTime: &api.Duration{Duration: 5 * time.Second}}, nil, "h1")
	env := EnvLayer([]string{"FELIX_DEVICEROUTESOURCEADDRESSIPV6=fd5c:ffff::1"})
	c, problems := Resolve(ds, env)
	if len(problems) != 0 || len(c.NotImplemented) != 0 {
		t.Fatalf("problems %v, not implemented %v", problems, c.NotImplemented)
	}
	want = dataplane.RouteConfig{DeviceProtocol: 77, KeepExternal: true, NormalPriority: 100, NormalPriorityV6: 200,
		ElevatedPriority: 50, ElevatedPriorityV6: 60,
		SourceAddr: netip.MustParseAddr("198.18.0.1"), SourceAddrV6: netip.MustParseAddr("fd5c:ffff::1")}
	if d := cmp.Diff(want, c.Dataplane(false).Routes, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("set (-want +got):\n%s", d)
	}
	if got := c.Dataplane(false).LiveMigrationRouteConvergenceTime; got != 5*time.Second {
		t.Errorf("LiveMigrationRouteConvergenceTime %v", got)
	}
	if c.RouteSource != "WorkloadIPs" {
		t.Errorf("RouteSource %q", c.RouteSource)
	}
}

// TestRouteParamsRefused: values Project Calico's validation or the kernel would refuse are
// ignored with a problem (the default applies): addresses of the wrong family, a protocol
// outside 1..255, a priority outside 1..2147483646, an unknown route source.
func TestRouteParamsRefused(t *testing.T) {
	for _, env := range []string{
		"FELIX_DEVICEROUTESOURCEADDRESS=fd5c::1",
		"FELIX_DEVICEROUTESOURCEADDRESS=::ffff:198.18.0.1",
		"FELIX_DEVICEROUTESOURCEADDRESSIPV6=198.18.0.1",
		"FELIX_DEVICEROUTESOURCEADDRESSIPV6=::ffff:198.18.0.1",
		"FELIX_DEVICEROUTEPROTOCOL=0",
		"FELIX_DEVICEROUTEPROTOCOL=256",
		"FELIX_IPV4NORMALROUTEPRIORITY=0",
		"FELIX_IPV6NORMALROUTEPRIORITY=2147483647",
		"FELIX_IPV4ELEVATEDROUTEPRIORITY=0",
		"FELIX_IPV6ELEVATEDROUTEPRIORITY=2147483647",
		"FELIX_ROUTESOURCE=BGP",
	} {
		c, problems := Resolve(EnvLayer([]string{env}))
		if len(problems) != 1 {
			t.Errorf("%s: problems %v", env, problems)
		}
		if r := c.Dataplane(false).Routes; r.SourceAddr.IsValid() || r.SourceAddrV6.IsValid() || r.DeviceProtocol != 3 ||
			r.NormalPriority != 1024 || r.NormalPriorityV6 != 1024 || r.ElevatedPriority != 512 || r.ElevatedPriorityV6 != 512 || c.RouteSource != "CalicoIPAM" {
			t.Errorf("%s taken: %+v %q", env, r, c.RouteSource)
		}
	}
	if c, problems := Resolve(EnvLayer([]string{"FELIX_DEVICEROUTESOURCEADDRESS=none"})); len(problems) != 0 || c.DeviceRouteSourceAddress.IsValid() {
		t.Errorf("none: %v %v", problems, c.DeviceRouteSourceAddress)
	}
}

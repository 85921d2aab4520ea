package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// routeValues are the route parameters' values.
type routeValues struct {
	Protocol             int
	Src, SrcV6           netip.Addr
	RemoveExternal       bool
	Normal, NormalV6     int
	Elevated, ElevatedV6 int
	Convergence          time.Duration
	Source               calc.RouteSource
}

func routeParams(c *Config) routeValues {
	return routeValues{c.DeviceRouteProtocol, c.DeviceRouteSourceAddress, c.DeviceRouteSourceAddressIPv6,
		c.RemoveExternalRoutes, c.IPv4NormalRoutePriority, c.IPv6NormalRoutePriority,
		c.IPv4ElevatedRoutePriority, c.IPv6ElevatedRoutePriority, c.LiveMigrationRouteConvergenceTime, c.RouteSource}
}

var defaultRoutes = routeValues{Protocol: 3, RemoveExternal: true, Normal: 1024, NormalV6: 1024, Elevated: 512, ElevatedV6: 512,
	Convergence: 30 * time.Second, Source: calc.RouteSourceCalicoIPAM}

// TestRouteParams: DeviceRouteProtocol, DeviceRouteSourceAddress(IPv6), RemoveExternalRoutes,
// RouteSource, IPv4/IPv6NormalRoutePriority, IPv4/IPv6ElevatedRoutePriority and
// LiveMigrationRouteConvergenceTime keep Project Calico's defaults when unset, are applied from
// the datastore (typed) and the environment (text), and are not reported as not implemented.
func TestRouteParams(t *testing.T) {
	def, problems := Resolve()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	addrs := cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
	if d := cmp.Diff(defaultRoutes, routeParams(def), addrs); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
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
	want := routeValues{Protocol: 77, RemoveExternal: false, Normal: 100, NormalV6: 200, Elevated: 50, ElevatedV6: 60,
		Src: netip.MustParseAddr("198.18.0.1"), SrcV6: netip.MustParseAddr("fd5c:ffff::1"),
		Convergence: 5 * time.Second, Source: calc.RouteSourceWorkloadIPs}
	if d := cmp.Diff(want, routeParams(c), addrs); d != "" {
		t.Errorf("set (-want +got):\n%s", d)
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
		if r := routeParams(c); r != defaultRoutes {
			t.Errorf("%s taken: %+v", env, r)
		}
	}
	if c, problems := Resolve(EnvLayer([]string{"FELIX_DEVICEROUTESOURCEADDRESS=none"})); len(problems) != 0 || c.DeviceRouteSourceAddress.IsValid() {
		t.Errorf("none: %v %v", problems, c.DeviceRouteSourceAddress)
	}
}

package dataplane

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestVXLANMTUV6: VXLANMTU sets the MTU of vxlan.calico and VXLANMTUV6 that of vxlan-v6.calico,
// as in Project Calico (0: derived from the host MTU by package vxlan).
func TestVXLANMTUV6(t *testing.T) {
	m := newModel()
	m.apply(calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), HostIPv6: pfx("fd5c:ffff::1/64"),
		VXLANTunnelAddrV4: addr("10.65.0.1"), VXLANTunnelAddrV6: addr("fd5c::1")})
	m.apply(calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "v4", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Always"}})
	m.apply(calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "v6", CIDR: pfx("fd5c::/48"), VXLANMode: "Always"}})
	for _, tc := range []struct{ v4, v6 int }{{1400, 1380}, {0, 1300}, {1410, 0}} {
		cfg := FelixDefaults(Config{Hostname: "host1", IPv6Support: true, VXLANMTU: tc.v4, VXLANMTUV6: tc.v6})
		devs := vxlanDevices(cfg, m)
		if len(devs) != 2 || devs[0].MTU != tc.v4 || devs[1].MTU != tc.v6 {
			t.Errorf("VXLANMTU %d VXLANMTUV6 %d: devices %+v", tc.v4, tc.v6, devs)
		}
	}
}

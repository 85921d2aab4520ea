package dataplane

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// clusterPoolHosts: one pool of the given type (10.65.0.0/16, mode Always) with this host's
// block 10.65.0.0/26 and host2's 10.65.1.0/26 (host2 at 198.18.0.2, in this host's subnet; its
// VTEP 10.65.1.1), host3's tunnel address 10.65.2.9 (another subnet), an IPv6 block of host2 in a
// pool of the same type, and this host on eth0 (198.18.0.1/24, fd00:198::1/64).
func clusterPoolHosts(typ calc.PoolType) []calc.Update {
	vx, ip := "Never", "Never"
	switch typ {
	case calc.PoolVXLAN:
		vx = "Always"
	case calc.PoolIPIP:
		ip = "Always"
	}
	route := func(dst, node, nodeIP string, rt calc.RouteType, same bool) calc.Update {
		return calc.RouteUpdate{Route: &calc.Route{Dst: pfx(dst), Type: rt, DstNode: node, DstNodeIP: addr(nodeIP),
			PoolName: "p", PoolType: typ, VXLANMode: vx, IPIPMode: ip, SameSubnet: same}}
	}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), HostIPv6: pfx("fd00:198::1/64"), IPIPTunnelAddr: addr("10.65.0.1"),
			VXLANTunnelAddrV4: addr("10.65.0.1"), VXLANTunnelMAC: "66:00:00:00:00:01"},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), VXLANMode: vx, IPIPMode: ip, Type: typ}},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p6", CIDR: pfx("fd5c::/48"), VXLANMode: "Never", IPIPMode: ip, Type: typ}},
		calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host2", MAC: "66:00:00:00:00:02", TunnelAddr: addr("10.65.1.1"), ParentDeviceAddr: addr("198.18.0.2")}},
		route("10.65.0.0/26", "host1", "198.18.0.1", calc.RouteLocalWorkload, true),
		route("10.65.0.5/32", "host1", "198.18.0.1", calc.RouteLocalWorkload, true), // borrowed: no blackhole
		route("10.65.1.0/26", "host2", "198.18.0.2", calc.RouteRemoteWorkload, true),
		route("10.65.2.9/32", "host3", "198.18.5.3", calc.RouteRemoteTunnel, false),
		route("fd5c:0:0:1::/122", "host2", "fd00:198::2", calc.RouteRemoteWorkload, true),
	}
}

// TestClusterRoutesByValue: for each value of ProgramClusterRoutes and each pool encapsulation,
// felix programs exactly the routes Project Calico's felix programs: VXLAN pools' always (remote
// blocks through vxlan.calico, the local block a blackhole); IPIP pools' (IPv4 only: through tunl0
// onlink, the local block a blackhole) with Enabled and EnabledIPIPOnly; unencapsulated pools'
// (via the other host, onlink, on the interface holding this host's address; IPv6 too; the local
// block a blackhole) with Enabled and EnabledNoEncapOnly; nothing of the pool otherwise, which is
// BIRD's. tunl0 is made whoever routes through it (felix owns the device, as Project Calico's).
func TestClusterRoutesByValue(t *testing.T) {
	vxlanRoutes := []string{"blackhole 10.65.0.0/26", "10.65.1.0/26 via 10.65.1.1 dev vxlan.calico onlink"}
	ipipRoutes := []string{"blackhole 10.65.0.0/26", "10.65.1.0/26 via 198.18.0.2 dev tunl0 onlink mtu 1480",
		"10.65.2.9/32 via 198.18.5.3 dev tunl0 onlink mtu 1480"}
	noEncapRoutes := []string{"blackhole 10.65.0.0/26", "10.65.1.0/26 via 198.18.0.2 dev eth0 onlink",
		"10.65.2.9/32 via 198.18.5.3 dev eth0 onlink", // onlink: another subnet too, as Project Calico
		"fd5c:0:0:1::/122 via fd00:198::2 dev eth0 onlink"}
	want := map[string]map[calc.PoolType][]string{
		"Enabled":            {calc.PoolVXLAN: vxlanRoutes, calc.PoolIPIP: ipipRoutes, calc.PoolNoEncap: noEncapRoutes},
		"EnabledIPIPOnly":    {calc.PoolVXLAN: vxlanRoutes, calc.PoolIPIP: ipipRoutes},
		"EnabledNoEncapOnly": {calc.PoolVXLAN: vxlanRoutes, calc.PoolNoEncap: noEncapRoutes},
		"Disabled":           {calc.PoolVXLAN: vxlanRoutes},
	}
	for _, v := range calc.ClusterRouteValues {
		for _, typ := range []calc.PoolType{calc.PoolVXLAN, calc.PoolIPIP, calc.PoolNoEncap} {
			t.Run(fmt.Sprintf("%s/%s", v.Name, typ), func(t *testing.T) {
				h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
				// FelixDefaults would make the zero value (Disabled) the default: set it after.
				h.dp.cfg.Routes.ClusterRoutes = v.Value
				h.dp.model.applyIface(iface("eth0", true, pfx("198.18.0.1/24"), pfx("fd00:198::1/64")))
				h.send(clusterPoolHosts(typ)...)
				if d := cmp.Diff(want[v.Name][typ], routeLines(h)); d != "" {
					t.Errorf("routes (-want +got):\n%s", d)
				}
				if made := len(h.ipip.Requests()) > 0; made != (typ == calc.PoolIPIP) {
					t.Errorf("tunl0 made: %t, want %t", made, typ == calc.PoolIPIP)
				}
			})
		}
	}
}

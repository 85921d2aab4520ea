package dataplane

import (
	"fmt"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestEveryNetworkUpdateRunsNetworkStep: after an apply that skipped the network step (a
// policy change), each kind of update that routes, workload interfaces or statuses depend on,
// sent alone, runs it again: pools, remote and local blocks, hosts (addresses, WireGuard
// keys), VTEPs, service CIDRs, configuration, host and workload endpoints, and their removal.
// A local VXLAN block sent alone gets its blackhole route in that apply.
func TestEveryNetworkUpdateRunsNetworkStep(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1")
	h.send(wep("w1", "cali1", []string{"10.65.0.1/32"}), ipset("s:a", "10.65.0.1/32"))
	pool := &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Always", Type: calc.PoolVXLAN}
	block := &calc.Route{Dst: pfx("10.65.1.0/26"), Type: calc.RouteLocalWorkload, DstNode: "host1",
		PoolName: "p", PoolType: calc.PoolVXLAN, VXLANMode: "Always"}
	host := &calc.HostMetadata{Hostname: "host2", IPv4Addr: pfx("198.18.0.2/24"), WireguardPublicKey: "k"}
	vtep := &calc.VTEP{Node: "host2", MAC: "66:00:00:00:00:02", TunnelAddr: addr("10.65.2.0"), ParentDeviceAddr: addr("198.18.0.2")}
	hep := &calc.HostEndpoint{Name: "hep1", InterfaceName: "eth0"}
	for _, u := range []calc.Update{
		calc.IPPoolUpdate{Pool: pool},
		calc.RouteUpdate{Route: block},
		calc.HostMetadataUpdate{Host: host},
		calc.VTEPUpdate{VTEP: vtep},
		calc.ServiceCIDRsUpdate{CIDRs: []string{"10.96.0.0/12"}},
		calc.ConfigUpdate{},
		calc.HostEndpointUpdate{Endpoint: hep},
		wep("w2", "cali2", []string{"10.65.0.2/32"}),
		calc.HostEndpointRemove{Name: "hep1"},
		calc.WorkloadEndpointRemove{ID: wepID("w2")},
		calc.VTEPRemove{Node: "host2"},
		calc.HostMetadataRemove{Hostname: "host2"},
		calc.RouteRemove{Dst: block.Dst},
		calc.IPPoolRemove{Name: "p"},
	} {
		h.send(policy(gnpID("p1"), []calc.Rule{allow()}, nil))
		applies := h.routes.applies
		h.send(u)
		if h.routes.applies != applies+1 {
			t.Errorf("%T alone did not run the network step", u)
		}
		if _, ok := u.(calc.RouteUpdate); ok && !hasRoute(h.routes.routes(), "10.65.1.0/26") {
			t.Errorf("a local VXLAN block sent alone has no route: %v", fmt.Sprint(h.routes.routes()))
		}
	}
}

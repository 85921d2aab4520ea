package felix

import (
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestLocalRouteSource: FELIX_ROUTESOURCE=WorkloadIPs (the environment) wins over
// FelixConfiguration's CalicoIPAM in calc: the dataplane gets the route to another host's
// workload address, not to its IPAM block.
func TestLocalRouteSource(t *testing.T) {
	h := newHarness(t, "FELIX_ROUTESOURCE=WorkloadIPs")
	owner := "host:host-b"
	blk := syncer.Update{ID: datastore.IDOf(datastore.BlockPrefix + "ipv4/block/10.65.1.0-26"),
		Value: &api.AllocationBlock{CIDR: "10.65.1.0/26", Affinity: &owner, Allocations: make([]*int, 64)}}
	name := api.WorkloadEndpointName("host-b", "cni", "b", "eth0")
	wep := resource("workloadendpoints", "ns/"+name, &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Node: "host-b", Workload: "b", Endpoint: "eth0",
			InterfaceName: "calib", IPNetworks: []string{"10.65.1.2/32"}}})
	dp := h.ready(&api.FelixConfigurationSpec{RouteSource: "CalicoIPAM"}, ipPool("p", "Always", false), blk, wep)
	routeTo := func(dst string) func(calc.Update) bool {
		return func(u calc.Update) bool {
			r, ok := u.(calc.RouteUpdate)
			return ok && r.Route.Dst == netip.MustParsePrefix(dst)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !dp.has(routeTo("10.65.1.2/32")) {
		if time.Now().After(deadline) {
			t.Fatalf("no route to the workload address (%d batches)", len(dp.received()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if dp.has(routeTo("10.65.1.0/26")) {
		t.Error("a route to the IPAM block was sent")
	}
	if h.daemon.cfg.RouteSource != calc.RouteSourceWorkloadIPs {
		t.Errorf("resolved RouteSource %v", h.daemon.cfg.RouteSource)
	}
}

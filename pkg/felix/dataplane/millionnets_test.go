package dataplane

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	store "github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// millionNets is a valid GlobalNetworkSet of 1,000,000 nets (every other address of
// 11.0.0.0/8, none adjacent) plus extra.
func millionNets(t testing.TB, extra ...string) *api.GlobalNetworkSet {
	nets := make([]string, 0, 1_000_000+len(extra))
	for i := range 1_000_000 {
		v := 11<<24 | 2*i
		nets = append(nets, fmt.Sprintf("%d.%d.%d.%d/32", v>>24, v>>16&255, v>>8&255, v&255))
	}
	gns := &api.GlobalNetworkSet{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkSet", APIVersion: "projectcalico.org/v3"},
		ObjectMeta: api.ObjectMeta{Name: "million", Labels: map[string]string{"set": "million"}},
		Spec:       api.NetworkSetSpec{Nets: append(nets, extra...)}}
	if err := store.Validate(gns); err != nil {
		t.Fatalf("the network set does not validate: %v", err)
	}
	return gns
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestKernelMillionNets: a GlobalNetworkSet of a million nets, denied by a policy, goes through
// calc and the dataplane into the kernel as one interval set, and is enforced with real
// packets: a workload whose address is in it is dropped, another is not. Time and memory are
// logged (not asserted).
func TestKernelMillionNets(t *testing.T) {
	if testing.Short() {
		t.Skip("big")
	}
	applyTimeout = 5 * time.Minute
	t.Cleanup(func() { applyTimeout = 10 * time.Second })
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	c := tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	listenTCP(t, b, ipB, 8080)
	before := heapInUse()
	start := time.Now()
	g := calc.New("host1", testLogger(t))
	res := "/calico/resources/v3/projectcalico.org/"
	wl := func(ctr, iface, ip string) syncer.Update {
		name := api.WorkloadEndpointName("host1", "cni", ctr, "eth0")
		w := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "ns1", Labels: map[string]string{"app": ctr}},
			Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Node: "host1", Workload: ctr, ContainerID: ctr, Endpoint: "eth0",
				InterfaceName: iface, IPNetworks: []string{ip + "/32"}}}
		return syncer.Update{ID: store.IDOf(res + "workloadendpoints/ns1/" + name), Value: w}
	}
	pol := &api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "deny-million"}, Spec: api.GlobalNetworkPolicySpec{
		Selector: "app == 'b'", Types: []string{"Ingress"},
		Ingress: []api.Rule{{Action: "Deny", Source: api.EntityRule{Selector: "set == 'million'"}}, {Action: "Allow"}}}}
	open := &api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "egress"}, Spec: api.GlobalNetworkPolicySpec{
		Selector: "all()", Types: []string{"Egress"}, Egress: []api.Rule{{Action: "Allow"}}}}
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		{ID: store.IDOf(res + "globalnetworksets/million"), Value: millionNets(t, ipA+"/32")},
		{ID: store.IDOf(res + "globalnetworkpolicies/deny-million"), Value: pol},
		{ID: store.IDOf(res + "globalnetworkpolicies/egress"), Value: open},
		wl("a", ifA, ipA), wl("b", ifB, ipB), wl("c", "cali0000000000c", "10.65.0.3"),
	}})
	ups := g.Flush()
	calcTime := time.Since(start)
	k := startDataplane(t, tp, Config{}, ups...)
	total := time.Since(start)
	t.Logf("1,000,000 nets: calc %v, calc+dataplane to the kernel %v; heap in use %d MiB more than before",
		calcTime, total, (int64(heapInUse())-int64(before))>>20)
	check(t, "million nets",
		expectation{"a (in the set) to b", func() bool { return canTCP(t, a, ipB, 8080) }, false},
		expectation{"c (not in the set) to b", func() bool { return canTCP(t, c, ipB, 8080) }, true})
	// The periodic full resync: with nothing else committed, then after another program's
	// commits (the set's elements are not read back: trusted).
	resync := func(what string) {
		k.dp.nft.RequestFullSync()
		start := time.Now()
		k.send()
		t.Logf("full resync with the million-net set, %s: %v", what, time.Since(start))
	}
	resync("nothing else committed")
	for i, verb := range []string{"add", "delete"} {
		tp.host.Exec(t, "nft", verb, "table", "ip", "other")
		resync(fmt.Sprint("after another program's commit ", i+1))
	}
	check(t, "million nets after the resyncs",
		expectation{"a (in the set) to b", func() bool { return canTCP(t, a, ipB, 8080) }, false},
		expectation{"c (not in the set) to b", func() bool { return canTCP(t, c, ipB, 8080) }, true})
	runtime.KeepAlive(g)
	runtime.KeepAlive(k)
}

package dataplane

import (
	"context"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

const fuzzResources = "/calico/resources/v3/projectcalico.org/"

// fuzzKeys are the keys a fuzzed object is stored under, by kind byte (mod len).
var fuzzKeys = []string{
	fuzzResources + "globalnetworkpolicies/fz",
	fuzzResources + "networkpolicies/ns1/fz",
	fuzzResources + "profiles/fz",
	fuzzResources + "globalnetworksets/fz",
	fuzzResources + "networksets/ns1/fz",
	fuzzResources + "profiles/kns.ns1",
}

// fuzzBase is what the fuzzed object lands among: a local workload in namespace ns1 (v4 and
// v6) using profile kns.ns1 and selected by a policy, and a remote workload.
func fuzzBase() []syncer.Update {
	wl := func(node, ctr, ip4, ip6 string, labels map[string]string) syncer.Update {
		name := api.WorkloadEndpointName(node, "cni", ctr, "eth0")
		w := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "ns1", Labels: labels},
			Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Node: node, Workload: ctr, ContainerID: ctr, Endpoint: "eth0",
				InterfaceName: "cali" + ctr, IPNetworks: []string{ip4, ip6}, Profiles: []string{"kns.ns1"},
				Ports: []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 80}}}}
		return syncer.Update{ID: datastore.IDOf(fuzzResources + "workloadendpoints/ns1/" + name), Value: w, Revision: 1}
	}
	all := &api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "base"},
		Spec: api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{{Action: "Pass"}}, Egress: []api.Rule{{Action: "Pass"}}}}
	return []syncer.Update{
		wl("h1", "local000000", "10.65.0.1/32", "fd5c::1/128", map[string]string{"role": "web", "app": "fz"}),
		wl("h2", "remote00000", "10.65.1.1/32", "fd5c::101/128", map[string]string{"role": "db"}),
		{ID: datastore.IDOf(fuzzResources + "globalnetworkpolicies/base"), Value: all, Revision: 1},
	}
}

// FuzzPolicyToKernel: arbitrary bytes stored as a policy, profile or network set go through
// felix's decoder (decode and validation), the calculation graph, rule rendering and a commit
// into the nft fake (which checks what the kernel checks). Nothing may panic, and whatever the
// decoder delivers (valid, or invalid and failing closed) must be committed whole: no refusal,
// nothing quarantined.
func FuzzPolicyToKernel(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.kind, []byte(s.json))
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		key := fuzzKeys[int(kind)%len(fuzzKeys)]
		id := datastore.IDOf(key)
		v, err := syncer.FailClosedDecoder(id, body, 2)
		if err != nil || v == nil {
			return // treated as absent: covered by the syncer's own tests
		}
		g := calc.New("h1", testLogger(t))
		ups := append(fuzzBase(), syncer.Update{ID: id, Value: v, Revision: 2})
		g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups})
		h := newHarness(t, Config{IPv6Support: true})
		h.up("calilocal000000")
		for _, u := range g.Flush() {
			h.dp.model.apply(u)
		}
		if _, err := h.dp.apply(context.Background()); err != nil {
			t.Fatalf("apply: %v\ninput: %s", err, body)
		}
		if !strings.Contains(h.fake.Dump(), `"calilocal000000"`) {
			t.Fatalf("the local workload is not programmed\ninput: %s", body)
		}
		if n := h.dp.Quarantined(); n != 0 {
			t.Fatalf("%d objects quarantined: %v\ninput: %s", n, h.dp.quar.summary(), body)
		}
	})
}

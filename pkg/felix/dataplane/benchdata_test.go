package dataplane

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// The benchmark input has the calc bench's shape: 1,000 local workload endpoints, 10,000
// remote ones and 1,000 global policies, run through the real calculation graph. Labels: app
// (300 values), role (50 values), namespace (10). Policy j selects app j%300 (so each local
// endpoint has about 3.3 policies), allows tcp 80 and 443 from role j%50, named port "http"
// from role (j+1)%50 for every tenth policy, and egress to app (j+1)%300 and udp 53 to
// 198.18.0.0/16. Each namespace has a profile allowing ingress from its namespace.

const resPrefix = "/calico/resources/v3/projectcalico.org/"

// benchShape sizes the generated datastore.
type benchShape struct {
	local, remote, policies int
}

var calcBenchShape = benchShape{local: 1000, remote: 10000, policies: 1000}

// benchUpdates runs the calculation graph on the generated snapshot and returns its output.
func benchUpdates(tb testing.TB, s benchShape) []calc.Update {
	tb.Helper()
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: benchSnapshot(s)})
	ups := g.Flush()
	if len(ups) == 0 {
		tb.Fatal("calc produced no updates")
	}
	return ups
}

func benchSnapshot(s benchShape) []syncer.Update {
	var out []syncer.Update
	add := func(key string, v any) {
		out = append(out, syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: int64(len(out) + 1)})
	}
	for ns := range 10 {
		name := fmt.Sprintf("ns%d", ns)
		add(resPrefix+"profiles/"+name, &api.Profile{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.ProfileSpec{
			Ingress: []api.Rule{{Action: "Allow", Source: api.EntityRule{Selector: fmt.Sprintf("ns == '%s'", name)}}},
			Egress:  []api.Rule{{Action: "Allow"}},
		}})
	}
	for j := range s.policies {
		name := fmt.Sprintf("pol-%04d", j)
		add(resPrefix+"globalnetworkpolicies/"+name, benchPolicy(name, j))
	}
	for i := range s.local + s.remote {
		ns, node := fmt.Sprintf("ns%d", i%10), "host1"
		if i >= s.local {
			node = fmt.Sprintf("host%d", 2+i%100)
		}
		ctr := fmt.Sprintf("c%05d", i)
		name := api.WorkloadEndpointName(node, "cni", ctr, "eth0")
		add(resPrefix+"workloadendpoints/"+ns+"/"+name, benchWEP(i, node, ns, ctr, name))
	}
	return out
}

func benchPolicy(name string, j int) *api.GlobalNetworkPolicy {
	tcp := api.ProtocolFromString("TCP")
	udp := api.ProtocolFromString("UDP")
	spec := api.GlobalNetworkPolicySpec{
		Selector: fmt.Sprintf("app == 'app%03d'", j%300),
		Ingress: []api.Rule{{Action: "Allow", Protocol: &tcp,
			Source:      api.EntityRule{Selector: fmt.Sprintf("role == 'role%02d'", j%50)},
			Destination: api.EntityRule{Ports: []api.Port{api.SinglePort(80), api.SinglePort(443)}}}},
		Egress: []api.Rule{
			{Action: "Allow", Destination: api.EntityRule{Selector: fmt.Sprintf("app == 'app%03d'", (j+1)%300)}},
			{Action: "Allow", Protocol: &udp, Destination: api.EntityRule{Nets: []string{"198.18.0.0/16"}, Ports: []api.Port{api.SinglePort(53)}}},
		},
	}
	if j%10 == 0 {
		spec.Ingress = append(spec.Ingress, api.Rule{Action: "Allow", Protocol: &tcp,
			Source:      api.EntityRule{Selector: fmt.Sprintf("role == 'role%02d'", (j+1)%50)},
			Destination: api.EntityRule{Ports: []api.Port{api.NamedPort("http")}}})
	}
	return &api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec}
}

func benchWEP(i int, node, ns, ctr, name string) *api.WorkloadEndpoint {
	return &api.WorkloadEndpoint{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			"app": fmt.Sprintf("app%03d", i%300), "role": fmt.Sprintf("role%02d", i%50), "ns": ns,
		}},
		Spec: api.WorkloadEndpointSpec{
			Orchestrator: "cni", Node: node, Workload: ctr, ContainerID: ctr, Endpoint: "eth0",
			InterfaceName: benchIface(i), IPNetworks: []string{fmt.Sprintf("10.65.%d.%d/32", i/250, 1+i%250)},
			Profiles: []string{ns},
			Ports:    []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 8080}},
		},
	}
}

func benchIface(i int) string { return fmt.Sprintf("cali%011d", i) }

// TestBenchShape checks that the generated input has the intended shape.
func TestBenchShape(t *testing.T) {
	ups := benchUpdates(t, calcBenchShape)
	counts := map[string]int{}
	for _, u := range ups {
		counts[fmt.Sprintf("%T", u)]++
	}
	if counts["calc.WorkloadEndpointUpdate"] != 1000 || counts["calc.ActivePolicyUpdate"] != 1000 || counts["calc.IPSetUpdate"] < 300 {
		t.Errorf("unexpected shape: %v", counts)
	}
	h := newHarness(t, Config{Hostname: "host1"})
	h.send(ups...)
	h.dp.buildRuleset()
	chains, sets := h.dp.ruleset.Counts()
	t.Logf("updates %v; tables: %d chains, %d sets and maps", counts, chains, sets)
}

package policydiff

import (
	"context"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// Helpers for hand-written universes, shared by the evaluator's unit tests and the regression
// cases of former mismatches.

func wl(i int) slot { return localSlots()[i] }

func gnpObj(name, tierName string, order *float64, sel string, types []string, in, out []api.Rule) *api.GlobalNetworkPolicy {
	return &api.GlobalNetworkPolicy{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkPolicy", APIVersion: api.APIVersion},
		ObjectMeta: policyMeta(policyName(tierName, name), "", tierName),
		Spec:       api.GlobalNetworkPolicySpec{Tier: tierName, Order: order, Selector: sel, Types: types, Ingress: in, Egress: out}}
}

func npObj(ns, name, tierName string, order *float64, sel string, types []string, in, out []api.Rule) *api.NetworkPolicy {
	return &api.NetworkPolicy{TypeMeta: api.TypeMeta{Kind: "NetworkPolicy", APIVersion: api.APIVersion},
		ObjectMeta: policyMeta(policyName(tierName, name), ns, tierName),
		Spec:       api.NetworkPolicySpec{Tier: tierName, Order: order, Selector: sel, Types: types, Ingress: in, Egress: out}}
}

func profileObj(name string, labels map[string]string, in, out []api.Rule) *api.Profile {
	return &api.Profile{TypeMeta: api.TypeMeta{Kind: "Profile", APIVersion: api.APIVersion}, ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.ProfileSpec{Ingress: in, Egress: out, LabelsToApply: labels}}
}

func gnsObj(name string, labels map[string]string, nets ...string) *api.GlobalNetworkSet {
	return &api.GlobalNetworkSet{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkSet", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: name, Labels: labels}, Spec: api.NetworkSetSpec{Nets: nets}}
}

func allow() api.Rule { return api.Rule{Action: api.ActionAllow} }

// localWEPs gives every local slot an endpoint in ns1 with the profiles named (the workloads
// must all have endpoints for felix to route to them).
func localWEPs(labels map[int]map[string]string, profiles map[int][]string) []*api.WorkloadEndpoint {
	var out []*api.WorkloadEndpoint
	for i, s := range localSlots() {
		out = append(out, s.wep("ns1", labels[i], profiles[i], nil))
	}
	return out
}

func tcp(from, to string, src, dst netip.Addr, dport uint16) Probe {
	return Probe{Packet: Packet{Src: src, Dst: dst, Proto: protoTCP, SrcPort: 40000 + dport, DstPort: dport}, From: from, To: to}
}

func udp(from, to string, src, dst netip.Addr, dport uint16) Probe {
	p := tcp(from, to, src, dst, dport)
	p.Proto = protoUDP
	return p
}

// caseRunner runs hand-written universes through one harness, each as its own scenario.
type caseRunner struct {
	rn  *runner
	ctx context.Context
	idx int
}

// check applies u, sends the probes and fails for every packet whose fate differs from
// Project Calico's (the evaluator's, which the test also states as want).
func (c *caseRunner) check(t *testing.T, u *Universe, probes []Probe, want []bool) {
	t.Helper()
	c.idx++
	addHarnessObjects(u, 60000+c.idx, true)
	ev, err := NewEvaluator(u)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario{Index: 60000 + c.idx, U: u, Ev: ev}
	for i, p := range probes {
		sc.add(p)
		if got := sc.Probes[i].Want; got != want[i] {
			t.Fatalf("evaluator: %s -> delivered=%v, the case says %v\n%v", p.Packet, got, want[i], sc.Probes[i].Trace)
		}
	}
	out, err := c.rn.Run(c.ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Mismatch() {
			t.Error(mismatchReport(sc, o))
		}
	}
}

package dataplane

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// removal returns the key of an update and the update that removes what it added.
func removal(u calc.Update) (string, calc.Update) {
	switch u := u.(type) {
	case calc.IPSetUpdate:
		return "ipset/" + u.ID, calc.IPSetRemove{ID: u.ID}
	case calc.ActivePolicyUpdate:
		return fmt.Sprintf("policy/%v", u.ID), calc.ActivePolicyRemove{ID: u.ID}
	case calc.ActiveProfileUpdate:
		return "profile/" + u.Name, calc.ActiveProfileRemove{Name: u.Name}
	case calc.WorkloadEndpointUpdate:
		return fmt.Sprintf("wep/%v", u.ID), calc.WorkloadEndpointRemove{ID: u.ID}
	case calc.HostEndpointUpdate:
		return "hep/" + u.Endpoint.Name, calc.HostEndpointRemove{Name: u.Endpoint.Name}
	case calc.IPPoolUpdate:
		return "pool/" + u.Pool.Name, calc.IPPoolRemove{Name: u.Pool.Name}
	case calc.RouteUpdate:
		return "route/" + u.Route.Dst.String(), calc.RouteRemove{Dst: u.Route.Dst}
	case calc.VTEPUpdate:
		return "vtep/" + u.VTEP.Node, calc.VTEPRemove{Node: u.VTEP.Node, IPv6: u.VTEP.TunnelAddr.Is6()}
	case calc.ConfigUpdate:
		return "config", calc.ConfigUpdate{}
	}
	panic(fmt.Sprintf("no removal for %T", u))
}

// transition is the batch that turns the model holding from into one holding to.
func transition(from, to []calc.Update) []calc.Update {
	keep := map[string]bool{}
	for _, u := range to {
		k, _ := removal(u)
		keep[k] = true
	}
	var out []calc.Update
	for _, u := range from {
		if k, rm := removal(u); !keep[k] {
			out = append(out, rm)
		}
	}
	return append(out, to...)
}

// TestConvergence applies a set of desired states in random orders, each as the batch of
// changes from the previous one, and checks that the table always ends up exactly as when
// the state is applied to an empty table.
func TestConvergence(t *testing.T) {
	cfg := Config{Hostname: "host1", IPv6Support: true}
	states := [][]calc.Update{nil, example19(), tieredPolicies(), ruleFeatures(), hostEndpoints(), natAndFloatingIPs(), vxlanHosts(),
		append(example19(), natAndFloatingIPs()...)}
	ifaces := []string{"cali1a2b3c4d5e6", "cali11111111111"}
	want := make([]string, len(states))
	for i, st := range states {
		h := newHarness(t, cfg)
		h.up(ifaces...)
		h.send(st...)
		want[i] = h.fake.Dump()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	h := newHarness(t, cfg)
	h.up(ifaces...)
	cur := 0
	for step := range 5 * len(states) * len(states) {
		next := rng.IntN(len(states))
		h.send(transition(states[cur], states[next])...)
		if diff := cmp.Diff(want[next], h.fake.Dump()); diff != "" {
			t.Fatalf("step %d, state %d -> %d: table differs (-want +got):\n%s", step, cur, next, diff)
		}
		cur = next
	}
}

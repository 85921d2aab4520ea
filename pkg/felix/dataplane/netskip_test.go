package dataplane

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestRulesetOnlyChangesSkipNetwork: an apply after a policy, profile or IP set change only
// programs the ruleset (routes, interface settings and statuses walk every endpoint and
// cannot have changed); an endpoint or interface change, a failed network step and a route
// refresh bring them back.
func TestRulesetOnlyChangesSkipNetwork(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1")
	h.send(wep("w1", "cali1", []string{"10.65.0.1/32"}), ipset("s:a", "10.65.0.1/32"))
	applies := h.routes.applies
	h.send(policy(gnpID("p1"), []calc.Rule{allow()}, nil), profile("prof", nil, nil), ipset("s:a", "10.65.0.2/32"))
	if h.routes.applies != applies {
		t.Fatalf("a policy, profile and IP set change applied routes (%d applies, want %d)", h.routes.applies, applies)
	}
	if !strings.Contains(h.fake.Dump(), "10.65.0.2") {
		t.Errorf("the IP set change is not in the kernel: the ruleset was not applied")
	}
	h.send(wep("w1", "cali1", []string{"10.65.0.3/32"}))
	if h.routes.applies != applies+1 || !hasRoute(h.routes.routes(), "10.65.0.3/32") {
		t.Fatalf("an endpoint change did not apply its route (%d applies, routes %v)", h.routes.applies, h.routes.routes())
	}

	h.ifaces.failConfig["cali2"] = errors.New("sysctl failed")
	h.up("cali2")
	h.dp.model.apply(wep("w2", "cali2", []string{"10.65.0.9/32"}))
	if _, err := h.dp.apply(context.Background()); err == nil {
		t.Fatal("a failed interface configuration did not fail the apply")
	}
	delete(h.ifaces.failConfig, "cali2")
	applies = h.routes.applies
	h.send(ipset("s:a", "10.65.0.4/32"))
	if h.routes.applies != applies+1 {
		t.Errorf("after a failed network step, the next apply skipped it")
	}

	applies = h.routes.applies
	h.dp.model.netChanged = true // what the loop's route refresh does
	h.send()
	if h.routes.applies != applies+1 {
		t.Errorf("a route refresh did not apply routes")
	}
}

func hasRoute(rs []routes.Route, dst string) bool {
	return slices.ContainsFunc(rs, func(r routes.Route) bool { return r.Dst == pfx(dst) })
}

package dataplane

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// opCounts summarises a transaction.
func opCounts(tx *nft.Batch) map[string]int {
	out := map[string]int{}
	for _, op := range tx.Ops {
		out[op.Kind.String()]++
	}
	return out
}

// TestEndpointLifecycle adds, changes and removes endpoints on a loaded table and checks both
// the resulting table and that each step's transaction touches only that endpoint.
func TestEndpointLifecycle(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1a2b3c4d5e6", "cali22222222222")
	h.send(example19()...)
	base := h.fake.Dump()

	// w2 has w1's egress (profile net1) but not its ingress policy: it shares w1's chain from
	// the workload and gets a chain to it of its own.
	w2 := wep("w2", "cali22222222222", []string{"10.65.0.7/32"}, withProfiles("net1"))
	net1 := ipset("s:net1", "10.65.0.5/32", "10.65.0.7/32")
	h.send(net1, w2)
	if got, want := opCounts(h.fake.LastBatch()), map[string]int{"add chain": 1, "add rule": 6, "add element": 3}; !cmp.Equal(got, want) {
		t.Errorf("adding an endpoint: ops %v, want %v", got, want)
	}
	w1from, w2from := h.workloadChain("cali1a2b3c4d5e6", true), h.workloadChain("cali22222222222", true)
	if w1from != w2from || h.workloadChain("cali1a2b3c4d5e6", false) == h.workloadChain("cali22222222222", false) {
		t.Errorf("chains from w1 %s and w2 %s (shared), to them (not shared)", w1from, w2from)
	}
	if !strings.Contains(h.fake.Dump(), "10.65.0.5, 10.65.0.7") {
		t.Error("after adding w2 the set lacks its address")
	}

	// Changing w2's profiles gives it two new chains (and the new profile's), deletes its own
	// old chain to it and leaves w1's chains alone.
	h.send(profile("other", nil, []calc.Rule{allow()}), wep("w2", "cali22222222222", []string{"10.65.0.7/32"}, withProfiles("other")))
	got := opCounts(h.fake.LastBatch())
	if got["add chain"] != 4 || got["delete chain"] != 1 || got["flush chain"] != 1 {
		t.Errorf("changing profiles: ops %v, want 2 new workload chains, 2 new profile chains, 1 deleted", got)
	}

	h.send(calc.WorkloadEndpointRemove{ID: wepID("w2")}, calc.ActiveProfileRemove{Name: "other"}, ipset("s:net1", "10.65.0.5/32"))
	if diff := cmp.Diff(base, h.fake.Dump()); diff != "" {
		t.Errorf("removing w2 did not restore the table (-want +got):\n%s", diff)
	}

	// Removing the last endpoint removes its policy and profile chains: nothing refers to them.
	w1to := h.workloadChain("cali1a2b3c4d5e6", false)
	h.send(calc.WorkloadEndpointRemove{ID: wepID("w1")})
	dump := h.fake.Dump()
	for _, s := range []string{"cali-pi-gnp/allow-web", "cali-pri-net1", w1to, w1from} {
		if strings.Contains(dump, s) {
			t.Errorf("after removing every endpoint the table still has %q", s)
		}
	}
}

// TestUnchangedApplyCommitsNothing: applying the same model twice sends nothing the second time.
func TestUnchangedApplyCommitsNothing(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali11111111111")
	h.send(ruleFeatures()...)
	n := h.fake.Commits()
	h.send()
	if h.fake.Commits() != n {
		t.Errorf("a second apply of the same model committed a transaction: %s", batchScript(h.fake.LastBatch()))
	}
}

// TestPolicyChangeRewritesOnlyItsChain: changing a policy's rules flushes and refills that
// chain only; the endpoint chains that jump to it are untouched.
func TestPolicyChangeRewritesOnlyItsChain(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1a2b3c4d5e6")
	h.send(example19()...)
	h.send(policy(gnpID("allow-web"), []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil))
	var flushed []string
	for _, op := range h.fake.LastBatch().Ops {
		if op.Kind == nft.OpFlushChain {
			flushed = append(flushed, op.Name)
		}
	}
	if want := []string{"filter-cali-pi-gnp/allow-web"}; !cmp.Equal(flushed, want) {
		t.Errorf("flushed %v, want %v", flushed, want)
	}
}

// TestInterfaceClaimedTwice: two endpoints on one interface; the lower ID is programmed, and
// the other takes over when it goes.
func TestInterfaceClaimedTwice(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali11111111111")
	h.send(profile("p1", []calc.Rule{allow()}, nil), profile("p2", nil, []calc.Rule{allow()}),
		wep("a", "cali11111111111", []string{"10.65.0.1/32"}, withProfiles("p1")),
		wep("b", "cali11111111111", []string{"10.65.0.2/32"}, withProfiles("p2")))
	if d := h.fake.Dump(); !strings.Contains(d, "jump filter-cali-pri-p1") || strings.Contains(d, "cali-pro-p2") {
		t.Errorf("endpoint a (the lower ID) should own the interface:\n%s", d)
	}
	h.send(calc.WorkloadEndpointRemove{ID: wepID("a")})
	if d := h.fake.Dump(); strings.Contains(d, "cali-pri-p1") || !strings.Contains(d, "jump filter-cali-pro-p2") {
		t.Errorf("endpoint b should own the interface once a is gone:\n%s", d)
	}
}

// TestMissingSetAndPolicy: references calc did not honour (a set or policy it never sent)
// still give a consistent table: an empty set, an empty policy chain. When the set arrives,
// it is filled.
func TestMissingSetAndPolicy(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali11111111111")
	h.send(policy(gnpID("p"), []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:late"}}}, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withTiers(tier("default", ids(gnpID("p"), gnpID("never-sent")), nil))))
	d := h.fake.Dump()
	for _, s := range []string{"set cali40s-late {", "chain filter-cali-pi-gnp/never-sent {"} {
		if !strings.Contains(d, s) {
			t.Errorf("table lacks %q:\n%s", s, d)
		}
	}
	h.send(ipset("s:late", "10.65.0.9/32"))
	if d := h.fake.Dump(); !strings.Contains(d, "elements = { 10.65.0.9 }") {
		t.Errorf("the late set was not filled:\n%s", d)
	}
}

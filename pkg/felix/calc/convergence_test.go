package calc

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// The convergence property: whatever sequence of updates and snapshots the graph sees, the
// dataplane model built from its batches equals what a fresh graph computes from a snapshot of
// the final datastore; and every batch respects dependency order (the model checks that).

// gen generates random datastore objects from small universes, so that they interact.
type gen struct{ r *rand.Rand }

func (g gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g gen) chance(p float64) bool    { return g.r.Float64() < p }

func (g gen) labels() map[string]string {
	out := map[string]string{}
	for _, kv := range [][]string{{"role", "web", "db", "client"}, {"env", "prod", "dev"}, {"app", "a", "b"}, {"sg1", ""}} {
		if g.chance(0.5) {
			out[kv[0]] = kv[1+g.r.IntN(len(kv)-1)]
		}
	}
	return out
}

var testSelectors = []string{"role == 'web'", "role in {'web', 'db'}", "has(env)", "env == 'prod' && role != 'db'",
	"all()", "!has(app)", "app == 'a' || role == 'client'", "team == 'red'", "global()", "has(sg1)", ""}

func (g gen) ips(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		if g.chance(0.8) {
			out = append(out, fmt.Sprintf("10.65.0.%d/32", 1+g.r.IntN(12)))
		} else {
			out = append(out, fmt.Sprintf("fd5c::%d/128", 1+g.r.IntN(4)))
		}
	}
	return dedupe(out)
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (g gen) subset(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if g.chance(0.4) {
			out = append(out, x)
		}
	}
	return out
}

func (g gen) workload(ns, ctr string) syncer.Update {
	ports := []api.WorkloadEndpointPort{}
	if g.chance(0.5) {
		ports = append(ports, api.WorkloadEndpointPort{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: uint16(80 + g.r.IntN(2))})
	}
	if g.chance(0.3) {
		ports = append(ports, api.WorkloadEndpointPort{Name: "dns", Protocol: api.ProtocolFromString("UDP"), Port: 53})
	}
	u := wep(ns, g.pick("h1", "h1", "h2", "h3"), ctr, g.labels(), g.ips(1+g.r.IntN(2)),
		withProfiles(g.subset("p1", "p2", "missing")...), withPorts(ports...), withSA(g.pick("", "sa1", "sa2")))
	u.ID = datastore.IDOf(wepKey(ns, "h1", ctr)) // one key per slot, whatever the node
	return u
}

func (g gen) entity() api.EntityRule {
	var e api.EntityRule
	if g.chance(0.5) {
		e.Selector = g.pick(testSelectors...)
	}
	if g.chance(0.2) {
		e.NotSelector = g.pick("role == 'db'", "has(app)")
	}
	if g.chance(0.2) {
		e.NamespaceSelector = g.pick("env == 'prod'", "all()", "global()", "projectcalico.org/name == 'ns1'")
	}
	if g.chance(0.1) {
		e.ServiceAccounts = &api.ServiceAccountMatch{Names: g.subset("sa1", "sa2"), Selector: g.pick("", "tier == 'gold'")}
	}
	if g.chance(0.2) {
		e.Nets = g.subset("10.0.0.0/8", "fd00::/8", "192.0.2.1")
	}
	if g.chance(0.1) {
		e.NotNets = []string{"10.65.0.0/30"}
	}
	return e
}

func (g gen) rule() api.Rule {
	r := api.Rule{Action: g.pick("Allow", "Deny", "Pass", "Log"), Source: g.entity(), Destination: g.entity()}
	switch g.r.IntN(4) {
	case 0:
		p := api.ProtocolFromString(g.pick("TCP", "UDP", "6"))
		r.Protocol = &p
		if g.chance(0.6) {
			r.Destination.Ports = []api.Port{api.SinglePort(80)}
			if g.chance(0.5) {
				r.Destination.Ports = append(r.Destination.Ports, api.NamedPort(g.pick("http", "dns")))
			}
		}
		if g.chance(0.2) {
			r.Source.NotPorts = []api.Port{api.NamedPort("http")}
		}
	case 1:
		p := api.ProtocolFromString("ICMP")
		r.Protocol = &p
		r.ICMP = &api.ICMPFields{Type: api.Int(8)}
		if g.chance(0.3) {
			r.IPVersion = api.Int(6) // invalid: dropped
		}
	}
	return r
}

func (g gen) rules() []api.Rule {
	var out []api.Rule
	for i := g.r.IntN(3); i > 0; i-- {
		out = append(out, g.rule())
	}
	return out
}

func (g gen) policy(slot int) syncer.Update {
	// One key per slot, whatever the tier (so that a policy moves between tiers).
	tierName, name := g.pick("default", "default", "t1", "t2", "t3"), fmt.Sprintf("pol%d", slot)
	var order *float64
	if g.chance(0.7) {
		order = ptr(float64(g.r.IntN(3)))
	}
	types := g.subset("Ingress", "Egress")
	ingress, egress := g.rules(), g.rules()
	if slot%3 == 0 {
		return np([]string{"ns1", "ns2"}[slot%2], fmt.Sprintf("np%d", slot), api.NetworkPolicySpec{Tier: tierName, Order: order,
			Selector: g.pick(testSelectors...), Types: types, Ingress: ingress, Egress: egress})
	}
	spec := api.GlobalNetworkPolicySpec{Tier: tierName, Order: order, Selector: g.pick(testSelectors...), Types: types,
		Ingress: ingress, Egress: egress}
	switch g.r.IntN(5) {
	case 0:
		spec.DoNotTrack, spec.ApplyOnForward = true, true
	case 1:
		spec.PreDNAT, spec.ApplyOnForward, spec.Egress = true, true, nil
	case 2:
		spec.ApplyOnForward = true
	}
	if g.chance(0.1) {
		spec.NamespaceSelector = "env == 'prod'"
	}
	return gnp(name, spec)
}

// slot is one datastore key the generator may write or delete.
type slot struct {
	key string
	gen func(gen) syncer.Update
}

func slots() []slot {
	var out []slot
	add := func(u func(gen) syncer.Update) {
		out = append(out, slot{key: u(gen{rand.New(rand.NewPCG(0, 0))}).ID.Key(), gen: u})
	}
	for i := 0; i < 8; i++ {
		ns, ctr := []string{"ns1", "ns2"}[i%2], fmt.Sprintf("c%d", i)
		add(func(g gen) syncer.Update { return g.workload(ns, ctr) })
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("hep%d", i)
		add(func(g gen) syncer.Update {
			ips := g.subset("198.18.0.1", "10.65.0.3", "fd00::1")
			return hep(name, g.pick("h1", "h2"), g.pick("eth0", "*", "eth1"), g.labels(), ips, g.subset("p1", "p2")...)
		})
	}
	for i := 0; i < 10; i++ {
		add(func(g gen) syncer.Update { return g.policy(i) })
	}
	for _, n := range []string{"p1", "p2", "kns.ns1", "kns.ns2", "ksa.ns1.sa1"} {
		add(func(g gen) syncer.Update {
			l := map[string]string{}
			if g.chance(0.6) {
				l[g.pick("team", "env", "tier")] = g.pick("red", "prod", "gold")
			}
			return profile(n, l, g.rules(), g.rules())
		})
	}
	for _, n := range []string{"default", "t1", "t2"} {
		add(func(g gen) syncer.Update {
			var order *float64
			if g.chance(0.8) {
				order = ptr(float64(g.r.IntN(3)))
			}
			return tier(n, order, g.pick("Deny", "Pass"))
		})
	}
	add(func(g gen) syncer.Update {
		return gns("gset", g.labels(), g.subset("192.0.2.0/24", "10.65.0.1/32", "fd00::/64")...)
	})
	add(func(g gen) syncer.Update { // sometimes a value of the wrong type: treated as absent
		if g.chance(0.5) {
			return up(resKey("globalnetworkpolicies", "", "odd"), &api.Node{})
		}
		u := g.policy(101)
		u.ID = datastore.IDOf(resKey("globalnetworkpolicies", "", "odd"))
		return u
	})
	add(func(g gen) syncer.Update {
		return netset("ns1", "nset", g.labels(), g.subset("198.51.100.0/24", "10.65.0.2")...)
	})
	return append(out, networkSlots()...)
}

func networkSlots() []slot {
	var out []slot
	add := func(u func(gen) syncer.Update) {
		out = append(out, slot{key: u(gen{rand.New(rand.NewPCG(0, 0))}).ID.Key(), gen: u})
	}
	for _, n := range []string{"h1", "h2", "h3"} {
		add(func(g gen) syncer.Update {
			return node(n, g.pick("", "198.18.0.1/24", "198.18.1.2/24", "198.18.0.3/24"), g.pick("", "10.65.9.1", "10.65.9.2"))
		})
	}
	for _, cidr := range []string{"10.65.0.0/26", "10.65.0.64/26", "fd5c::/122"} {
		add(func(g gen) syncer.Update {
			held := map[int]string{}
			for j := g.r.IntN(3); j > 0; j-- {
				held[g.r.IntN(8)] = g.pick("h1", "h2", "h3")
			}
			return block(cidr, g.pick("", "h1", "h2", "h3"), held)
		})
	}
	add(func(g gen) syncer.Update {
		return pool("p4", g.pick("10.65.0.0/16", "10.65.0.0/25"), g.pick("Never", "Always"), g.chance(0.5))
	})
	for _, n := range []string{"default", "node.h1", "node.h2"} {
		add(func(g gen) syncer.Update {
			spec := api.FelixConfigurationSpec{LogSeverityScreen: g.pick("", "Info", "Debug")}
			if g.chance(0.5) {
				spec.ReportingInterval = api.Dur(time.Duration(g.r.IntN(3)) * time.Second)
			}
			return felixConfig(n, spec)
		})
	}
	add(func(g gen) syncer.Update {
		return up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{Spec: api.ClusterInformationSpec{
			ClusterGUID: g.pick("a", "b"), DatastoreReady: api.Bool(g.chance(0.8))}})
	})
	return out
}

// store is the simulated datastore.
type store struct {
	vals map[string]syncer.Update
	rev  int64
}

func (s *store) set(u syncer.Update) syncer.Update {
	s.rev++
	u.Revision = s.rev
	if u.Value == nil {
		delete(s.vals, u.ID.Key())
	} else {
		s.vals[u.ID.Key()] = u
	}
	return u
}

func (s *store) snapshot() []syncer.Update {
	keys := make([]string, 0, len(s.vals))
	for k := range s.vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]syncer.Update, len(keys))
	for i, k := range keys {
		out[i] = s.vals[k]
	}
	return out
}

// randomChange writes or deletes one slot.
func randomChange(g gen, all []slot) syncer.Update {
	sl := all[g.r.IntN(len(all))]
	if g.chance(0.2) {
		return del(sl.key)
	}
	return sl.gen(g)
}

func TestConvergence(t *testing.T) {
	runs, steps := 300, 80
	if testing.Short() {
		runs = 40
	}
	if n, err := strconv.Atoi(os.Getenv("CALC_CONVERGENCE_RUNS")); err == nil {
		runs = n // for soak runs
	}
	all := slots()
	for seed := 0; seed < runs; seed++ {
		if !runConvergence(t, uint64(seed), steps, all) {
			return
		}
	}
}

func runConvergence(t *testing.T, seed uint64, steps int, all []slot) bool {
	g := gen{rand.New(rand.NewPCG(seed, 7))}
	st := &store{vals: map[string]syncer.Update{}}
	for i := 0; i < 30; i++ {
		st.set(randomChange(g, all))
	}
	graph, model := newTestGraph("h1"), newModel()
	graph.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: st.snapshot()})
	for i := 0; i < steps; i++ {
		if g.chance(0.1) {
			for j := g.r.IntN(5); j > 0; j-- {
				st.set(randomChange(g, all))
			}
			graph.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: st.snapshot()})
		} else {
			var ups []syncer.Update
			for j := 1 + g.r.IntN(4); j > 0; j-- {
				ups = append(ups, st.set(randomChange(g, all)))
			}
			graph.OnMessage(syncer.Message{Status: syncer.InSync, Updates: ups})
		}
		if g.chance(0.6) {
			if err := model.apply(graph.Flush()); err != nil {
				t.Errorf("seed %d step %d: %v", seed, i, err)
				return false
			}
		}
	}
	if err := model.apply(graph.Flush()); err != nil {
		t.Errorf("seed %d final flush: %v", seed, err)
		return false
	}
	fresh, want := newTestGraph("h1"), newModel()
	fresh.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: st.snapshot()})
	if err := want.apply(fresh.Flush()); err != nil {
		t.Errorf("seed %d from scratch: %v", seed, err)
		return false
	}
	if diff := modelDiff(want, model); diff != "" {
		t.Errorf("seed %d: incremental model differs from scratch (-scratch +incremental):\n%s", seed, diff)
		return false
	}
	if again := graph.Flush(); again != nil {
		t.Errorf("seed %d: second flush not empty: %v", seed, again)
		return false
	}
	return true
}

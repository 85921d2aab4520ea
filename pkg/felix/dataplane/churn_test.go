package dataplane

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// etcdContent is the content of etcd in a churn test, by key.
type etcdContent map[string]any

// churnStore makes random changes to a small calc-bench-shaped datastore: endpoints (local and
// remote) come, go and change labels, policies change their rules. Every change goes through
// the real calculation graph, so the dataplane sees IP set deltas as in production.
type churnStore struct {
	rng   *rand.Rand
	data  etcdContent
	shape benchShape
}

func newChurnStore(seed uint64, s benchShape) *churnStore {
	c := &churnStore{rng: rand.New(rand.NewPCG(seed, 3)), data: etcdContent{}, shape: s}
	for _, u := range benchSnapshot(s) {
		c.data[u.ID.Key()] = u.Value
	}
	return c
}

// step changes one object and returns the syncer update for it.
func (c *churnStore) step() syncer.Update {
	if c.rng.IntN(4) == 0 {
		j := c.rng.IntN(c.shape.policies)
		name := fmt.Sprintf("pol-%04d", j)
		pol := benchPolicy(name, j+c.rng.IntN(3)*c.shape.policies)
		pol.Name = name
		return c.put(resPrefix+"globalnetworkpolicies/"+name, pol)
	}
	i := c.rng.IntN(c.shape.local + c.shape.remote + 4)
	node := "host1"
	if i >= c.shape.local {
		node = fmt.Sprintf("host%d", 2+i%3)
	}
	ns, ctr := fmt.Sprintf("ns%d", i%10), fmt.Sprintf("c%05d", i)
	name := api.WorkloadEndpointName(node, "cni", ctr, "eth0")
	key := resPrefix + "workloadendpoints/" + ns + "/" + name
	if _, ok := c.data[key]; ok && c.rng.IntN(2) == 0 {
		delete(c.data, key)
		return syncer.Update{ID: datastore.IDOf(key)}
	}
	wep := benchWEP(i, node, ns, ctr, name)
	wep.Labels["app"] = fmt.Sprintf("app%03d", c.rng.IntN(300))
	return c.put(key, wep)
}

func (c *churnStore) put(key string, v any) syncer.Update {
	c.data[key] = v
	return syncer.Update{ID: datastore.IDOf(key), Value: v}
}

// snapshot is the datastore as one syncer snapshot, in a stable order.
func (c *churnStore) snapshot() []syncer.Update {
	var out []syncer.Update
	for i, k := range slices.Sorted(maps.Keys(c.data)) {
		out = append(out, syncer.Update{ID: datastore.IDOf(k), Value: c.data[k], Revision: int64(i + 1)})
	}
	return out
}

// TestChurnMatchesFreshDataplane: a long random sequence of single-object changes, each
// applied as a partial sync of the same dataplane, always leaves exactly the table that a fresh
// dataplane makes from the resulting datastore; and a full resync then finds nothing to do.
func TestChurnMatchesFreshDataplane(t *testing.T) {
	shape := benchShape{local: 12, remote: 30, policies: 20}
	cfg := Config{Hostname: "host1", IPv6Support: true}
	c := newChurnStore(1, shape)
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: c.snapshot()})
	h := newHarness(t, cfg)
	h.send(g.Flush()...)
	for step := range 150 {
		for _, u := range flushWith(g, c.step()) {
			h.dp.model.apply(u)
		}
		if st, err := h.dp.applyStats(t.Context()); err != nil || st.FullSync {
			t.Fatalf("step %d: %+v, %v; want a partial sync", step, st, err)
		}
		fresh := newHarness(t, cfg)
		fg := calc.New("host1", zerolog.Nop())
		fg.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: c.snapshot()})
		fresh.send(fg.Flush()...)
		if diff := cmp.Diff(fresh.fake.Dump(), h.fake.Dump()); diff != "" {
			t.Fatalf("step %d: table differs from a fresh dataplane (-fresh +got):\n%s", step, diff)
		}
	}
	h.dp.nft.RequestFullSync()
	tables := h.dp.buildRuleset()
	st, err := h.dp.nft.Apply(t.Context(), tables...)
	if err != nil || st.Ops != 0 {
		t.Errorf("full resync after churn: %+v, %v; want nothing to do", st, err)
	}
}

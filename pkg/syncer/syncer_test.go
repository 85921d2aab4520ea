package syncer_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

var allPrefixes = []string{datastore.ResourcePrefix, datastore.IPAMPrefix}

func TestSnapshotOfFixtures(t *testing.T) {
	s, raw := startEtcd(t)
	var fixtures []etcdtest.FixtureKV
	for _, f := range []string{"calicoctl-corpus.json", "cni-ipam-and-status.json", "startup-result.json"} {
		fixtures = append(fixtures, etcdtest.LoadFixture(t, raw, f)...)
	}
	c := startConsumer(t, newClient(t, s.Datastore()), syncer.Config{Prefixes: allPrefixes, PageSize: 7})
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })

	got := c.modelCopy()
	if d := diffModels(etcdState(t, raw, syncer.Config{Prefixes: allPrefixes}), got); d != "" {
		t.Fatalf("snapshot differs from etcd:\n%s", d)
	}
	wantKeys := map[string]bool{}
	for _, f := range fixtures {
		if !strings.HasPrefix(f.Key, datastore.ResourcePrefix) && !strings.HasPrefix(f.Key, datastore.IPAMPrefix) {
			continue
		}
		wantKeys[f.Key] = true
		u, ok := got[f.Key]
		switch {
		case !ok:
			t.Errorf("fixture key %s missing from the snapshot", f.Key)
		case u.Value == nil:
			t.Errorf("fixture key %s has no value", f.Key)
		}
		if r, ok := u.Value.(api.Resource); ok && datastore.Revision(r) != u.Revision {
			t.Errorf("%s: resourceVersion %d, update revision %d", f.Key, datastore.Revision(r), u.Revision)
		}
	}
	if len(wantKeys) < 30 || len(got) != len(wantKeys) {
		t.Errorf("snapshot has %d keys, fixtures have %d under the prefixes", len(got), len(wantKeys))
	}
	want := []syncer.Status{syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync}
	if !slices.Equal(c.statuses, want) {
		t.Errorf("statuses %v, want %v", c.statuses, want)
	}
	if st := c.sync.Status(); st != syncer.InSync {
		t.Errorf("Status() = %v after the snapshot, want InSync", st)
	}
	if !strings.Contains(c.logs.String(), `"message":"resync: listed datastore"`) {
		t.Errorf("no resync log line; logs:\n%s", c.logs)
	}
}

func TestEventsInOrder(t *testing.T) {
	s, raw := startEtcd(t)
	put(t, raw, poolPrefix+"existing", poolJSON("10.65.0.0/16"))
	cfg := syncer.Config{
		Prefixes: []string{poolPrefix, wepPrefix},
		Filter:   func(id datastore.ID) bool { return strings.HasSuffix(id.Key(), "-ignored") },
	}
	c := startConsumer(t, newClient(t, s.Datastore()), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	first := len(c.messages)

	type step struct {
		key   string
		value string // "" = delete
	}
	steps := []step{
		{poolPrefix + "a", poolJSON("10.65.1.0/24")},
		{poolPrefix + "a", poolJSON("10.65.2.0/24")},
		{wepKey("ns1", "wep1"), wepJSON("ns1", "wep1", 1)},
		{poolPrefix + "a-ignored", poolJSON("10.65.3.0/24")},
		{poolPrefix + "existing", ""},
		{poolPrefix + "a", ""},
		{wepKey("ns1", "wep1"), wepJSON("ns1", "wep1", 2)},
		{poolPrefix + "a", poolJSON("10.65.4.0/24")},
	}
	var want []syncer.Update
	for _, st := range steps {
		var rev int64
		if st.value == "" {
			rev = del(t, raw, st.key)
		} else {
			rev = put(t, raw, st.key, st.value)
		}
		if strings.HasSuffix(st.key, "-ignored") {
			continue
		}
		u := syncer.Update{ID: datastore.IDOf(st.key), Revision: rev}
		if st.value != "" {
			u.Value, _ = syncer.DefaultDecoder(datastore.IDOf(st.key), []byte(st.value), rev)
		}
		want = append(want, u)
	}
	// Two keys in one transaction: one revision, both delivered.
	ctx := testCtx(t)
	tx, err := raw.Txn(ctx).Then(clientv3.OpPut(poolPrefix+"b", poolJSON("10.65.5.0/24")),
		clientv3.OpDelete(wepKey("ns1", "wep1"))).Commit()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := syncer.DefaultDecoder(datastore.IDOf(poolPrefix+"b"), []byte(poolJSON("10.65.5.0/24")), tx.Header.Revision)
	want = append(want, syncer.Update{ID: datastore.IDOf(poolPrefix + "b"), Value: b, Revision: tx.Header.Revision},
		syncer.Update{ID: datastore.IDOf(wepKey("ns1", "wep1")), Revision: tx.Header.Revision})

	var got []syncer.Update
	c.waitFor(t, "all events", func() bool {
		got = nil
		for _, m := range c.messages[first:] {
			got = append(got, m.Updates...)
		}
		return len(got) >= len(want)
	})
	if len(got) != len(want) {
		t.Fatalf("got %d updates, want %d: %+v", len(got), len(want), got)
	}
	// Each prefix has its own watch: order is by revision within a prefix (so per key), not across.
	for _, p := range cfg.Prefixes {
		g, w := underPrefix(got, p), underPrefix(want, p)
		if len(g) != len(w) {
			t.Fatalf("under %s: got %d updates, want %d", p, len(g), len(w))
		}
		for i := range w {
			if g[i].ID.Key() != w[i].ID.Key() || diffModels(map[string]syncer.Update{"u": w[i]}, map[string]syncer.Update{"u": g[i]}) != "" {
				t.Errorf("under %s, update %d: got %s@%d %+v, want %s@%d %+v", p, i, g[i].ID.Key(), g[i].Revision, g[i].Value,
					w[i].ID.Key(), w[i].Revision, w[i].Value)
			}
		}
	}
	if last := c.messages[len(c.messages)-1]; last.Revision < tx.Header.Revision || last.Status != syncer.InSync {
		t.Errorf("last message at revision %d status %v, want %d InSync", last.Revision, last.Status, tx.Header.Revision)
	}
	c.waitConverged(t, raw)
}

func TestBadValuesAreAbsent(t *testing.T) {
	bad := []struct {
		name, key, value string
	}{
		{"bad JSON", poolPrefix + "badjson", `{"kind":"IPPool",`},
		{"failed validation", poolPrefix + "banana", poolJSON("banana")},
		{"wrong kind", poolPrefix + "wrongkind", `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"wrongkind"}}`},
		{"bad block", datastore.BlockPrefix + "ipv4/block/10.65.0.0-26", `[1,2`},
	}
	s, raw := startEtcd(t)
	prefixes := []string{poolPrefix, datastore.BlockPrefix}
	for _, b := range bad {
		put(t, raw, b.key, b.value)
	}
	put(t, raw, poolPrefix+"good", poolJSON("10.65.0.0/16"))
	c := startConsumer(t, newClient(t, s.Datastore()), syncer.Config{Prefixes: prefixes})
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	model := c.modelCopy()
	if _, ok := model[poolPrefix+"good"]; !ok || len(model) != 1 {
		t.Fatalf("snapshot should hold only the good pool, has %v", keys(model))
	}
	for _, b := range bad {
		assertLogged(t, c, b.key)
	}

	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			goodKey := poolPrefix + "good-after-" + strings.ReplaceAll(strings.ToLower(b.name), " ", "-")
			valid := poolJSON("10.65.0.0/16")
			if strings.HasPrefix(b.key, datastore.BlockPrefix) {
				valid = `{"cidr":"10.65.0.0/26","affinity":"host:host-a","allocations":[null],"unallocated":[0],"attributes":[]}`
			}
			put(t, raw, b.key, valid)
			c.waitFor(t, "valid value of "+b.key, func() bool { return c.model[b.key].Value != nil })
			badRev := put(t, raw, b.key, b.value)
			goodRev := put(t, raw, goodKey, poolJSON("10.66.0.0/16"))
			c.waitFor(t, "bad value delivered as a deletion, next key delivered", func() bool {
				_, present := c.model[b.key]
				return !present && c.model[goodKey].Revision == goodRev
			})
			if u := lastUpdate(c, b.key); u.Revision != badRev || u.Value != nil {
				t.Errorf("bad value delivered as %+v, want a deletion at %d", u, badRev)
			}
		})
	}
	c.waitConverged(t, raw)
}

func TestUnknownKeysAreAbsent(t *testing.T) {
	s, raw := startEtcd(t)
	unknown := datastore.ResourcePrefix + "nosuchkinds/x"
	put(t, raw, unknown, `{}`)
	c := startConsumer(t, newClient(t, s.Datastore()), syncer.Config{Prefixes: []string{datastore.ResourcePrefix}})
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	if m := c.modelCopy(); len(m) != 0 {
		t.Fatalf("keys the decoder does not know must be absent from the snapshot, got %v", keys(m))
	}
	rev := put(t, raw, unknown, `{"a":1}`)
	c.waitFor(t, "event for the unknown key", func() bool { return lastUpdateLocked(c, unknown).Revision == rev })
	if u := lastUpdate(c, unknown); u.Value != nil {
		t.Errorf("unknown key delivered with value %+v, want absent", u.Value)
	}
}

// TestCompactionMidWatch cuts the syncer off etcd (its watch stays registered in the client)
// while the consumer is stalled, writes and compacts, then reconnects: the client resumes the
// watch from a compacted revision, and the syncer must re-list and send a new snapshot.
func TestCompactionMidWatch(t *testing.T) {
	s, raw := startEtcd(t)
	for i := range 50 {
		put(t, raw, wepKey("ns1", "wep"+itoa(i)), wepJSON("ns1", "wep"+itoa(i), i))
	}
	proxy := startProxy(t, strings.TrimPrefix(s.Endpoints[0], "http://"))
	ds := s.Datastore()
	ds.Etcd.Endpoints = []string{proxy.URL()}
	c := startConsumer(t, newClient(t, ds), syncer.Config{Prefixes: []string{wepPrefix}, MinBackoff: 10 * time.Millisecond})
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	put(t, raw, wepKey("ns1", "live"), wepJSON("ns1", "live", 100))
	c.waitFor(t, "a live event", func() bool { return c.model[wepKey("ns1", "live")].Value != nil })

	c.pause()
	proxy.Cut()
	for i := range 50 {
		if i%3 == 0 {
			del(t, raw, wepKey("ns1", "wep"+itoa(i)))
		} else {
			put(t, raw, wepKey("ns1", "wep"+itoa(i)), wepJSON("ns1", "wep"+itoa(i), i+1000))
		}
	}
	compacted := s.Compact()
	put(t, raw, wepKey("ns1", "after-compaction"), wepJSON("ns1", "after-compaction", 7))
	proxy.Resume()
	time.Sleep(200 * time.Millisecond) // let the syncer block on the stalled consumer
	c.resume()

	c.waitFor(t, "a second snapshot", func() bool { return c.snapshots >= 2 })
	c.waitConverged(t, raw)
	if c.snapshotRevLocked() < compacted {
		t.Errorf("new snapshot at %d, before the compaction at %d", c.snapshotRevLocked(), compacted)
	}
	if !strings.Contains(c.logs.String(), "compacted") {
		t.Errorf("the resync cause (compaction) was not logged:\n%s", c.logs)
	}
}

func TestEtcdRestart(t *testing.T) {
	s, raw := startEtcd(t)
	put(t, raw, poolPrefix+"before", poolJSON("10.65.0.0/16"))
	cfg := syncer.Config{
		Prefixes:       []string{poolPrefix},
		WatchTimeout:   600 * time.Millisecond,
		RequestTimeout: 300 * time.Millisecond,
		MaxBackoff:     500 * time.Millisecond,
	}
	c := startConsumer(t, newClient(t, s.Datastore()), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	put(t, raw, poolPrefix+"live", poolJSON("10.66.0.0/16"))
	c.waitFor(t, "live event", func() bool { return c.model[poolPrefix+"live"].Value != nil })

	s.Stop()
	c.waitFor(t, "status WaitingForDatastore", func() bool {
		return c.statuses[len(c.statuses)-1] == syncer.WaitingForDatastore
	})
	if st := c.sync.Status(); st != syncer.WaitingForDatastore {
		t.Errorf("Status() = %v while etcd is down", st)
	}
	time.Sleep(2 * time.Second) // several failed retries
	s.Restart()
	raw = s.Client()
	put(t, raw, poolPrefix+"after", poolJSON("10.67.0.0/16"))
	del(t, raw, poolPrefix+"before")

	c.waitFor(t, "InSync again", func() bool { return c.statuses[len(c.statuses)-1] == syncer.InSync })
	c.waitConverged(t, raw)
	// The history since the consumer's revision is still there: the watch resumes, no re-list.
	want := []syncer.Status{syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync,
		syncer.WaitingForDatastore, syncer.InSync}
	if !slices.Equal(c.statuses, want) {
		t.Errorf("statuses %v, want %v", c.statuses, want)
	}
	if got, n := strings.Count(c.logs.String(), "resync: listed datastore"), c.snapshotCount(); got != 1 || n != 1 {
		t.Errorf("%d resync log lines and %d snapshots, want 1 (the watch resumes)", got, n)
	}
}

// TestIdleWatchIsNotRestarted: with nothing written after the list, etcd does not answer progress
// requests; the syncer must see that etcd is reachable and keep its watch.
func TestIdleWatchIsNotRestarted(t *testing.T) {
	s, raw := startEtcd(t)
	put(t, raw, poolPrefix+"p", poolJSON("10.65.0.0/16"))
	cfg := syncer.Config{Prefixes: []string{poolPrefix}, WatchTimeout: 300 * time.Millisecond}
	c := startConsumer(t, newClient(t, s.Datastore()), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	time.Sleep(1500 * time.Millisecond) // five watch timeouts with no writes at all
	put(t, raw, "/unrelated/key", "x")  // now etcd is past the list revision: progress is answered
	time.Sleep(1500 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshots != 1 {
		t.Errorf("an idle but healthy watch was restarted: %d snapshots; logs:\n%s", c.snapshots, c.logs)
	}
}

func underPrefix(us []syncer.Update, prefix string) []syncer.Update {
	var out []syncer.Update
	for _, u := range us {
		if strings.HasPrefix(u.ID.Key(), prefix) {
			out = append(out, u)
		}
	}
	return out
}

func keys(m map[string]syncer.Update) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func itoa(i int) string { return strconv.Itoa(i) }

func assertLogged(t *testing.T, c *consumer, key string) {
	t.Helper()
	logs := c.logs.String()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"key":"`+key+`"`) && strings.Contains(line, `"level":"warn"`) {
			return
		}
	}
	t.Errorf("no warning logged for %s; logs:\n%s", key, logs)
}

// lastUpdate returns the last update of key in the stream (zero if none).
func lastUpdate(c *consumer, key string) syncer.Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	return lastUpdateLocked(c, key)
}

func lastUpdateLocked(c *consumer, key string) syncer.Update {
	for i := len(c.messages) - 1; i >= 0; i-- {
		for j := len(c.messages[i].Updates) - 1; j >= 0; j-- {
			if u := c.messages[i].Updates[j]; u.ID.Key() == key {
				return u
			}
		}
	}
	return syncer.Update{}
}

func (c *consumer) snapshotRevLocked() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotRev()
}

// TestSlowConsumerLosesNothing stalls the consumer while more changes than the syncer buffers
// arrive, for longer than the watch timeout: nothing is lost and the watch is not restarted.
func TestSlowConsumerLosesNothing(t *testing.T) {
	s, raw := startEtcd(t)
	cfg := syncer.Config{Prefixes: []string{wepPrefix}, WatchTimeout: 300 * time.Millisecond}
	c := startConsumer(t, newClient(t, s.Datastore()), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	c.pause()
	const n = 12000 // more than the syncer's own buffer
	ctx := testCtx(t)
	var ops []clientv3.Op
	for i := range n {
		ops = append(ops, clientv3.OpPut(wepKey("ns1", "w"+itoa(i)), wepJSON("ns1", "w"+itoa(i), i)))
		if len(ops) == 100 {
			if _, err := raw.Txn(ctx).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	time.Sleep(1500 * time.Millisecond) // five watch timeouts while the syncer cannot deliver
	c.resume()
	c.waitConverged(t, raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	updates := 0
	for _, m := range c.messages {
		if !m.Snapshot {
			updates += len(m.Updates)
		}
	}
	if c.snapshots != 1 || updates != n {
		t.Errorf("%d snapshots and %d updates, want 1 snapshot and %d updates (no resync, nothing lost)", c.snapshots, updates, n)
	}
}

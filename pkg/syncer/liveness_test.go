package syncer_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestEtcdLossAndReturn: etcd goes away, either stopped (its connections close) or silent (a
// network that drops everything; nothing breaks on the client's side). With the default
// LivenessTimeout the syncer reports WaitingForDatastore within it, keeps the consumer's model,
// and once etcd is back it resumes the watch: InSync again, no snapshot, and an update written
// right after etcd's return arrives within about two seconds.
func TestEtcdLossAndReturn(t *testing.T) {
	tests := []struct {
		name    string
		lose    func(s *etcdtest.Server, p *tcpProxy)
		restore func(s *etcdtest.Server, p *tcpProxy)
	}{
		{"etcd stopped", func(s *etcdtest.Server, _ *tcpProxy) { s.Stop() }, func(s *etcdtest.Server, _ *tcpProxy) { s.Restart() }},
		{"packets dropped", func(_ *etcdtest.Server, p *tcpProxy) { p.Freeze() }, func(_ *etcdtest.Server, p *tcpProxy) { p.Thaw() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, raw := startEtcd(t)
			proxy := startProxy(t, strings.TrimPrefix(s.Endpoints[0], "http://"))
			ds := s.Datastore()
			ds.Etcd.Endpoints = []string{proxy.URL()}
			put(t, raw, poolPrefix+"before", poolJSON("10.65.0.0/16"))
			c := startConsumer(t, newClient(t, ds), syncer.Config{Prefixes: []string{poolPrefix}})
			c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
			put(t, raw, poolPrefix+"live", poolJSON("10.66.0.0/16"))
			c.waitFor(t, "a live event", func() bool { return c.model[poolPrefix+"live"].Value != nil })
			model := c.modelCopy()

			lost := time.Now()
			tt.lose(s, proxy)
			c.waitFor(t, "WaitingForDatastore", func() bool { return c.statuses[len(c.statuses)-1] == syncer.WaitingForDatastore })
			detected := time.Since(lost)
			if st := c.sync.Status(); st != syncer.WaitingForDatastore {
				t.Errorf("Status() = %v while etcd is lost", st)
			}
			if detected > syncer.DefaultLivenessTimeout+time.Second {
				t.Errorf("WaitingForDatastore %s after etcd was lost, want within the liveness timeout (%s)",
					detected, syncer.DefaultLivenessTimeout)
			}
			time.Sleep(time.Second) // several failed attempts
			if d := diffModels(model, c.modelCopy()); d != "" {
				t.Errorf("the consumer's model changed while etcd was lost:\n%s", d)
			}

			tt.restore(s, proxy)
			back := time.Now()
			raw = s.Client()
			rev := put(t, raw, poolPrefix+"after", poolJSON("10.67.0.0/16"))
			c.waitFor(t, "the update written after etcd's return", func() bool { return c.model[poolPrefix+"after"].Revision == rev })
			arrived := time.Since(back)
			c.waitFor(t, "InSync", func() bool { return c.statuses[len(c.statuses)-1] == syncer.InSync })
			t.Logf("WaitingForDatastore %s after etcd was lost; an update written at etcd's return arrived after %s",
				detected.Round(time.Millisecond), arrived.Round(time.Millisecond))
			if arrived > 3*time.Second {
				t.Errorf("the update written at etcd's return arrived after %s, want about 2 s at most", arrived)
			}
			c.waitConverged(t, raw)
			want := []syncer.Status{syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync,
				syncer.WaitingForDatastore, syncer.InSync}
			c.mu.Lock()
			defer c.mu.Unlock()
			if !slices.Equal(c.statuses, want) || c.snapshots != 1 {
				t.Errorf("statuses %v and %d snapshots, want %v and 1 (the watch resumes)", c.statuses, c.snapshots, want)
			}
		})
	}
}

// TestCompactionWhileLost: etcd is lost, the history the consumer needs is compacted meanwhile:
// when etcd is back the syncer re-lists and sends a snapshot.
func TestCompactionWhileLost(t *testing.T) {
	s, raw := startEtcd(t)
	proxy := startProxy(t, strings.TrimPrefix(s.Endpoints[0], "http://"))
	ds := s.Datastore()
	ds.Etcd.Endpoints = []string{proxy.URL()}
	cfg := syncer.Config{Prefixes: []string{poolPrefix}, LivenessTimeout: 400 * time.Millisecond}
	c := startConsumer(t, newClient(t, ds), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	put(t, raw, poolPrefix+"p", poolJSON("10.65.0.0/16"))
	c.waitFor(t, "a live event", func() bool { return c.model[poolPrefix+"p"].Value != nil })

	proxy.Cut()
	c.waitFor(t, "WaitingForDatastore", func() bool { return c.statuses[len(c.statuses)-1] == syncer.WaitingForDatastore })
	put(t, raw, poolPrefix+"p", poolJSON("10.66.0.0/16"))
	del(t, raw, poolPrefix+"p")
	put(t, raw, poolPrefix+"q", poolJSON("10.67.0.0/16"))
	compacted := s.Compact()
	proxy.Resume()

	c.waitFor(t, "a second snapshot", func() bool { return c.snapshots == 2 })
	c.waitConverged(t, raw)
	if c.snapshotRevLocked() < compacted {
		t.Errorf("new snapshot at %d, before the compaction at %d", c.snapshotRevLocked(), compacted)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	want := []syncer.Status{syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync,
		syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync}
	if !slices.Equal(c.statuses, want) {
		t.Errorf("statuses %v, want %v", c.statuses, want)
	}
}

// TestHealthyIdleWatchStaysInSync: a watch with no traffic at all, then with traffic only outside
// its prefixes, for many liveness and watch timeouts: etcd answers the probes, so the syncer never
// leaves InSync and never restarts its watch.
func TestHealthyIdleWatchStaysInSync(t *testing.T) {
	s, raw := startEtcd(t)
	put(t, raw, poolPrefix+"p", poolJSON("10.65.0.0/16"))
	cfg := syncer.Config{Prefixes: []string{poolPrefix}, LivenessTimeout: time.Second, WatchTimeout: 300 * time.Millisecond}
	c := startConsumer(t, newClient(t, s.Datastore()), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	time.Sleep(3 * time.Second) // no writes at all: about five probes
	ctx := testCtx(t)
	for range 30 { // writes elsewhere only
		if _, err := raw.Put(ctx, "/unrelated/key", "x", clientv3.WithPrevKV()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rev := put(t, raw, poolPrefix+"p", poolJSON("10.66.0.0/16"))
	c.waitFor(t, "the update", func() bool { return c.model[poolPrefix+"p"].Revision == rev })
	c.mu.Lock()
	defer c.mu.Unlock()
	want := []syncer.Status{syncer.WaitingForDatastore, syncer.ResyncInProgress, syncer.InSync}
	if !slices.Equal(c.statuses, want) || c.snapshots != 1 || strings.Contains(c.logs.String(), "interrupted") {
		t.Errorf("statuses %v, %d snapshots; want %v, 1 snapshot and no interruption; logs:\n%s",
			c.statuses, c.snapshots, want, c.logs)
	}
}

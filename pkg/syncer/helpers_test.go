package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 30 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t testing.TB, ds config.Datastore) *datastore.Client {
	t.Helper()
	c, err := datastore.New(ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// consumer runs a syncer and applies its stream to a model, checking the stream's invariants.
type consumer struct {
	t      testing.TB
	cfg    syncer.Config
	sync   *syncer.Syncer
	logs   *logtest.Buffer
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	changed   *sync.Cond
	model     map[string]syncer.Update
	messages  []syncer.Message
	statuses  []syncer.Status
	snapshots int
	revision  int64
	problems  []string
	// catchingUp: the last snapshot was listed at a rounded revision and InSync has not come yet.
	catchingUp bool
	// firstInSync is the model when the stream first said InSync (nil before).
	firstInSync map[string]syncer.Update
	paused      bool
}

// startConsumer runs a syncer over cli with cfg until the test ends.
func startConsumer(t testing.TB, cli *datastore.Client, cfg syncer.Config) *consumer {
	t.Helper()
	c := &consumer{t: t, cfg: cfg, logs: &logtest.Buffer{}, done: make(chan struct{}), model: map[string]syncer.Update{}}
	c.changed = sync.NewCond(&c.mu)
	log := zerolog.New(c.logs).Level(zerolog.DebugLevel)
	c.sync = syncer.New(cli, cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	out := make(chan syncer.Message)
	runDone := make(chan struct{})
	go func() { defer close(runDone); c.sync.Run(ctx, out) }()
	go c.consume(ctx, out)
	t.Cleanup(func() { c.stop(runDone) })
	return c
}

func (c *consumer) stop(runDone chan struct{}) {
	c.cancel()
	c.resume()
	for _, ch := range []chan struct{}{runDone, c.done} {
		select {
		case <-ch:
		case <-time.After(waitTimeout):
			c.t.Errorf("syncer did not stop within %s of its context being cancelled", waitTimeout)
		}
	}
	c.check()
}

func (c *consumer) consume(ctx context.Context, out <-chan syncer.Message) {
	defer close(c.done)
	for {
		c.mu.Lock()
		for c.paused && ctx.Err() == nil {
			c.changed.Wait()
		}
		c.mu.Unlock()
		select {
		case m := <-out:
			c.apply(m)
		case <-ctx.Done():
			return
		}
	}
}

// apply updates the model and checks: snapshots have no nil values and no duplicate keys,
// per-key revisions only grow, and statuses are valid.
func (c *consumer) apply(m syncer.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.changed.Broadcast()
	c.messages = append(c.messages, m)
	if len(c.statuses) == 0 || c.statuses[len(c.statuses)-1] != m.Status {
		c.statuses = append(c.statuses, m.Status)
	}
	defer c.noteInSync(m)
	if m.Snapshot {
		c.applySnapshot(m)
		return
	}
	if len(m.Updates) > 0 && m.Status != syncer.InSync && !(c.catchingUp && m.Status == syncer.ResyncInProgress) {
		c.problem("updates delivered with status %v", m.Status)
	}
	if m.Status == syncer.InSync {
		c.catchingUp = false
	}
	for _, u := range m.Updates {
		if old, ok := c.model[u.ID.Key()]; ok && u.Revision <= old.Revision {
			c.problem("%s: revision went from %d to %d", u.ID.Key(), old.Revision, u.Revision)
		}
		if u.Revision <= c.snapshotRev() {
			c.problem("%s: update at revision %d not after the snapshot at %d", u.ID.Key(), u.Revision, c.snapshotRev())
		}
		if u.Value == nil {
			delete(c.model, u.ID.Key())
		} else {
			c.model[u.ID.Key()] = u
		}
	}
	c.revision = max(c.revision, m.Revision)
}

func (c *consumer) applySnapshot(m syncer.Message) {
	if m.Status != syncer.InSync && m.Status != syncer.ResyncInProgress {
		c.problem("snapshot with status %v", m.Status)
	}
	c.catchingUp = m.Status == syncer.ResyncInProgress
	c.snapshots++
	c.model = make(map[string]syncer.Update, len(m.Updates))
	for _, u := range m.Updates {
		if u.Value == nil {
			c.problem("snapshot contains nil value for %s", u.ID.Key())
		}
		if _, dup := c.model[u.ID.Key()]; dup {
			c.problem("snapshot contains %s twice", u.ID.Key())
		}
		if u.Revision > m.Revision {
			c.problem("snapshot at %d contains %s at later revision %d", m.Revision, u.ID.Key(), u.Revision)
		}
		c.model[u.ID.Key()] = u
	}
	c.revision = m.Revision
}

// noteInSync keeps a copy of the model the first time the stream says InSync after a snapshot.
func (c *consumer) noteInSync(m syncer.Message) {
	if c.firstInSync == nil && c.snapshots > 0 && m.Status == syncer.InSync {
		c.firstInSync = maps.Clone(c.model)
	}
}

// snapshotRev is the revision of the last snapshot received (callers hold mu).
func (c *consumer) snapshotRev() int64 {
	for i := len(c.messages) - 1; i >= 0; i-- {
		if c.messages[i].Snapshot {
			return c.messages[i].Revision
		}
	}
	return 0
}

func (c *consumer) problem(format string, args ...any) {
	if len(c.problems) < 20 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *consumer) check() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.problems {
		c.t.Errorf("stream invariant violated: %s", p)
	}
}

func (c *consumer) pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

func (c *consumer) resume() {
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
	c.changed.Broadcast()
}

// waitFor blocks until cond (called with the consumer locked) holds, failing the test after
// waitTimeout with a description of what was awaited and what was seen.
func (c *consumer) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	wake := time.AfterFunc(waitTimeout, func() { c.changed.Broadcast() })
	defer wake.Stop()
	stopTick := make(chan struct{})
	defer close(stopTick)
	go func() { // conditions may depend on etcd, not only on messages: re-check regularly
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				c.changed.Broadcast()
			case <-stopTick:
				return
			}
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; statuses %v, %d messages, %d snapshots, syncer status %v",
				waitTimeout, what, c.statuses, len(c.messages), c.snapshots, c.sync.Status())
		}
		c.changed.Wait()
	}
}

// snapshotCount returns the number of snapshots received.
func (c *consumer) snapshotCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshots
}

// modelCopy returns a copy of the model.
func (c *consumer) modelCopy() map[string]syncer.Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]syncer.Update, len(c.model))
	for k, v := range c.model {
		m[k] = v
	}
	return m
}

// waitConverged waits until the model equals a fresh list of etcd, then checks it stays so.
func (c *consumer) waitConverged(t testing.TB, raw *clientv3.Client) {
	t.Helper()
	var want map[string]syncer.Update
	var last time.Time
	c.waitFor(t, "model to equal etcd's contents", func() bool {
		if time.Since(last) < 20*time.Millisecond {
			return false
		}
		last = time.Now()
		want = etcdState(t, raw, c.cfg)
		return diffModels(want, c.model) == ""
	})
	time.Sleep(200 * time.Millisecond) // nothing stale may arrive afterwards
	if d := diffModels(etcdState(t, raw, c.cfg), c.modelCopy()); d != "" {
		t.Fatalf("model diverged from etcd after converging:\n%s", d)
	}
}

// etcdState lists cfg's prefixes directly and decodes them as the default syncer would.
func etcdState(t testing.TB, raw *clientv3.Client, cfg syncer.Config) map[string]syncer.Update {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state := map[string]syncer.Update{}
	for _, p := range cfg.Prefixes {
		resp, err := raw.Get(ctx, p, clientv3.WithPrefix())
		if err != nil {
			t.Fatalf("listing %s: %v", p, err)
		}
		for _, kv := range resp.Kvs {
			if cfg.Filter != nil && cfg.Filter(datastore.IDOf(string(kv.Key))) {
				continue
			}
			v, err := syncer.DefaultDecoder(datastore.IDOf(string(kv.Key)), kv.Value, kv.ModRevision)
			if err == nil && v != nil {
				state[string(kv.Key)] = syncer.Update{ID: datastore.IDOf(string(kv.Key)), Value: v, Revision: kv.ModRevision}
			}
		}
	}
	return state
}

// diffModels describes the differences between two models ("" when equal).
func diffModels(want, got map[string]syncer.Update) string {
	var d []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("missing %s (rev %d)", k, w.Revision))
		case g.Revision != w.Revision:
			d = append(d, fmt.Sprintf("%s: revision %d, want %d", k, g.Revision, w.Revision))
		case !reflect.DeepEqual(g.Value, w.Value):
			d = append(d, fmt.Sprintf("%s: value %+v, want %+v", k, g.Value, w.Value))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("unexpected %s (rev %d)", k, g.Revision))
		}
	}
	sort.Strings(d)
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
	}
	return strings.Join(d, "\n")
}

// put and del write directly with the raw client and return the revision.
func put(t testing.TB, raw *clientv3.Client, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := raw.Put(ctx, key, value)
	if err != nil {
		t.Fatalf("writing %s: %v", key, err)
	}
	return resp.Header.Revision
}

func del(t testing.TB, raw *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := raw.Delete(ctx, key)
	if err != nil {
		t.Fatalf("deleting %s: %v", key, err)
	}
	return resp.Header.Revision
}

// compact compacts etcd's history up to its current revision (a no-op when already compacted there)
// and returns that revision.
func compact(t testing.TB, raw *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := raw.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatalf("reading revision: %v", err)
	}
	rev := resp.Header.Revision
	if _, err := raw.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compacting at %d: %v", rev, err)
	}
	return rev
}

// startEtcd starts an embedded etcd and returns it with a raw client for the test's own writes.
func startEtcd(t testing.TB) (*etcdtest.Server, *clientv3.Client) {
	t.Helper()
	s := etcdtest.Start(t)
	return s, s.Client()
}

// Test values.
const (
	poolPrefix = datastore.ResourcePrefix + "ippools/"
	wepPrefix  = datastore.ResourcePrefix + "workloadendpoints/"
)

func poolJSON(cidr string) string {
	return fmt.Sprintf(`{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"x"},`+
		`"spec":{"cidr":%q,"ipipMode":"Never","vxlanMode":"Always","blockSize":26,"natOutgoing":true}}`, cidr)
}

func wepJSON(ns, name string, i int) string {
	return fmt.Sprintf(`{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3",`+
		`"metadata":{"name":%q,"namespace":%q,"labels":{"projectcalico.org/namespace":%q,"projectcalico.org/orchestrator":"openstack","role":"web"}},`+
		`"spec":{"orchestrator":"openstack","workload":"instance-%d","node":"host-a","endpoint":"tap%08x",`+
		`"interfaceName":"tap%08x","mac":"fa:16:3e:00:%02x:%02x","ipNetworks":["10.65.%d.%d/32"],"profiles":["openstack-sg-default"]}}`,
		name, ns, ns, i, i, i, (i>>8)&0xff, i&0xff, (i>>8)&0xff, i&0xff)
}

func wepKey(ns, name string) string { return wepPrefix + ns + "/" + name }

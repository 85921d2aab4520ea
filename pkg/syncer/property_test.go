package syncer_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestPropertyConvergesToEtcd applies random writes, deletes, garbage, multi-key transactions,
// compactions, connection cuts (during which the client's watches fall behind), etcd restarts and
// consumer stalls, then checks that the consumer's model equals a fresh list of etcd. The stream
// invariants (no nil in snapshots, per-key revisions only grow, updates after their snapshot) are
// checked on every message. Set SYNCER_SEED to replay a run.
func TestPropertyConvergesToEtcd(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SYNCER_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (SYNCER_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ops := 400
	if testing.Short() {
		ops = 100
	}

	s, raw := startEtcd(t)
	proxy := startProxy(t, strings.TrimPrefix(s.Endpoints[0], "http://"))
	ds := s.Datastore()
	ds.Etcd.Endpoints = []string{proxy.URL()}
	cfg := syncer.Config{
		Prefixes:       []string{poolPrefix, wepPrefix, datastore.BlockPrefix},
		Filter:         func(id datastore.ID) bool { return strings.HasSuffix(id.Key(), "/ignored") },
		PageSize:       3,
		MinBackoff:     5 * time.Millisecond,
		MaxBackoff:     100 * time.Millisecond,
		WatchTimeout:   time.Second,
		RequestTimeout: 500 * time.Millisecond,
	}
	c := startConsumer(t, newClient(t, ds), cfg)
	w := &randomWriter{t: t, rng: rng, raw: raw}
	counts := map[string]int{}
	restarts := 0
	for range ops {
		p := rng.IntN(100)
		switch {
		case p < 2 && restarts < 3:
			counts["restart"]++
			restarts++
			s.Restart()
		case p < 6:
			counts["compact"]++
			compact(t, raw)
		case p < 9:
			counts["cut"]++
			proxy.Cut()
			for range 1 + rng.IntN(10) {
				w.step()
			}
			if rng.IntN(2) == 0 {
				compact(t, raw)
			}
			proxy.Resume()
		case p < 13:
			counts["stall"]++
			c.pause()
			time.AfterFunc(time.Duration(rng.IntN(200))*time.Millisecond, c.resume)
		default:
			counts["write"]++
			w.step()
		}
		if rng.IntN(10) == 0 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
	}
	proxy.Resume()
	c.resume()
	c.waitFor(t, "InSync", func() bool { return c.statuses[len(c.statuses)-1] == syncer.InSync })
	c.waitConverged(t, raw)
	c.mu.Lock()
	t.Logf("ops %v; %d messages, %d snapshots, %d keys at the end", counts, len(c.messages), c.snapshots, len(c.model))
	c.mu.Unlock()
}

// randomWriter makes random changes to a small key space, so that keys are often rewritten.
type randomWriter struct {
	t   testing.TB
	rng *rand.Rand
	raw *clientv3.Client
	n   int
}

func (w *randomWriter) key() string {
	switch i := w.rng.IntN(20); {
	case i < 8:
		return poolPrefix + "pool-" + strconv.Itoa(i)
	case i < 16:
		return wepKey("ns"+strconv.Itoa(i%2), "wep-"+strconv.Itoa(i))
	case i < 18:
		return datastore.BlockKey("10.65." + strconv.Itoa(i) + ".0/26")
	case i < 19:
		return poolPrefix + "ignored"
	}
	return "/calico/unrelated/key"
}

func (w *randomWriter) value(key string) string {
	w.n++
	switch {
	case w.rng.IntN(15) == 0:
		return `{"garbage":` // undecodable
	case w.rng.IntN(15) == 0 && strings.HasPrefix(key, poolPrefix):
		return poolJSON("banana") // fails validation
	case strings.HasPrefix(key, poolPrefix):
		return poolJSON("10." + strconv.Itoa(w.n%250) + ".0.0/16")
	case strings.HasPrefix(key, wepPrefix):
		return wepJSON("ns", "x", w.n)
	}
	return `{"cidr":"10.65.0.0/26","affinity":"host:h` + strconv.Itoa(w.n) + `","allocations":[null],"unallocated":[0],"attributes":[]}`
}

func (w *randomWriter) step() {
	w.t.Helper()
	switch p := w.rng.IntN(10); {
	case p < 6:
		k := w.key()
		put(w.t, w.raw, k, w.value(k))
	case p < 9:
		del(w.t, w.raw, w.key())
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		k1, k2 := w.key(), w.key()
		if k1 == k2 {
			return
		}
		if _, err := w.raw.Txn(ctx).Then(clientv3.OpPut(k1, w.value(k1)), clientv3.OpDelete(k2)).Commit(); err != nil {
			w.t.Fatalf("transaction on %s, %s: %v", k1, k2, err)
		}
	}
}

package startup

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// harness is an embedded etcd, a datastore client and a startup configuration.
type harness struct {
	t      *testing.T
	etcd   *etcdtest.Server
	ds     *datastore.Client
	raw    *clientv3.Client
	env    envMap
	kernel Kernel
}

// fixtureEnv is the environment startup-result.json was written with (with our pool range).
func fixtureEnv(t *testing.T) envMap {
	return envMap{
		"NODENAME":              "host-z",
		"CALICO_IPV4POOL_CIDR":  "10.65.0.0/16",
		"CALICO_IPV4POOL_VXLAN": "Always",
		"AS":                    "64512",
		"CALICO_NODENAME_FILE":  filepath.Join(t.TempDir(), "nodename"),
	}
}

// fixtureHost is a host like the one the fixture was captured on.
func fixtureHost() *FakeKernel {
	return NewFakeKernel(iface(1, "lo", "127.0.0.1/8", "::1/128"), iface(2, "pfn", "198.18.255.2/30", "fe80::9/64"))
}

func newHarness(t *testing.T, env envMap, k Kernel) *harness {
	t.Helper()
	s := etcdtest.Start(t)
	ds, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return &harness{t: t, etcd: s, ds: ds, raw: s.Client(), env: env, kernel: k}
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// startup builds the component from the harness environment.
func (h *harness) startup() *Startup {
	h.t.Helper()
	cfg, err := LoadConfig(filepath.Join(h.t.TempDir(), "none.toml"), h.env.lookup)
	if err != nil {
		h.t.Fatal(err)
	}
	log := testLogger(h.t)
	s, err := New(cfg, Deps{Datastore: h.ds, Kernel: h.kernel, IPAM: ipam.New(h.ds, log), Notifier: daemon.NewNotifier(log),
		Log: log, Env: h.env.lookup, Hostname: func() (string, error) { return "unused", nil }})
	if err != nil {
		h.t.Fatal(err)
	}
	s.retry = backoff.Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	s.debounce, s.pingTimeout = 50*time.Millisecond, time.Second
	return s
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// revisions returns every key under /calico with its mod revision, and the store revision.
func (h *harness) revisions() (map[string]int64, int64) {
	h.t.Helper()
	resp, err := h.raw.Get(ctxT(h.t, 10*time.Second), "/calico/", clientv3.WithPrefix())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.ModRevision
	}
	return out, resp.Header.Revision
}

// values returns every resource under the v3 prefix as decoded JSON.
func (h *harness) values(prefix string) map[string]map[string]any {
	h.t.Helper()
	resp, err := h.raw.Get(ctxT(h.t, 10*time.Second), prefix, clientv3.WithPrefix())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, kv := range resp.Kvs {
		var v map[string]any
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			h.t.Fatalf("%s: %v", kv.Key, err)
		}
		out[string(kv.Key)] = v
	}
	return out
}

func (h *harness) node(name string) *api.Node {
	h.t.Helper()
	n, err := datastore.GetAs[*api.Node](ctxT(h.t, 10*time.Second), h.ds, "", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// eventually polls cond until it holds or the timeout passes, and returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, timeout)
	return 0
}

// getNode reads a node without failing the test (for polling).
func getNode(h *harness) (*api.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return datastore.GetAs[*api.Node](ctx, h.ds, "", "host-z")
}

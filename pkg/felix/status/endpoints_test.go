package status

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

var fixtureWEP = calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "default/cidpwl20000000000", EndpointID: "eth0"}

func runEndpoints(t *testing.T, ds *datastore.Client, cfg EndpointsConfig) (*Endpoints, *Metrics) {
	t.Helper()
	m := NewMetrics()
	e := NewEndpoints(ds, cfg, m, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e, m
}

func wl(id calc.WorkloadEndpointID, status string) dataplane.EndpointStatus {
	return dataplane.EndpointStatus{Workload: &id, Status: status}
}

func hep(name, status string) dataplane.EndpointStatus {
	return dataplane.EndpointStatus{HostEndpoint: name, Status: status}
}

// shape replaces every JSON value by its type, keeping the keys.
func shape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprintf("%T", v)
	}
	return out
}

// TestStatusKeysMatchFixture writes the same statuses as the felix that produced the fixture and
// compares keys, JSON shapes and (for endpoints) values.
func TestStatusKeysMatchFixture(t *testing.T) {
	_, ds, cli := startEtcd(t)
	fixture, err := etcdtest.ReadFixture("cni-ipam-and-status.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, kv := range fixture {
		if strings.HasPrefix(kv.Key, "/calico/felix/") {
			want[kv.Key] = kv.Value
		}
	}
	if len(want) != 5 {
		t.Fatalf("fixture has %d felix keys, expected 5", len(want))
	}
	region := datastore.Region("")
	runAgent(t, ds, AgentConfig{Hostname: "host-a", Region: region, Interval: time.Hour, TTL: 90 * time.Second})
	e, _ := runEndpoints(t, ds, EndpointsConfig{Hostname: "host-a", Region: region, Delay: 10 * time.Millisecond})
	e.Report(wl(fixtureWEP, "down"))
	e.Report(hep("host-a-all", "up"))
	e.Report(hep("host-a-eth0", "error"))

	var got map[string][]byte
	deadline := time.Now().Add(5 * time.Second)
	for len(got) != len(want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		resp, err := cli.Get(context.Background(), "/calico/felix/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		got = map[string][]byte{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = kv.Value
		}
	}
	if gk, wk := sortedKeysB(got), sortedKeysB(want); !reflect.DeepEqual(gk, wk) {
		t.Fatalf("keys:\n got %q\nwant %q", gk, wk)
	}
	for key, w := range want {
		if !reflect.DeepEqual(shape(t, got[key]), shape(t, w)) {
			t.Errorf("%s: shape %v, fixture %v", key, shape(t, got[key]), shape(t, w))
		}
		if strings.Contains(key, "/endpoint/") && jsonNorm(t, got[key]) != jsonNorm(t, w) {
			t.Errorf("%s = %s, fixture %s", key, got[key], w)
		}
	}
}

func jsonNorm(t *testing.T, raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeysB(m map[string][]byte) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func value(t *testing.T, cli *clientv3.Client, key string) (string, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
}

func waitValue(t *testing.T, cli *clientv3.Client, key, want string) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, rev := value(t, cli, key)
		if v == want {
			return rev
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want %q", key, v, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndpointStatusFlipsToUpAndIsDeleted(t *testing.T) {
	_, ds, cli := startEtcd(t)
	e, _ := runEndpoints(t, ds, EndpointsConfig{Hostname: "host-a", Region: "region-europe", Delay: 20 * time.Millisecond})
	id := calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack-region-europe/instance-1", EndpointID: "DEADBEEF-1234"}
	key := "/calico/felix/v2/region-europe/host/host-a/workload/openstack/openstack-region-europe%2finstance-1/endpoint/DEADBEEF-1234"
	e.KnownWorkload(id, true)
	e.Report(wl(id, "down"))
	waitValue(t, cli, key, `{"status":"down"}`)
	e.Report(wl(id, "up"))
	waitValue(t, cli, key, `{"status":"up"}`)
	e.Report(wl(id, "")) // the dataplane says it is gone
	waitValue(t, cli, key, "")
	e.Report(wl(id, "up"))
	waitValue(t, cli, key, `{"status":"up"}`)
	e.KnownWorkload(id, false) // calc removed it
	waitValue(t, cli, key, "")
}

// TestEndpointWritesAreRateLimited: many changes within one delay become one batch, and the same
// status is not rewritten.
func TestEndpointWritesAreRateLimited(t *testing.T) {
	_, ds, cli := startEtcd(t)
	e, m := runEndpoints(t, ds, EndpointsConfig{Hostname: "host-a", Region: "no-region", Delay: 400 * time.Millisecond})
	e.Report(hep("eth0", "down")) // first batch at once
	key := datastore.HostEndpointStatusKey("host-a", "eth0")
	waitValue(t, cli, key, `{"status":"down"}`)
	for i := 0; i < 10; i++ { // flapping within the delay: only the last status is written
		e.Report(hep("eth0", []string{"up", "down"}[i%2]))
	}
	e.Report(hep("eth0", "up"))
	waitValue(t, cli, key, `{"status":"up"}`)
	resp, err := cli.Get(context.Background(), key)
	if err != nil || resp.Kvs[0].Version != 2 {
		t.Fatalf("key written %d times, want 2 (down, then up once) (%v)", resp.Kvs[0].Version, err)
	}
	deadline := time.Now().Add(time.Second)
	for testutil.ToFloat64(m.writes.WithLabelValues("endpoint")) != 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := testutil.ToFloat64(m.writes.WithLabelValues("endpoint")); n != 2 {
		t.Errorf("write metric %v, want 2", n)
	}
	_, rev := value(t, cli, key)
	e.Report(hep("eth0", "up"))
	time.Sleep(600 * time.Millisecond)
	if _, again := value(t, cli, key); again != rev {
		t.Error("an unchanged status was rewritten")
	}
}

// TestResyncRemovesStaleKeysButNotLivePorts: keys left by a previous felix are removed once the
// dataplane is in sync, except those of endpoints that still exist (even before the dataplane
// reported them); wrong values are repaired.
func TestResyncRemovesStaleKeysButNotLivePorts(t *testing.T) {
	_, ds, cli := startEtcd(t)
	live := calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/vm1", EndpointID: "port-1"}
	wrong := calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/vm2", EndpointID: "port-2"}
	gone := calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/vm3", EndpointID: "port-3"}
	keyOf := func(id calc.WorkloadEndpointID) string {
		return datastore.WorkloadEndpointStatusKey("no-region", "host-a", id.OrchestratorID, id.WorkloadID, id.EndpointID)
	}
	other := datastore.WorkloadEndpointStatusKey("no-region", "host-b", "openstack", "openstack/vm9", "port-9")
	goneHEP := datastore.HostEndpointStatusKey("host-a", "old-eth1")
	for _, k := range []string{keyOf(live), keyOf(wrong), keyOf(gone), other, goneHEP} {
		if _, err := cli.Put(context.Background(), k, `{"status":"up"}`); err != nil {
			t.Fatal(err)
		}
	}
	e, _ := runEndpoints(t, ds, EndpointsConfig{Hostname: "host-a", Region: "no-region", Delay: 10 * time.Millisecond})
	e.KnownWorkload(live, true)
	e.KnownWorkload(wrong, true)
	e.Report(wl(wrong, "down"))
	waitValue(t, cli, keyOf(wrong), `{"status":"down"}`)
	_, liveRev := value(t, cli, keyOf(live))
	time.Sleep(100 * time.Millisecond)
	if v, _ := value(t, cli, keyOf(gone)); v == "" {
		t.Fatal("a key was deleted before the dataplane was in sync")
	}
	e.Synced()
	waitValue(t, cli, keyOf(gone), "")
	waitValue(t, cli, goneHEP, "")
	if v, rev := value(t, cli, keyOf(live)); v != `{"status":"up"}` || rev != liveRev {
		t.Errorf("live port's key changed to %q (rev %d -> %d)", v, liveRev, rev)
	}
	if v, _ := value(t, cli, other); v == "" {
		t.Error("another host's key was deleted")
	}
	// A key changed behind felix's back is repaired by the periodic resync.
	if _, err := cli.Put(context.Background(), keyOf(wrong), `{"status":"error"}`); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.resync = true
	e.mu.Unlock()
	e.poke()
	waitValue(t, cli, keyOf(wrong), `{"status":"down"}`)
}

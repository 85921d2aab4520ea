package status

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const helperEnv = "FELIX_STATUS_TEST_HELPER_ETCD"

// TestMain lets the test binary act as a felix that reports its status until it is killed.
func TestMain(m *testing.M) {
	if ep := os.Getenv(helperEnv); ep != "" {
		runHelper(ep)
		return
	}
	os.Exit(m.Run())
}

func runHelper(endpoint string) {
	d := config.Datastore{Etcd: config.Etcd{Endpoints: []string{endpoint}}}
	_ = d.Finish()
	ds, err := datastore.New(d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	a := NewAgent(ds, AgentConfig{Hostname: "host-a", Region: "no-region", Interval: time.Hour, TTL: 2 * time.Second},
		NewMetrics(), zerolog.New(os.Stderr).Level(zerolog.InfoLevel))
	a.Run(context.Background())
}

func startEtcd(t *testing.T) (*etcdtest.Server, *datastore.Client, *clientv3.Client) {
	t.Helper()
	srv := etcdtest.Start(t)
	cli := srv.Client()
	return srv, datastore.NewFromEtcd(cli), cli
}

// waitKey polls until key's state satisfies ok.
func waitKey(t *testing.T, cli *clientv3.Client, key string, timeout time.Duration, what string, ok func(*clientv3.GetResponse) bool) *clientv3.GetResponse {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Get(ctx, key)
		cancel()
		if err == nil && ok(resp) {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not reached within %s (last %v, err %v)", key, what, timeout, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exists(r *clientv3.GetResponse) bool { return len(r.Kvs) == 1 }
func absent(r *clientv3.GetResponse) bool { return len(r.Kvs) == 0 }

func runAgent(t *testing.T, ds *datastore.Client, cfg AgentConfig) (*Agent, *Metrics) {
	t.Helper()
	m := NewMetrics()
	a := NewAgent(ds, cfg, m, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, m
}

func TestAgentReportValueAndLease(t *testing.T) {
	_, ds, cli := startEtcd(t)
	started := time.Now().Add(-15 * time.Second)
	runAgent(t, ds, AgentConfig{Hostname: "host-a", Region: datastore.Region(""), Interval: time.Hour, TTL: 90 * time.Second, Started: started})
	key := "/calico/felix/v2/no-region/host/host-a/status"
	resp := waitKey(t, cli, key, 5*time.Second, "written", exists)
	var r map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &r); err != nil {
		t.Fatal(err)
	}
	ts, err := time.Parse(time.RFC3339, r["time"].(string))
	if err != nil || !strings.HasSuffix(r["time"].(string), "Z") || time.Since(ts) > time.Minute {
		t.Errorf("time %v is not a recent RFC 3339 UTC time (%v)", r["time"], err)
	}
	if up := r["uptime"].(float64); up < 15 || up > 60 {
		t.Errorf("uptime %v, want about 15 s", up)
	}
	if r["first_update"] != true || len(r) != 3 {
		t.Errorf("first report %v: want first_update true and exactly time, uptime, first_update", r)
	}
	lease := resp.Kvs[0].Lease
	ttl, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(lease))
	if lease == 0 || err != nil || ttl.GrantedTTL != 90 {
		t.Errorf("status key lease %x granted TTL %v (%v), want a 90 s lease", lease, ttl, err)
	}
	last := waitKey(t, cli, "/calico/felix/v2/no-region/host/host-a/last_reported_status", 5*time.Second, "written", exists)
	if last.Kvs[0].Lease != 0 || string(last.Kvs[0].Value) != string(resp.Kvs[0].Value) {
		t.Errorf("last_reported_status %s lease %x, want the same value without a lease", last.Kvs[0].Value, last.Kvs[0].Lease)
	}
}

// TestAgentKeepsOneLeaseAlive: the key outlives its TTL between writes (the lease is kept alive)
// and every rewrite uses the same lease.
func TestAgentKeepsOneLeaseAlive(t *testing.T) {
	_, ds, cli := startEtcd(t)
	_, m := runAgent(t, ds, AgentConfig{Hostname: "host-a", Region: "no-region", Interval: 300 * time.Millisecond, TTL: time.Second})
	key := datastore.AgentStatusKey("no-region", "host-a")
	first := waitKey(t, cli, key, 5*time.Second, "written", exists)
	lease, rev := first.Kvs[0].Lease, first.Kvs[0].ModRevision
	time.Sleep(2500 * time.Millisecond)
	now := waitKey(t, cli, key, time.Second, "still present", exists)
	if now.Kvs[0].Lease != lease || now.Kvs[0].ModRevision-rev < 4 {
		t.Errorf("after 2.5 s: lease %x (was %x), %d rewrites; want the same lease and >= 4 rewrites",
			now.Kvs[0].Lease, lease, now.Kvs[0].ModRevision-rev)
	}
	var r AgentReport
	_ = json.Unmarshal(now.Kvs[0].Value, &r)
	if r.FirstUpdate {
		t.Error("first_update still true after the first successful write")
	}
	if n := testutil.ToFloat64(m.leases); n != 1 {
		t.Errorf("granted %v leases, want 1", n)
	}
}

// TestAgentRegrantsLostLease: when the lease disappears (here: revoked behind felix's back, which
// also deletes the key), the next report grants a new lease and recreates the key.
func TestAgentRegrantsLostLease(t *testing.T) {
	_, ds, cli := startEtcd(t)
	a, m := runAgent(t, ds, AgentConfig{Hostname: "host-a", Region: "region-europe", Interval: 200 * time.Millisecond, TTL: 5 * time.Second})
	key := datastore.AgentStatusKey("region-europe", "host-a")
	first := waitKey(t, cli, key, 5*time.Second, "written", exists)
	if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(first.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	again := waitKey(t, cli, key, 5*time.Second, "rewritten on a new lease", func(r *clientv3.GetResponse) bool {
		return exists(r) && r.Kvs[0].Lease != first.Kvs[0].Lease
	})
	if testutil.ToFloat64(m.leases) != 2 || again.Kvs[0].Lease == 0 {
		t.Errorf("leases granted %v, want 2", testutil.ToFloat64(m.leases))
	}
	// A TTL change re-grants too; the key moves to the new lease.
	a.SetIntervals(200*time.Millisecond, 7*time.Second)
	moved := waitKey(t, cli, key, 5*time.Second, "moved to a 7 s lease", func(r *clientv3.GetResponse) bool {
		if !exists(r) {
			return false
		}
		ttl, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(r.Kvs[0].Lease))
		return err == nil && ttl.GrantedTTL == 7
	})
	_ = moved
	// Interval 0 disables reporting: the key is no longer rewritten and its lease is let go.
	a.SetIntervals(0, 7*time.Second)
	time.Sleep(300 * time.Millisecond)
	r1 := waitKey(t, cli, key, time.Second, "present", exists)
	time.Sleep(600 * time.Millisecond)
	r2 := waitKey(t, cli, key, time.Second, "present", exists)
	if r1.Kvs[0].ModRevision != r2.Kvs[0].ModRevision {
		t.Errorf("status rewritten while reporting is disabled")
	}
}

// TestAgentRewritesAfterOutage: etcd is unreachable for longer than the lease's TTL. The lease
// may expire meanwhile, but as soon as etcd is back the agent grants a new one and rewrites its
// status, long before its next regular report (here an hour away).
func TestAgentRewritesAfterOutage(t *testing.T) {
	srv := etcdtest.Start(t)
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	_, m := runAgent(t, ds, AgentConfig{Hostname: "host-a", Region: "no-region", Interval: time.Hour, TTL: 2 * time.Second})
	key := datastore.AgentStatusKey("no-region", "host-a")
	first := waitKey(t, srv.Client(), key, 5*time.Second, "written", exists)
	srv.Stop()
	time.Sleep(3500 * time.Millisecond) // longer than the TTL
	srv.Restart()
	back := time.Now()
	again := waitKey(t, srv.Client(), key, 10*time.Second, "rewritten on a new lease", func(r *clientv3.GetResponse) bool {
		return exists(r) && r.Kvs[0].Lease != first.Kvs[0].Lease
	})
	t.Logf("status rewritten %s after etcd's return", time.Since(back).Round(time.Millisecond))
	if n := testutil.ToFloat64(m.leases); n != 2 || again.Kvs[0].ModRevision <= first.Kvs[0].ModRevision {
		t.Errorf("%v leases granted, want 2 (one re-grant)", n)
	}
}

// TestLeaseExpiresAfterSIGKILL runs a reporter in a child process, kills it with SIGKILL and
// checks the status key disappears within the TTL (2 s) — and not before, while it lived.
func TestLeaseExpiresAfterSIGKILL(t *testing.T) {
	srv, _, cli := startEtcd(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+srv.Endpoints[0])
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	key := datastore.AgentStatusKey("no-region", "host-a")
	waitKey(t, cli, key, 10*time.Second, "written by the child", exists)
	time.Sleep(3 * time.Second) // > TTL: only the kept-alive lease keeps the key (interval is 1 h)
	waitKey(t, cli, key, time.Second, "alive after the TTL while the child runs", exists)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	waitKey(t, cli, key, 2*time.Second+1500*time.Millisecond, "expired after SIGKILL", absent)
	t.Logf("status key gone %s after SIGKILL (TTL 2 s)", time.Since(killed).Round(10*time.Millisecond))
	last := waitKey(t, cli, datastore.LastReportedStatusKey("no-region", "host-a"), time.Second, "kept", exists)
	if last.Kvs[0].Lease != 0 {
		t.Error("last_reported_status must not be on the lease")
	}
}

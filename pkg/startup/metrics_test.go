package startup

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
)

// scrape fetches the metrics page and returns each sample ("name{labels}" -> value).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// waitMetric polls the endpoint until cond holds for the sample (absent counts as missing).
func waitMetric(t *testing.T, url, sample, what string, cond func(float64) bool) {
	t.Helper()
	var last map[string]float64
	ok := func() bool {
		last = scrape(t, url)
		v, found := last[sample]
		return found && cond(v)
	}
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s did not get there within 20s (last value %v, present %v)", what, sample, last[sample], has(last, sample))
}

func has(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

func above(n float64) func(float64) bool { return func(v float64) bool { return v > n } }
func equal(n float64) func(float64) bool { return func(v float64) bool { return v == n } }

const (
	mRegistered   = `calico_startup_node_updates_total{op="register",result="updated"}`
	mAddrUpdated  = `calico_startup_node_updates_total{op="addresses",result="updated"}`
	mAddrError    = `calico_startup_node_updates_total{op="addresses",result="error"}`
	mTunnelOK     = `calico_startup_tunnel_reconciles_total{result="ok"}`
	mTunnelError  = `calico_startup_tunnel_reconciles_total{result="error"}`
	mDatastore    = `calico_startup_datastore_state`
	mAddr4        = `calico_startup_node_address{ip_version="4"}`
	mAddr6        = `calico_startup_node_address{ip_version="6"}`
	mLastUpdate   = `calico_startup_last_update_timestamp_seconds`
	mGoGoroutines = `go_goroutines`
)

// TestMetricsEndpoint serves the daemon's metrics over HTTP against a real etcd and follows them
// through registration, a host address change, a VXLAN pool change and an etcd outage.
func TestMetricsEndpoint(t *testing.T) {
	sock := notifytest.Listen(t, 2*time.Second) // staleness limit 1 s: loop rounds time out at 0.5 s
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	k := fixtureHost()
	h := newHarness(t, env, k)
	s := h.startup()
	s.tunnelResync = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := ServeMetrics(ctx, "127.0.0.1:0", s, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s/metrics", addr)
	before := scrape(t, url)
	if !has(before, mGoGoroutines) || before[mLastUpdate] != 0 || has(before, mRegistered) {
		t.Fatalf("before Run: go collector %v, last update %v, registered %v", has(before, mGoGoroutines), before[mLastUpdate], has(before, mRegistered))
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sock.WaitFor(t, "READY=1", 30*time.Second)

	started := float64(time.Now().Add(-time.Minute).Unix())
	waitMetric(t, url, mRegistered, "registration", equal(1))
	waitMetric(t, url, mDatastore, "datastore in sync", equal(3))
	waitMetric(t, url, mAddr4, "IPv4 address", equal(1))
	waitMetric(t, url, mAddr6, "no IPv6 address", equal(0))
	waitMetric(t, url, mTunnelOK, "first tunnel reconcile", above(0))
	waitMetric(t, url, mLastUpdate, "last update time", above(started))

	// A host address change: the Node is updated, and counted.
	k.SetInterfaces(iface(1, "lo", "127.0.0.1/8"), iface(2, "pfn", "198.18.254.2/30"))
	waitMetric(t, url, mAddrUpdated, "address update", equal(1))
	if got := h.node("host-z").Spec.BGP.IPv4Address; got != "198.18.254.2/30" {
		t.Fatalf("node address %q after the counted update", got)
	}

	// A VXLAN pool: reconciles keep succeeding and allocate the tunnel address.
	okBefore := scrape(t, url)[mTunnelOK]
	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapAlways)
	waitMetric(t, url, mTunnelOK, "tunnel reconcile after the pool change", above(okBefore))
	eventually(t, 10*time.Second, "tunnel address", func() bool { return h.node("host-z").Spec.IPv4VXLANTunnelAddr != "" })

	// etcd goes away: the datastore state drops, reconciles and address updates fail.
	h.etcd.Stop()
	k.SetInterfaces(iface(1, "lo", "127.0.0.1/8"), iface(2, "pfn", "198.18.253.2/30"))
	waitMetric(t, url, mDatastore, "datastore lost", equal(1))
	waitMetric(t, url, mTunnelError, "failed tunnel reconcile", above(0))
	waitMetric(t, url, mAddrError, "failed address update", above(0))
	stale := scrape(t, url)[mLastUpdate]

	// etcd is back: in sync again, the address update goes through and the time moves on.
	h.etcd.Restart()
	waitMetric(t, url, mDatastore, "datastore back", equal(3))
	waitMetric(t, url, mAddrUpdated, "address update after the outage", equal(2))
	waitMetric(t, url, mLastUpdate, "last update time after the outage", above(stale))
}

package dataplane

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestKernelDuplicateWorkloadIPDoesNotStallApplies (review of issue 23): two local workload
// endpoints claiming the same address (a stale endpoint whose address was handed out again)
// give two routes to one destination; the route reconciler keeps the first and reports the
// other as an error on every apply, and the dataplane counts every apply as failed: it retries
// with backoff (up to RetryMax, 10 s) and a full nftables resync each time, so every later
// change waits for the backoff. One endpoint's conflict should stay its own.
func TestKernelDuplicateWorkloadIPDoesNotStallApplies(t *testing.T) {
	tp := newTopology(t)
	tp.addWorkload(t, "a", ifA, ipA)
	tp.addWorkload(t, "b", ifB, ipB)
	rh, err := routes.OpenNetlink(tp.host.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rh.Close)
	rs := routes.New(rh, felixDefaults().routeOwnership(), testLogger(t))
	startDataplaneWith(t, tp, Config{}, []Option{WithRoutes(rs)}, egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipA))
}

// TestKernelWorkloadCannotTakeHostGateway (review of issue 23): a local workload endpoint whose
// ipNetworks holds the host's default gateway (198.18.0.2/32; valid, no pool check on read, as
// in Project Calico) gets a /32 route through its interface, more specific than the host's
// connected subnet: the host's traffic to its gateway, so every packet it routes out, goes to
// the workload. One endpoint takes over the host's uplink.
func TestKernelWorkloadCannotTakeHostGateway(t *testing.T) {
	tp := newTopology(t)
	tp.addWorkload(t, "a", ifA, ipA)
	rh, err := routes.OpenNetlink(tp.host.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rh.Close)
	rs := routes.New(rh, felixDefaults().routeOwnership(), testLogger(t))
	startDataplaneWith(t, tp, Config{}, []Option{WithRoutes(rs)}, egressAll(), kwep("a", ifA, "198.18.0.2"))
	if got := tp.host.Exec(t, "ip", "route", "get", "198.18.0.2"); !strings.Contains(got, "dev eth0") {
		t.Errorf("the host's route to its default gateway: %s (want dev eth0)", strings.TrimSpace(got))
	}
}

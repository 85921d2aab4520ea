package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"

	"github.com/rs/zerolog"
)

// TestFleetConverges runs a small fleet (20 hosts through one grpc-proxy, every agent with
// felix's calc graph and confd's store) through a cold start, churn, a leader loss, a compaction
// and a proxy restart, and checks that every agent ends with exactly the state (calc's dataplane
// model, confd's inputs) of an agent started afterwards from a fresh list. No timings are
// asserted.
func TestFleetConverges(t *testing.T) {
	netnstest.Require(t)
	if !EtcdAvailable() {
		t.Skip("needs the etcd binary (Debian package etcd-server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := Options{Hosts: 20, Policies: 200, NetSets: 20, Proxies: 1, FullAgents: -1, ChurnRate: 20,
		ChurnFor: 5 * time.Second, Disruptions: true, Tag: "t", ProgressInterval: 2 * time.Second,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel), Logf: t.Logf}
	r, err := Run(ctx, o)
	if r != nil {
		var b strings.Builder
		r.Print(&b)
		t.Log(b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Fanout.Changes == 0 {
		t.Fatal("the churn wrote no change")
	}
	if !r.Verified {
		t.Error("the agents' states were not compared with a fresh agent's")
	}
	for _, d := range r.Diffs {
		t.Error(d)
	}
}

package dataplane_test

import (
	"context"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestFullStackDuplicateVTEPMACStaysItsOwn (review of issue 23): another host's Node carrying
// the VXLAN MAC of a third host (a cloned image, or a MAC written by hand; Nodes are used field
// by field) makes the VXLAN manager report an error on every apply, and the dataplane counts
// every apply as failed: it never completes its first apply, so felix never reports ready
// (READY=1 waits for it) and it retries with a full nftables resync every backoff (up to 10 s).
// One remote Node's MAC should fail only that peer.
func TestFullStackDuplicateVTEPMACStaysItsOwn(t *testing.T) {
	netnstest.Require(t)
	host, fabric := netnstest.New(t, "dv-host"), netnstest.New(t, "dv-fab")
	if out, err := exec.Command("ip", "link", "add", "eth0", "netns", host.Name, "type", "veth", "peer", "name", "eth0", "netns", fabric.Name).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	fabric.Exec(t, "ip", "link", "set", "eth0", "up")
	host.Exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "eth0")
	host.Exec(t, "ip", "link", "set", "eth0", "up")
	addWorkload(t, host, "dv-a", "cali0000000000a", "10.65.0.1")
	addWorkload(t, host, "dv-b", "cali0000000000b", "10.65.0.2")
	dp := newFullDataplane(t, host.Path(), "")
	in, status := make(chan []calc.Update), make(chan dataplane.EndpointStatus, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dp.Run(ctx, in, status, func() {}) }()
	defer func() { cancel(); <-done }()

	web := calc.PolicyID{Tier: "default", Kind: "gnp", Name: "web"}
	state := fullStackState(web)
	clone := calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host3", MAC: "66:00:00:00:00:02", // host2's
		TunnelAddr: netip.MustParseAddr("10.65.2.1"), ParentDeviceAddr: netip.MustParseAddr("198.18.0.4")}}
	in <- append([]calc.Update{clone}, state...)
	select {
	case <-dp.FirstApplyDone():
	case <-time.After(10 * time.Second):
		t.Fatal("no successful apply in 10 s: a duplicate VTEP MAC of another host fails every apply")
	}
}

package startup

import (
	"context"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
)

// TestWatchdogDuringOutage: while etcd is unreachable, address changes and tunnel reconciles fail
// and are retried, but the loops keep making progress, so systemd's watchdog keeps being petted
// (an etcd outage must not get calico-startup killed as hung).
func TestWatchdogDuringOutage(t *testing.T) {
	sock := notifytest.Listen(t, 2*time.Second) // staleness limit 1 s
	k := fixtureHost()
	h := newHarness(t, fixtureEnv(t), k)
	s := h.startup()
	s.tunnelResync = 100 * time.Millisecond // reconciles keep hitting the dead etcd
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sock.WaitFor(t, "READY=1", 30*time.Second)

	h.etcd.Stop()
	k.SetInterfaces(iface(1, "lo", "127.0.0.1/8"), iface(2, "pfn", "198.18.254.2/30"))
	for range 6 { // 3 s: well past the staleness limit
		sock.Drain()
		sock.WaitFor(t, "WATCHDOG=1", 1500*time.Millisecond)
	}
	h.etcd.Restart()
	eventually(t, 20*time.Second, "node address update after the outage", func() bool {
		return h.node("host-z").Spec.BGP.IPv4Address == "198.18.254.2/30"
	})
}

package startup

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestDaemon runs the component as the service does: it waits for etcd (reporting STATUS), sends
// READY only once the Node is registered, follows address changes and VXLAN pool changes, pets
// the watchdog and shuts down cleanly.
func TestDaemon(t *testing.T) {
	sock := notifytest.Listen(t, 2*time.Second)
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	k := fixtureHost()
	h := newHarness(t, env, k)
	h.etcd.Stop()
	s := h.startup()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(cancel)

	seen := sock.WaitFor(t, "STATUS=Waiting for the datastore", 10*time.Second)
	noReady := time.After(500 * time.Millisecond)
waiting:
	for {
		select {
		case m := <-sock.Messages():
			seen = append(seen, m)
		case <-noReady:
			break waiting
		}
	}
	for _, m := range seen {
		if m == "READY=1" {
			t.Fatalf("READY before the datastore was reachable: %q", seen)
		}
	}
	h.etcd.Restart()
	start := time.Now()
	sock.WaitFor(t, "READY=1", 30*time.Second)
	t.Logf("READY %s after etcd came back", time.Since(start).Round(time.Millisecond))
	// READY implies registration: everything is in etcd already.
	n := h.node("host-z")
	if n.Spec.BGP == nil || n.Spec.BGP.IPv4Address != "198.18.255.2/30" {
		t.Fatalf("node at READY: %+v", n.Spec.BGP)
	}
	if _, err := datastore.GetAs[*api.IPPool](ctxT(t, 5*time.Second), h.ds, "", DefaultIPv4PoolName); err != nil {
		t.Fatalf("pool at READY: %v", err)
	}
	sock.WaitFor(t, "WATCHDOG=1", 5*time.Second)

	// The host address changes: the Node follows.
	k.SetInterfaces(iface(1, "lo", "127.0.0.1/8"), iface(2, "pfn", "198.18.254.2/30"))
	took := eventually(t, 10*time.Second, "node address update", func() bool {
		return h.node("host-z").Spec.BGP.IPv4Address == "198.18.254.2/30"
	})
	t.Logf("node address updated %s after the change", took.Round(time.Millisecond))
	if ifs := h.node("host-z").Spec.Interfaces; len(ifs) != 1 || ifs[0].Addresses[0] != "198.18.254.2" {
		t.Errorf("interfaces not updated: %+v", ifs)
	}

	// A VXLAN pool appears: the tunnel address is allocated; it goes away: released.
	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapAlways)
	took = eventually(t, 10*time.Second, "tunnel address allocation", func() bool {
		return h.node("host-z").Spec.IPv4VXLANTunnelAddr != ""
	})
	t.Logf("tunnel address allocated %s after the pool change", took.Round(time.Millisecond))
	addr := h.checkTunnel("host-z", pfx("10.65.0.0/16"))
	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapNever)
	took = eventually(t, 10*time.Second, "tunnel address release", func() bool {
		return h.node("host-z").Spec.IPv4VXLANTunnelAddr == ""
	})
	t.Logf("tunnel address released %s after the pool change", took.Round(time.Millisecond))
	h.checkNoTunnel("host-z", addr)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	sock.WaitFor(t, "STOPPING=1", 5*time.Second)
}

// TestRunFailsWithoutAddress: with nothing to detect, the service fails (exit 1 in the command)
// and never sends READY.
func TestRunFailsWithoutAddress(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t, fixtureEnv(t), NewFakeKernel(iface(1, "lo", "127.0.0.1/8"), iface(2, "docker0", "198.18.3.1/24")))
	err := h.startup().Run(ctxT(t, 30*time.Second))
	if err == nil || !strings.Contains(err.Error(), "autodetecting the IPv4 address") {
		t.Fatalf("want an autodetection error, got %v", err)
	}
	for _, m := range sock.Drain() {
		if m == "READY=1" {
			t.Fatal("READY sent although registration failed")
		}
	}
	if keys, _ := h.revisions(); len(keys) != 0 {
		t.Errorf("a failed registration wrote %v", keys)
	}
}

// TestStaticAddress: IP=<bare ip> takes the prefix length of the interface that holds it.
func TestStaticAddress(t *testing.T) {
	env := fixtureEnv(t)
	env["IP"] = "198.18.255.2"
	env["IP6"] = "fd5c:ff::7"
	h := newHarness(t, env, fixtureHost())
	if err := h.startup().Register(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	b := h.node("host-z").Spec.BGP
	if b.IPv4Address != "198.18.255.2/30" || b.IPv6Address != "fd5c:ff::7/128" {
		t.Errorf("got %q and %q", b.IPv4Address, b.IPv6Address)
	}
	if _, err := netip.ParsePrefix(b.IPv6Address); err != nil {
		t.Error(err)
	}
}

// TestAddressConflict: another Node with the same address stops registration.
func TestAddressConflict(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	other := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host-y"}, Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.255.2/30"}}}
	if _, err := h.ds.Create(ctxT(t, 5*time.Second), other); err != nil {
		t.Fatal(err)
	}
	err := h.startup().Register(ctxT(t, 30*time.Second))
	if err == nil || !strings.Contains(err.Error(), "host-y") {
		t.Fatalf("want a conflict naming host-y, got %v", err)
	}
	h.env["DISABLE_NODE_IP_CHECK"] = "true"
	if err := h.startup().Register(ctxT(t, 30*time.Second)); err != nil {
		t.Fatalf("with disable_node_ip_check: %v", err)
	}
}

// TestStopWhileWaiting: SIGTERM while etcd is unreachable is a clean stop, not a failure.
func TestStopWhileWaiting(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	h.etcd.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.startup().Run(ctx) }()
	sock.WaitFor(t, "STATUS=Waiting for the datastore", 10*time.Second)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// TestStatusLine: once registered, STATUS shows the last thing done, prefixed by the datastore's
// trouble when it is no longer in sync after it was (not while the syncer is still starting).
func TestStatusLine(t *testing.T) {
	type step struct {
		event string // "" = a datastore status instead
		ds    syncer.Status
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"registered", []step{{event: "node a registered"}}, "STATUS=Ready: node a registered"},
		{"syncer starting", []step{{event: "node a registered"}, {ds: syncer.WaitingForDatastore}, {ds: syncer.ResyncInProgress}},
			"STATUS=Ready: node a registered"},
		{"datastore lost", []step{{event: "node a registered"}, {ds: syncer.InSync}, {ds: syncer.WaitingForDatastore}},
			"STATUS=Datastore unreachable (WaitingForDatastore); the node stays as registered; last: node a registered"},
		{"resyncing", []step{{event: "node a registered"}, {ds: syncer.InSync}, {ds: syncer.ResyncInProgress}},
			"STATUS=Datastore ResyncInProgress; last: node a registered"},
		{"address update while lost", []step{{event: "node a registered"}, {ds: syncer.InSync}, {ds: syncer.WaitingForDatastore},
			{event: "node a addresses updated"}}, "STATUS=Datastore unreachable (WaitingForDatastore); the node stays as registered; last: node a addresses updated"},
		{"back", []step{{event: "node a registered"}, {ds: syncer.InSync}, {ds: syncer.WaitingForDatastore}, {ds: syncer.InSync}},
			"STATUS=Ready: node a registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := notifytest.Listen(t, 0)
			l := &statusLine{notify: daemon.NewNotifier(zerolog.Nop())}
			for _, s := range tt.steps {
				if s.event != "" {
					l.event("%s", s.event)
				} else {
					l.datastore(s.ds)
				}
			}
			l.notify.Status("end of test") // messages arrive asynchronously: read up to this one
			var last string
			for _, m := range sock.WaitFor(t, "STATUS=end of test", 5*time.Second) {
				if strings.HasPrefix(m, "STATUS=") && m != "STATUS=end of test" {
					last = m
				}
			}
			if last != tt.want {
				t.Errorf("last STATUS %q, want %q", last, tt.want)
			}
		})
	}
}

// TestStatusFollowsDatastore: the running service says in STATUS that etcd is unreachable, keeps
// running, and says it is ready again once etcd is back.
func TestStatusFollowsDatastore(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	h := newHarness(t, env, fixtureHost())
	s := h.startup()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sock.WaitFor(t, "READY=1", 30*time.Second)
	time.Sleep(500 * time.Millisecond) // the tunnel loop's syncer is in sync
	h.etcd.Stop()
	sock.WaitFor(t, "STATUS=Datastore unreachable", 10*time.Second)
	h.etcd.Restart()
	sock.WaitFor(t, "STATUS=Ready: node host-z registered", 10*time.Second)
	select {
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("Run returned while etcd was unreachable: %v", err)
	default:
	}
}

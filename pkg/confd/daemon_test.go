package confd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// chanSource is a Source fed by the test.
type chanSource chan syncer.Message

func (s chanSource) Run(ctx context.Context, out chan<- syncer.Message) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s:
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}
}

func nodeUpdate(name, v4 string) syncer.Update {
	return syncer.Update{ID: datastore.IDOf(datastore.ResourcePrefix + "nodes/" + name), Value: testNode(name, v4, "", nil)}
}

func poolUpdate(name, cidr string) syncer.Update {
	return syncer.Update{ID: datastore.IDOf(datastore.ResourcePrefix + "ippools/" + name), Value: &api.IPPool{
		ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.IPPoolSpec{CIDR: cidr}}}
}

// TestDaemon drives the daemon loop: READY after the first render, a burst of changes rendered
// once, a failed check reported in STATUS while the files stay, and recovery on the next change.
func TestDaemon(t *testing.T) {
	requireBIRD(t)
	sock := notifytest.Listen(t, 0)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Debounce.Duration = 200 * time.Millisecond
	fake := newFakeBIRDSocket(t, cfg.BIRDSocket, "0003 Reconfigured\n")
	var failChecks atomic.Bool
	run := func(ctx context.Context, argv []string) ([]byte, error) {
		if failChecks.Load() {
			// BIRD's output goes into STATUS: a line break must not start another assignment.
			return []byte("bird: injected failure\nREADY=1\nSTATUS=fake"), errors.New("exit status 1")
		}
		return ExecRunner(ctx, argv)
	}
	src := make(chanSource)
	log := zerolog.New(zerolog.NewTestWriter(t))
	d := NewDaemon(cfg, "host-a", src, run, daemon.NewNotifier(log), log)
	runDaemon(t, d)

	src <- syncer.Message{Status: syncer.WaitingForDatastore}
	src <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		nodeUpdate("host-a", "198.18.0.1/24"), nodeUpdate("host-b", "198.18.0.2/24")}}
	seen := sock.WaitFor(t, "READY=1", 10*time.Second)
	if !containsPrefix(seen, "STATUS=Waiting for the datastore") || !containsPrefix(seen, "STATUS=BGP sessions: 1 IPv4, 0 IPv6") {
		t.Errorf("before READY: %q", seen)
	}
	if fake.reloads() != 1 {
		t.Fatalf("%d reloads after the first render, want 1", fake.reloads())
	}

	// A burst: 20 pools within the debounce time become one render and one reload.
	for i := 0; i < 20; i++ {
		src <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{poolUpdate("p"+string(rune('a'+i)), "10.65."+strconv.Itoa(i)+".0/24")}}
	}
	waitFor(t, "one reload for the burst", func() bool { return fake.reloads() == 2 })
	time.Sleep(3 * cfg.Debounce.Duration)
	if n := fake.reloads(); n != 2 {
		t.Errorf("%d reloads after a burst, want 2", n)
	}
	ipam, _ := os.ReadFile(filepath.Join(dir, "bird_ipam.cfg"))
	if !strings.Contains(string(ipam), "10.65.19.0/24") {
		t.Errorf("the last pool of the burst is missing:\n%s", ipam)
	}

	// A failing check: STATUS says so, nothing changes, nothing reloads.
	failChecks.Store(true)
	src <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{nodeUpdate("host-c", "198.18.0.3/24")}}
	if st := waitLine(t, sock, "STATUS=Failed to apply BGP configuration"); !strings.HasSuffix(st, `injected failure\nREADY=1\nSTATUS=fake`) {
		t.Errorf("STATUS line %q does not carry the escaped output", st)
	}
	peers, _ := os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))
	if strings.Contains(string(peers), "198.18.0.3") || fake.reloads() != 2 {
		t.Errorf("a failed check changed the files or reloaded BIRD (%d reloads)", fake.reloads())
	}

	// The next change succeeds and includes the earlier one.
	failChecks.Store(false)
	src <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{nodeUpdate("host-d", "198.18.0.4/24")}}
	sock.WaitFor(t, "STATUS=BGP sessions: 3 IPv4", 10*time.Second)
	peers, _ = os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))
	if !strings.Contains(string(peers), "Mesh_198_18_0_3") || !strings.Contains(string(peers), "Mesh_198_18_0_4") || fake.reloads() != 3 {
		t.Errorf("after recovery: %d reloads, peers:\n%s", fake.reloads(), peers)
	}
}

// waitLine returns the first notify line with the given prefix.
func waitLine(t *testing.T, sock *notifytest.Socket, prefix string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-sock.Messages():
			if strings.HasPrefix(m, prefix) {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q", prefix)
		}
	}
}

// TestDaemonDatastoreLoss: while the datastore is unreachable confd is not ready and says so in
// STATUS; BIRD's files and process are left alone (no render, no reload, even on the periodic
// resync). Back in sync, it is ready again and STATUS shows the last result.
func TestDaemonDatastoreLoss(t *testing.T) {
	requireBIRD(t)
	sock := notifytest.Listen(t, 0)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.ResyncInterval.Duration = 100 * time.Millisecond
	fake := newFakeBIRDSocket(t, cfg.BIRDSocket, "0003 Reconfigured\n")
	src := make(chanSource)
	log := zerolog.New(zerolog.NewTestWriter(t))
	d := NewDaemon(cfg, "host-a", src, ExecRunner, daemon.NewNotifier(log), log)
	runDaemon(t, d)
	if ok, _ := d.Readiness(); ok {
		t.Error("ready before anything was applied")
	}
	src <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		nodeUpdate("host-a", "198.18.0.1/24"), nodeUpdate("host-b", "198.18.0.2/24")}}
	sock.WaitFor(t, "READY=1", 10*time.Second)
	if ok, reason := d.Readiness(); !ok {
		t.Errorf("not ready after the first sync: %s", reason)
	}
	peers, _ := os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))

	src <- syncer.Message{Status: syncer.WaitingForDatastore}
	sock.WaitFor(t, "STATUS=Datastore unreachable (WaitingForDatastore); BIRD keeps the last applied configuration", 5*time.Second)
	if ok, reason := d.Readiness(); ok || !strings.Contains(reason, "WaitingForDatastore") {
		t.Errorf("readiness while the datastore is unreachable = %v %q", ok, reason)
	}
	reloads := fake.reloads()
	time.Sleep(500 * time.Millisecond) // several resync ticks
	after, _ := os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))
	if fake.reloads() != reloads || string(after) != string(peers) {
		t.Errorf("BIRD's configuration changed while the datastore was unreachable (%d reloads)", fake.reloads()-reloads)
	}
	for _, m := range sock.Drain() {
		if strings.HasPrefix(m, "STATUS=") {
			t.Errorf("STATUS changed while the datastore was unreachable: %q", m)
		}
	}

	src <- syncer.Message{Status: syncer.InSync}
	sock.WaitFor(t, "STATUS=BGP sessions: 1 IPv4, 0 IPv6", 5*time.Second)
	if ok, reason := d.Readiness(); !ok {
		t.Errorf("not ready back in sync: %s", reason)
	}
}

// TestDaemonReadyWithoutBIRD: with no BIRD socket the daemon still becomes READY after a good
// render (BIRD reads the file when it starts).
func TestDaemonReadyWithoutBIRD(t *testing.T) {
	requireBIRD(t)
	sock := notifytest.Listen(t, 0)
	dir := t.TempDir()
	cfg := testConfig(dir)
	src := make(chanSource, 1)
	log := zerolog.New(zerolog.NewTestWriter(t))
	d := NewDaemon(cfg, "host-a", src, ExecRunner, daemon.NewNotifier(log), log)
	runDaemon(t, d)
	src <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{nodeUpdate("host-a", "198.18.0.1/24")}}
	seen := sock.WaitFor(t, "READY=1", 10*time.Second)
	if !containsPrefix(seen, "STATUS=BGP sessions: 0 IPv4, 0 IPv6; config applied at") || !strings.Contains(strings.Join(seen, "\n"), "BIRD not running yet") {
		t.Errorf("status before READY: %q", seen)
	}
	if _, err := os.Stat(filepath.Join(dir, "bird.cfg")); err != nil {
		t.Error(err)
	}
}

func TestRunOnce(t *testing.T) {
	requireBIRD(t)
	dir := t.TempDir()
	cfg := testConfig(dir)
	src := make(chanSource, 2)
	src <- syncer.Message{Status: syncer.WaitingForDatastore}
	src <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		nodeUpdate("host-a", "198.18.0.1/24"), nodeUpdate("host-b", "198.18.0.2/24")}}
	log := zerolog.Nop()
	d := NewDaemon(cfg, "host-a", src, ExecRunner, daemon.NewNotifier(log), log)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	peers, _ := os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))
	if !strings.Contains(string(peers), "Mesh_198_18_0_2") {
		t.Errorf("peers:\n%s", peers)
	}
	// Without a snapshot it gives up when the context ends.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if err := NewDaemon(cfg, "host-a", make(chanSource), ExecRunner, daemon.NewNotifier(log), log).RunOnce(ctx2); err == nil {
		t.Error("RunOnce without a snapshot returned nil")
	}
}

// TestRunOnceWaitsForInSync: a snapshot listed at an older revision (ResyncInProgress) is not
// rendered; RunOnce renders once the changes since then arrived and the syncer says InSync.
func TestRunOnceWaitsForInSync(t *testing.T) {
	requireBIRD(t)
	dir := t.TempDir()
	src := make(chanSource, 3)
	src <- syncer.Message{Status: syncer.ResyncInProgress, Snapshot: true, Updates: []syncer.Update{
		nodeUpdate("host-a", "198.18.0.1/24"), nodeUpdate("host-b", "198.18.0.2/24")}}
	src <- syncer.Message{Status: syncer.ResyncInProgress, Updates: []syncer.Update{nodeUpdate("host-c", "198.18.0.3/24")}}
	src <- syncer.Message{Status: syncer.InSync}
	log := zerolog.Nop()
	d := NewDaemon(testConfig(dir), "host-a", src, ExecRunner, daemon.NewNotifier(log), log)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	peers, _ := os.ReadFile(filepath.Join(dir, "bird_peers.cfg"))
	if !strings.Contains(string(peers), "Mesh_198_18_0_2") || !strings.Contains(string(peers), "Mesh_198_18_0_3") {
		t.Errorf("rendered before the changes since the snapshot arrived; peers:\n%s", peers)
	}
}

// runDaemon runs d until the test ends, then checks that it stopped cleanly.
func runDaemon(t *testing.T, d *Daemon) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

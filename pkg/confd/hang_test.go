package confd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// within fails the test when fn does not return within limit (it guards against hangs; it does
// not measure anything).
func within(t *testing.T, limit time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %s", what, limit)
	}
}

// TestRunCommandKillsTheGroup: a command that outlives its timeout is killed with its children,
// and the call returns although a child held the output pipe open.
func TestRunCommandKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	var err error
	within(t, 20*time.Second, "a timed-out command", func() {
		_, err = runCommand(context.Background(), 200*time.Millisecond,
			[]string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"})
	})
	if err == nil {
		t.Fatal("a command killed at its timeout reported success")
	}
	data, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	waitFor(t, "the child to be killed", func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z ")
	})
}

// hungBIRD listens on path and accepts connections but never answers.
func hungBIRD(t *testing.T, path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
}

// TestDaemonHungBIRD: a BIRD that accepts on its socket but never answers fails the sync within
// the sync timeout, STATUS says so, and the loop stays healthy for the watchdog (it would
// otherwise stall for birdctl's 30 s and systemd would kill confd).
func TestDaemonHungBIRD(t *testing.T) {
	requireBIRD(t)
	sock := notifytest.Listen(t, 2*time.Second)
	cfg := testConfig(t.TempDir())
	hungBIRD(t, cfg.BIRDSocket)
	src := make(chanSource, 1)
	log := zerolog.New(zerolog.NewTestWriter(t))
	d := NewDaemon(cfg, "host-a", src, ExecRunner, daemon.NewNotifier(log), log)
	runDaemon(t, d)
	src <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{nodeUpdate("host-a", "198.18.0.1/24")}}
	sock.WaitFor(t, "STATUS=Failed to apply BGP configuration (retrying in 1s; BIRD keeps its last good configuration): reloading BIRD", 10*time.Second)
	if stale := d.Watchdog().Stale(); len(stale) != 0 {
		t.Errorf("loops stale while BIRD hangs: %v", stale)
	}
}

// slowSource is a Source that takes a while to stop after its context ends, and records that it
// did.
type slowSource struct{ stopped atomic.Bool }

func (s *slowSource) Run(ctx context.Context, out chan<- syncer.Message) {
	<-ctx.Done()
	time.Sleep(100 * time.Millisecond)
	s.stopped.Store(true)
}

// TestRunWaitsForTheSource: Run and RunOnce return only once the source they started has
// stopped, so that the caller can close the datastore client after them.
func TestRunWaitsForTheSource(t *testing.T) {
	cfg := testConfig(t.TempDir())
	log := zerolog.Nop()
	for name, run := range map[string]func(*Daemon, context.Context) error{
		"Run": (*Daemon).Run, "RunOnce": (*Daemon).RunOnce,
	} {
		src := &slowSource{}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_ = run(NewDaemon(cfg, "host-a", src, ExecRunner, daemon.NewNotifier(log), log), ctx)
		cancel()
		if !src.stopped.Load() {
			t.Errorf("%s returned before its source stopped", name)
		}
	}
}

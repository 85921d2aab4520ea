package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// binaryEnv is a running etcd with a minimal cluster, the calico-felix binary and a network
// namespace for it to program (felix itself runs in the test's namespace to reach etcd).
type binaryEnv struct {
	t    *testing.T
	bin  string
	ns   *netnstest.NS
	cli  *clientv3.Client
	etcd *etcdtest.Server
}

func newBinaryEnv(t *testing.T) *binaryEnv {
	t.Helper()
	// Felix programs nftables in a network namespace of its own; building and running the binary
	// is slow.
	netnstest.RequireLong(t)
	e := &binaryEnv{t: t, bin: filepath.Join(t.TempDir(), "calico-felix")}
	if out, err := exec.Command("go", "build", "-o", e.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building calico-felix: %v\n%s", err, out)
	}
	e.ns = netnstest.New(t, "felix-bin")
	e.etcd = etcdtest.Start(t)
	e.cli = e.etcd.Client()
	e.put("clusterinformations/default", "ClusterInformation", `{"clusterGUID":"abc","calicoVersion":"v3.30","datastoreReady":true}`)
	e.put("felixconfigurations/default", "FelixConfiguration",
		`{"reportingInterval":"1s","reportingTTL":"3s","endpointReportingEnabled":true,"endpointReportingDelay":"10ms"}`)
	e.put("nodes/host-a", "Node", `{"bgp":{"ipv4Address":"198.18.0.1/24"}}`)
	return e
}

func (e *binaryEnv) put(key, kind, spec string) {
	e.t.Helper()
	name := key[strings.LastIndex(key, "/")+1:]
	val := fmt.Sprintf(`{"kind":%q,"apiVersion":"projectcalico.org/v3","metadata":{"name":%q,"uid":"00000000-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":%s}`,
		kind, name, spec)
	if _, err := e.cli.Put(context.Background(), datastore.ResourcePrefix+key, val); err != nil {
		e.t.Fatal(err)
	}
}

// start runs calico-felix; its exit status arrives on the returned channel.
func (e *binaryEnv) start() (*exec.Cmd, <-chan int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, "--config", "/nonexistent/felix.toml")
	cmd.Env = append(os.Environ(), "FELIX_ETCDENDPOINTS="+e.etcd.Endpoints[0], "FELIX_FELIXHOSTNAME=host-a",
		"FELIX_DATAPLANENETNS="+e.ns.Path(), "CALICO_LOG_FORMAT=text")
	log, err := os.Create(filepath.Join(e.t.TempDir(), "felix.log"))
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	exit := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			exit <- 0
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			exit <- ee.ExitCode()
		default:
			exit <- -1 // killed by a signal
		}
	}()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if e.t.Failed() {
			b, _ := os.ReadFile(log.Name())
			e.t.Logf("felix log:\n%s", b)
		}
	})
	return cmd, exit
}

func (e *binaryEnv) waitExit(exit <-chan int, want int) {
	e.t.Helper()
	select {
	case code := <-exit:
		if code != want {
			e.t.Fatalf("calico-felix exited with %d, want %d", code, want)
		}
	case <-time.After(20 * time.Second):
		e.t.Fatalf("calico-felix did not exit (want status %d)", want)
	}
}

func (e *binaryEnv) nftTables() string {
	out, _ := e.ns.Try("nft", "list", "tables")
	return out
}

func (e *binaryEnv) statusKey() *clientv3.GetResponse {
	resp, err := e.cli.Get(context.Background(), datastore.AgentStatusKey("no-region", "host-a"))
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// TestBinaryLifecycle runs the real calico-felix: READY after programming its namespace and
// WATCHDOG while healthy; exit 129 on a restart-only change; SIGTERM exits 0 and leaves the
// ruleset; after SIGKILL the leased status key disappears within the TTL (3 s).
func TestBinaryLifecycle(t *testing.T) {
	e := newBinaryEnv(t)
	sock := notifytest.Listen(t, 2*time.Second)

	_, exit := e.start()
	sock.WaitFor(t, "READY=1", 30*time.Second)
	// Idle, every loop still beats: the watchdog keeps being petted (every 500 ms).
	sock.Drain()
	time.Sleep(2500 * time.Millisecond)
	if n := strings.Count(strings.Join(sock.Drain(), "\n"), "WATCHDOG=1"); n < 3 {
		t.Errorf("%d WATCHDOG=1 in 2.5 s while idle, want >= 3", n)
	}
	if tables := e.nftTables(); !strings.Contains(tables, "calico") {
		t.Errorf("no calico table in the namespace after READY: %q", tables)
	}
	if r := e.statusKey(); len(r.Kvs) != 1 || r.Kvs[0].Lease == 0 {
		t.Errorf("agent status key %v: want it present on a lease", r.Kvs)
	}
	e.put("felixconfigurations/node.host-a", "FelixConfiguration", `{"interfacePrefix":"tap"}`)
	e.waitExit(exit, 129)

	cmd, exit := e.start()
	sock.WaitFor(t, "READY=1", 30*time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.waitExit(exit, 0)
	if tables := e.nftTables(); !strings.Contains(tables, "calico") {
		t.Errorf("SIGTERM removed the ruleset: %q", tables)
	}

	cmd, exit = e.start()
	sock.WaitFor(t, "READY=1", 30*time.Second)
	before := e.statusKey()
	deadline := time.Now().Add(5 * time.Second)
	for r := e.statusKey(); len(r.Kvs) == 0 || r.Kvs[0].ModRevision == before.Kvs[0].ModRevision; r = e.statusKey() {
		if time.Now().After(deadline) {
			t.Fatal("the third felix never rewrote its status")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	e.waitExit(exit, -1)
	for len(e.statusKey().Kvs) != 0 {
		if time.Since(killed) > 3*time.Second+1500*time.Millisecond {
			t.Fatalf("status key still present %s after SIGKILL (TTL 3 s)", time.Since(killed))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("status key gone %s after SIGKILL (TTL 3 s)", time.Since(killed).Round(10*time.Millisecond))
}

package felix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/status"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func noReady(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		if l == "READY=1" {
			t.Fatalf("READY=1 sent too early (messages %q)", lines)
		}
	}
}

func waitEtcd(t *testing.T, cli *clientv3.Client, key, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := cli.Get(context.Background(), key)
		got := ""
		if err == nil && len(resp.Kvs) == 1 {
			got = string(resp.Kvs[0].Value)
		}
		if got == want || want == "*" && got != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q (%v), want %q", key, got, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadyOnlyAfterFirstApply walks felix through startup: waiting for datastoreReady (no
// dataplane yet), building the dataplane from the resolved configuration, READY=1 only once the
// first apply is done, then endpoint status reporting.
func TestReadyOnlyAfterFirstApply(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t)
	cli := h.etcd.Client()
	h.snapshot(clusterInfo(false, ""))
	noReady(t, sock.WaitFor(t, "STATUS=Waiting for ClusterInformation default to have datastoreReady: true", 5*time.Second))
	select {
	case <-h.created:
		t.Fatal("dataplane started before datastoreReady")
	case <-time.After(100 * time.Millisecond):
	}

	h.event(clusterInfo(true, "openstack"), felixConfig("default", api.FelixConfigurationSpec{
		InterfacePrefix: "tap", EndpointReportingEnabled: api.Bool(true), EndpointReportingDelay: api.Dur(10 * time.Millisecond),
		HealthPort: api.Int(70000)}),
		ipPool("p", api.EncapAlways, false), wep1Update())
	dp := h.dataplane()
	if dp.cfg.Hostname != "host-a" || !dp.cfg.OpenStack || !dp.cfg.VXLANEnabled || dp.cfg.InterfacePrefixes[0] != "tap" ||
		!strings.HasPrefix(dp.cfg.VXLANTunnelMAC, "66:") {
		t.Errorf("dataplane config %+v", dp.cfg)
	}
	// calc held its first batch (the snapshot) for the dataplane, then sent what changed since.
	isWEP := func(u calc.Update) bool { _, ok := u.(calc.WorkloadEndpointUpdate); return ok }
	for deadline := time.Now().Add(10 * time.Second); !dp.has(isWEP) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := dp.received(); len(got) < 2 || slices.ContainsFunc(got[0], isWEP) || !dp.has(isWEP) {
		t.Errorf("dataplane got %d batches, want the held snapshot and the changes since, with the endpoint", len(got))
	}
	noReady(t, sock.Drain())
	close(dp.release)
	before := sock.WaitFor(t, "READY=1", 5*time.Second)
	if !strings.Contains(strings.Join(before, "\n"), "STATUS=") {
		t.Errorf("no STATUS before READY: %q", before)
	}

	key := datastore.WorkloadEndpointStatusKey("no-region", "host-a", wep1.OrchestratorID, wep1.WorkloadID, wep1.EndpointID)
	dp.statuses <- dataplane.EndpointStatus{Workload: &wep1, Status: "down"}
	waitEtcd(t, cli, key, `{"status":"down"}`)
	dp.statuses <- dataplane.EndpointStatus{Workload: &wep1, Status: "up"}
	waitEtcd(t, cli, key, `{"status":"up"}`)
	sock.WaitFor(t, "STATUS=In sync: 1 endpoints programmed (1 up)", 5*time.Second)
	waitEtcd(t, cli, datastore.AgentStatusKey("no-region", "host-a"), "*")
}

// TestWatchdogStopsWhenALoopStalls stalls each loop in turn: systemd's watchdog is no longer
// petted and liveness fails; when the loop recovers, petting resumes.
func TestWatchdogStopsWhenALoopStalls(t *testing.T) {
	for _, loop := range []string{LoopCalc, LoopDataplane} {
		t.Run(loop, func(t *testing.T) {
			sock := notifytest.Listen(t, 400*time.Millisecond)
			h := newHarness(t)
			dp := h.ready(nil)
			sock.WaitFor(t, "WATCHDOG=1", 2*time.Second)
			stall := func(on bool) { h.clock.stall(on) } // an idle graph whose timers do not fire
			if loop == LoopDataplane {
				stall = dp.stalled.Store
			}
			stall(true)
			time.Sleep(400 * time.Millisecond) // > the 200 ms staleness limit
			sock.Drain()
			time.Sleep(400 * time.Millisecond)
			for _, m := range sock.Drain() {
				if m == "WATCHDOG=1" {
					t.Fatalf("watchdog petted while %s is stalled", loop)
				}
			}
			if ok, reason := h.daemon.live(); ok || !strings.Contains(reason, loop) {
				t.Errorf("liveness = %v %q, want failing for %s", ok, reason, loop)
			}
			stall(false)
			sock.WaitFor(t, "WATCHDOG=1", 2*time.Second)
		})
	}
}

// TestConfigChanges: FelixConfiguration, ClusterInformation and pool changes arrive as calc's
// facts: live parameters apply, restart parameters and dataplane-relevant changes make felix exit
// for a restart, and the dataplane gets only what it consumes.
func TestConfigChanges(t *testing.T) {
	fc := func(spec api.FelixConfigurationSpec) syncer.Update { return felixConfig("default", spec) }
	cases := []struct {
		name     string
		environ  []string
		change   []syncer.Update
		restart  bool
		level    zerolog.Level
		dpUpdate bool // the dataplane gets an update
	}{
		{name: "log level applies live", change: []syncer.Update{fc(api.FelixConfigurationSpec{LogSeverityScreen: "Debug",
			ReportingInterval: api.Dur(5 * time.Second)})}, level: zerolog.DebugLevel},
		{name: "interface prefix needs a restart", change: []syncer.Update{fc(api.FelixConfigurationSpec{InterfacePrefix: "cali,tap"})}, restart: true},
		{name: "overridden by the environment: no restart", environ: []string{"FELIX_INTERFACEPREFIX=cali"},
			change: []syncer.Update{fc(api.FelixConfigurationSpec{InterfacePrefix: "tap"})}, level: zerolog.InfoLevel},
		{name: "node over default", change: []syncer.Update{fc(api.FelixConfigurationSpec{LogSeverityScreen: "Debug"}),
			felixConfig("node.host-a", api.FelixConfigurationSpec{LogSeverityScreen: "Warning"}),
			felixConfig("node.host-b", api.FelixConfigurationSpec{LogSeverityScreen: "Error"})}, level: zerolog.WarnLevel},
		{name: "datastore no longer ready", change: []syncer.Update{clusterInfo(false, "")}, restart: true},
		{name: "openstack cluster type", change: []syncer.Update{clusterInfo(true, "openstack")}, restart: true},
		{name: "a VXLAN pool appears", change: []syncer.Update{ipPool("p", api.EncapCrossSubnet, false)}, restart: true},
		{name: "a disabled VXLAN pool does not count", change: []syncer.Update{ipPool("p", api.EncapAlways, true),
			fc(api.FelixConfigurationSpec{LogSeverityScreen: "Warning"})}, level: zerolog.WarnLevel, dpUpdate: true},
		{name: "VXLANEnabled=false pins the encapsulation", environ: []string{"FELIX_VXLANENABLED=false"},
			change: []syncer.Update{ipPool("p", api.EncapAlways, false), fc(api.FelixConfigurationSpec{LogSeverityScreen: "Error"})},
			level:  zerolog.ErrorLevel, dpUpdate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.environ...)
			dp := h.ready(nil)
			<-h.levels // the initial level
			h.event(tc.change...)
			if tc.restart {
				err := h.exit()
				if !errors.Is(err, ErrRestart) {
					t.Fatalf("Run returned %v, want ErrRestart", err)
				}
				return
			}
			select {
			case l := <-h.levels:
				if l != tc.level {
					t.Errorf("log level %v, want %v", l, tc.level)
				}
			case err := <-h.done:
				t.Fatalf("Run returned %v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("live change not applied")
			}
			isPool := func(u calc.Update) bool { _, ok := u.(calc.IPPoolUpdate); return ok }
			deadline := time.Now().Add(5 * time.Second)
			for tc.dpUpdate && !dp.has(isPool) {
				if time.Now().After(deadline) {
					t.Fatalf("the pool did not reach the dataplane (%d batches)", len(dp.received()))
				}
				time.Sleep(5 * time.Millisecond)
			}
			if !tc.dpUpdate && len(dp.received()) != 1 {
				t.Errorf("a configuration change sent the dataplane %d more batches", len(dp.received())-1)
			}
		})
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	hp, mp := freePort(t), freePort(t)
	h := newHarness(t, "FELIX_HEALTHENABLED=true", "FELIX_HEALTHHOST=127.0.0.1", "FELIX_HEALTHPORT="+hp,
		"FELIX_PROMETHEUSMETRICSENABLED=true", "FELIX_PROMETHEUSMETRICSHOST=127.0.0.1", "FELIX_PROMETHEUSMETRICSPORT="+mp,
		"FELIX_NETLINKTIMEOUTSECS=20")
	h.snapshot(clusterInfo(true, ""), wep1Update(), felixConfig("default", api.FelixConfigurationSpec{BPFEnabled: api.Bool(true),
		IptablesBackend: api.Str("auto")}))
	h.event(ipPool("p1", api.EncapNever, false), ipPool("p2", api.EncapNever, true))
	dp := h.dataplane()
	if code, body := get(t, "http://127.0.0.1:"+hp+"/readiness"); code != 503 || !strings.Contains(body, "first apply") {
		t.Errorf("readiness before the first apply: %d %q", code, body)
	}
	close(dp.release)
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := get(t, "http://127.0.0.1:"+hp+"/readiness"); code != 200; code, _ = get(t, "http://127.0.0.1:"+hp+"/readiness") {
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, _ := get(t, "http://127.0.0.1:"+hp+"/liveness"); code != 200 {
		t.Errorf("liveness %d", code)
	}
	_, body := get(t, "http://127.0.0.1:"+mp+"/metrics")
	for _, want := range []string{"felix_datastore_resyncs_total 1", "felix_datastore_watch_events_total 2",
		"felix_datastore_syncer_status 2", `felix_local_endpoints{type="workload"} 1`, "felix_ready 1",
		"fake_dataplane_batches_total", "felix_status_writes_total", "felix_calc_batch_size_bucket", "go_goroutines",
		"process_resident_memory_bytes", "felix_resync_state 3", "felix_resyncs_started 1",
		"felix_cluster_num_workload_endpoints 1", "felix_active_local_endpoints 1", "felix_cluster_num_policies 0",
		`calico_host_unimplemented_settings{component="felix",field="spec.bpfEnabled",object="FelixConfiguration default"} 1`,
		`calico_host_unimplemented_settings{component="felix",field="FELIX_NETLINKTIMEOUTSECS",object="environment"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if n := strings.Count(body, "calico_host_unimplemented_settings{"); n != 2 { // iptablesBackend auto is the default
		t.Errorf("%d unimplemented settings in /metrics, want 2", n)
	}
	h.syncer.status.Store(int32(syncer.ResyncInProgress))
	if code, body := get(t, "http://127.0.0.1:"+hp+"/readiness"); code != 503 || !strings.Contains(body, "ResyncInProgress") {
		t.Errorf("readiness while resyncing: %d %q", code, body)
	}
}

// TestDatastoreLossNotReady: while the syncer waits for the datastore felix is not ready and
// says so on its STATUS line, but the dataplane keeps running untouched and felix does not exit;
// when the syncer is back in sync, felix is ready again.
func TestDatastoreLossNotReady(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t)
	dp := h.ready(nil)
	sock.WaitFor(t, "STATUS=In sync: 0 endpoints programmed (0 up)", 5*time.Second)
	batches := len(dp.received())

	h.syncer.msgs <- syncer.Message{Status: syncer.WaitingForDatastore}
	sock.WaitFor(t, "STATUS=Datastore unreachable; the dataplane keeps the last applied state (0 endpoints programmed)", 5*time.Second)
	if ok, reason := h.daemon.readiness(); ok || !strings.Contains(reason, "WaitingForDatastore") {
		t.Errorf("readiness while the datastore is unreachable = %v %q, want not ready", ok, reason)
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-h.done:
		t.Fatalf("felix exited while the datastore was unreachable: %v", err)
	case <-dp.stopped:
		t.Fatal("the dataplane stopped while the datastore was unreachable")
	default:
	}
	if got := len(dp.received()); got != batches {
		t.Errorf("the dataplane got %d batches while the datastore was unreachable, want none", got-batches)
	}

	h.syncer.msgs <- syncer.Message{Status: syncer.InSync}
	sock.WaitFor(t, "STATUS=In sync: 0 endpoints programmed (0 up)", 5*time.Second)
	if ok, reason := h.daemon.readiness(); !ok {
		t.Errorf("not ready once back in sync: %q", reason)
	}
}

// TestStopLeavesDataplane: cancelling (SIGTERM) stops every loop and Run returns nil; the
// dataplane is only told to stop (its Run returns), nothing is torn down.
func TestStopCleanly(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t)
	dp := h.ready(nil)
	h.cancel()
	if err := h.exit(); err != nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
	select {
	case <-dp.stopped:
	default:
		t.Error("Run returned before the dataplane loop stopped")
	}
	sock.WaitFor(t, "STOPPING=1", time.Second)
}

// TestEndpointStatusFiles: once the first apply is done felix removes the status file of an
// endpoint that no longer exists, writes the file of an endpoint the dataplane reports up, and
// removes it when the endpoint goes.
func TestEndpointStatusFiles(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.statusPrefix, status.StatusDirName)
	stale := filepath.Join(dir, "k8s ns%2Fgone eth0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	dp := h.ready(nil, wep1Update())
	waitFile(t, stale, "")
	path := filepath.Join(dir, status.StatusFileName(wep1))
	dp.statuses <- dataplane.EndpointStatus{Workload: &wep1, Status: "up", Endpoint: wep1Endpoint}
	waitFile(t, path, `{"ifaceName":"tapport-1","mac":"00:11:22:33:44:55","ipv4Nets":["10.65.0.2/32"]}`)
	h.event(wep1Delete())
	dp.statuses <- dataplane.EndpointStatus{Workload: &wep1, Status: ""}
	waitFile(t, path, "")
}

// waitFile waits until path holds want ("": until it does not exist).
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if want == "" && os.IsNotExist(err) || err == nil && string(b) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q (%v), want %q", path, b, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRequestAfterFirstApply: felix's request to etcd (pokeDatastore) runs once, after the first
// apply and not before, and not at all when felix stops first.
func TestRequestAfterFirstApply(t *testing.T) {
	for _, applies := range []bool{true, false} {
		t.Run(fmt.Sprintf("first apply %v", applies), func(t *testing.T) {
			h := newHarness(t)
			h.snapshot(clusterInfo(true, ""))
			dp := h.dataplane()
			select {
			case <-h.poked:
				t.Fatal("request before the first apply")
			case <-time.After(50 * time.Millisecond):
			}
			if applies {
				close(dp.release)
			} else {
				h.cancel()
				if err := h.exit(); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-h.poked:
				if !applies {
					t.Fatal("request although felix stopped before its first apply")
				}
			case <-time.After(time.Second):
				if applies {
					t.Fatal("no request after the first apply")
				}
			}
			time.Sleep(50 * time.Millisecond)
			if len(h.poked) > 0 {
				t.Fatal("more than one request")
			}
		})
	}
}

package status

import (
	"context"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

func TestStatusFileName(t *testing.T) {
	for _, tc := range []struct {
		id   calc.WorkloadEndpointID
		want string
	}{
		{calc.WorkloadEndpointID{OrchestratorID: "k8s", WorkloadID: "default/pod1", EndpointID: "eth0"}, "k8s default%2Fpod1 eth0"},
		{calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "default/5f2a9c", EndpointID: "eth0"}, "cni default%2F5f2a9c eth0"},
		{calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "a b/100%", EndpointID: "tap1"}, "openstack a%20b%2F100%25 tap1"},
	} {
		if got := StatusFileName(tc.id); got != tc.want {
			t.Errorf("StatusFileName(%+v) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestStatusFileContent: the JSON is what Project Calico's felix writes for the same endpoint
// (libcalico-go/lib/epstatusfile), field names and omitted empties included.
func TestStatusFileContent(t *testing.T) {
	for _, tc := range []struct {
		ep   *calc.WorkloadEndpoint
		want string
	}{
		{&calc.WorkloadEndpoint{Name: "cali12345-ab", MAC: "01:02:03:04:05:06",
			IPv4Nets: []netip.Prefix{netip.MustParsePrefix("10.0.240.2/24")}, IPv6Nets: []netip.Prefix{netip.MustParsePrefix("2001:db8:2::2/128")}},
			`{"ifaceName":"cali12345-ab","mac":"01:02:03:04:05:06","ipv4Nets":["10.0.240.2/24"],"ipv6Nets":["2001:db8:2::2/128"]}`},
		{&calc.WorkloadEndpoint{Name: "cali1", IPv4Nets: []netip.Prefix{netip.MustParsePrefix("10.65.0.5/32")}},
			`{"ifaceName":"cali1","ipv4Nets":["10.65.0.5/32"]}`},
	} {
		if got := string(statusFileContent(tc.ep)); got != tc.want {
			t.Errorf("content %s, want %s", got, tc.want)
		}
	}
}

func wepID(name string) calc.WorkloadEndpointID {
	return calc.WorkloadEndpointID{OrchestratorID: "k8s", WorkloadID: "ns/" + name, EndpointID: "eth0"}
}

func upStatus(name string, ips ...string) dataplane.EndpointStatus {
	id := wepID(name)
	ep := &calc.WorkloadEndpoint{Name: "cali" + name}
	for _, ip := range ips {
		ep.IPv4Nets = append(ep.IPv4Nets, netip.MustParsePrefix(ip))
	}
	return dataplane.EndpointStatus{Workload: &id, Status: "up", Endpoint: ep}
}

func statusOf(name, status string) dataplane.EndpointStatus {
	id := wepID(name)
	return dataplane.EndpointStatus{Workload: &id, Status: status}
}

// dirFiles lists the status directory: file name -> content.
func dirFiles(t *testing.T, prefix string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(prefix, StatusDirName))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(prefix, StatusDirName, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func writeStatusFile(t *testing.T, prefix, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(prefix, StatusDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, StatusDirName, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustFlush(t *testing.T, f *Files) {
	t.Helper()
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
}

// TestFilesLifecycle drives the writer step by step: nothing before the first apply; then stale
// files go, files of endpoints whose status is still unknown stay, and each file follows its
// endpoint's status and addressing; a resync repairs files changed behind felix's back.
func TestFilesLifecycle(t *testing.T) {
	prefix := t.TempDir()
	name := func(n string) string { return StatusFileName(wepID(n)) }
	writeStatusFile(t, prefix, name("old"), "{}")            // endpoint gone while felix was down
	writeStatusFile(t, prefix, name("kept"), "{}")           // exists, no status reported yet
	writeStatusFile(t, prefix, name("down"), "{}")           // exists, will be reported down
	tmp := filepath.Join(prefix, ".endpoint-status-123.tmp") // left by a crash mid-write
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	f := NewFiles(FilesConfig{PathPrefix: prefix}, m, zerolog.New(zerolog.NewTestWriter(t)))
	for _, n := range []string{"kept", "down", "new"} {
		f.KnownWorkload(wepID(n), true)
	}
	f.Report(upStatus("new", "10.65.0.5/32"))
	mustFlush(t, f)
	if got := slices.Sorted(maps.Keys(dirFiles(t, prefix))); len(got) != 3 || slices.Contains(got, name("new")) {
		t.Fatalf("files before the first apply: %v, want the three old ones untouched", got)
	}

	f.Synced()
	mustFlush(t, f)
	want := map[string]string{name("kept"): "{}", name("down"): "{}", name("new"): `{"ifaceName":"calinew","ipv4Nets":["10.65.0.5/32"]}`}
	if diff := cmp.Diff(want, dirFiles(t, prefix)); diff != "" {
		t.Errorf("after the first apply (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	st, err := os.Stat(filepath.Join(prefix, StatusDirName, name("new")))
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v, mode %v, want 0644", err, st.Mode())
	}

	f.Report(statusOf("down", "down"))
	f.Report(upStatus("new", "10.65.0.5/32", "10.65.0.6/32"))
	mustFlush(t, f)
	want = map[string]string{name("kept"): "{}", name("new"): `{"ifaceName":"calinew","ipv4Nets":["10.65.0.5/32","10.65.0.6/32"]}`}
	if diff := cmp.Diff(want, dirFiles(t, prefix)); diff != "" {
		t.Errorf("after down and an address change (-want +got):\n%s", diff)
	}

	// Behind our back: the new file is truncated and a stranger's file appears.
	writeStatusFile(t, prefix, name("new"), "")
	writeStatusFile(t, prefix, name("stranger"), "{}")
	f.mu.Lock()
	f.resync = true // what the resync tick does
	f.mu.Unlock()
	mustFlush(t, f)
	if diff := cmp.Diff(want, dirFiles(t, prefix)); diff != "" {
		t.Errorf("after the resync (-want +got):\n%s", diff)
	}

	f.KnownWorkload(wepID("new"), false)
	f.Report(statusOf("new", ""))
	mustFlush(t, f)
	if diff := cmp.Diff(map[string]string{name("kept"): "{}"}, dirFiles(t, prefix)); diff != "" {
		t.Errorf("after the endpoint went (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(m.writes.WithLabelValues("file")); got != 7 {
		t.Errorf("%v file writes and removals counted, want 7", got)
	}
}

// TestFilesRetry: while the directory cannot be made the writer counts errors and retries;
// once it can, the file appears.
func TestFilesRetry(t *testing.T) {
	base := t.TempDir()
	prefix := filepath.Join(base, "run")
	if err := os.WriteFile(prefix, nil, 0o644); err != nil { // a file where the directory should be
		t.Fatal(err)
	}
	m := NewMetrics()
	f := NewFiles(FilesConfig{PathPrefix: prefix}, m, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	f.KnownWorkload(wepID("a"), true)
	f.Report(upStatus("a", "10.65.0.1/32"))
	f.Synced()
	waitFor(t, "an error", func() bool { return testutil.ToFloat64(m.errors.WithLabelValues("file")) > 0 })
	if err := os.Remove(prefix); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(prefix, StatusDirName, StatusFileName(wepID("a")))
	waitFor(t, "the file", func() bool { _, err := os.Stat(path); return err == nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

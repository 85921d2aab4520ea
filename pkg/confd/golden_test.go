package confd

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenCases are datastore fixtures rendered for one node each. Names without a directory are
// the repository's shared fixtures (test/fixtures).
var goldenCases = []struct {
	name     string
	node     string
	fixtures []string
}{
	{"corpus-host-a", "host-a", []string{"calicoctl-corpus.json", "cni-ipam-and-status.json"}},
	{"corpus-host-b", "host-b", []string{"calicoctl-corpus.json"}},
	{"startup-host-z", "host-z", []string{"startup-result.json"}},
	{"full-mesh-host-a", "host-a", []string{"testdata/fixtures/full-mesh.json"}},
	{"full-mesh-host-c", "host-c", []string{"testdata/fixtures/full-mesh.json"}},
	{"full-mesh-unregistered", "host-new", []string{"testdata/fixtures/full-mesh.json"}},
	{"rr-clusters-rr-1", "rr-1", []string{"testdata/fixtures/rr-clusters.json"}},
	{"rr-clusters-client-1", "client-1", []string{"testdata/fixtures/rr-clusters.json"}},
	{"rr-clusters-rr-other", "rr-other", []string{"testdata/fixtures/rr-clusters.json"}},
	{"explicit-peers-host-a", "host-a", []string{"testdata/fixtures/explicit-peers.json"}},
	{"explicit-peers-host-b", "host-b", []string{"testdata/fixtures/explicit-peers.json"}},
	{"ipv6-host-a", "host-a", []string{"testdata/fixtures/ipv6.json"}},
	{"ipv6-host-v6only", "host-v6only", []string{"testdata/fixtures/ipv6.json"}},
	{"communities-host-a", "host-a", []string{"testdata/fixtures/communities.json"}},
	{"communities-host-b", "host-b", []string{"testdata/fixtures/communities.json"}},
	{"filters-host-a", "host-a", []string{"testdata/fixtures/filters.json"}},
	{"calico-settings-host-a", "host-a", []string{"testdata/fixtures/calico-settings.json"}},
	{"local-workloads-host-a", "host-a", []string{"testdata/fixtures/local-workloads.json"}},
	{"local-workloads-host-b", "host-b", []string{"testdata/fixtures/local-workloads.json"}},
	{"calico-settings-host-b", "host-b", []string{"testdata/fixtures/calico-settings.json"}},
}

// TestGolden renders each fixture with the shipped templates through the whole pipeline (which
// checks the result with `bird -p`), parses the installed files with `bird -p` once more, and
// compares them with the golden files (go test -update rewrites those).
func TestGolden(t *testing.T) {
	requireBIRD(t)
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			in := inputsFromFiles(t, tc.node, tc.fixtures...)
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.Vars = map[string]string{}
			res, err := NewEngine(cfg, tc.node, ExecRunner, zerolog.Nop()).Sync(context.Background(), in)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			if !res.BIRDNotRunning || len(res.Changed) != len(cfg.Templates) {
				t.Errorf("result = %+v, want every file changed and BIRD not running", res)
			}
			if out, err := exec.Command("bird", "-p", "-c", filepath.Join(dir, "bird.cfg")).CombinedOutput(); err != nil {
				t.Fatalf("bird -p rejects the installed files: %v: %s", err, out)
			}
			for _, tmpl := range cfg.Templates {
				compareGolden(t, filepath.Join("testdata", "golden", tc.name, tmpl.Dest), filepath.Join(dir, tmpl.Dest))
			}
		})
	}
}

func compareGolden(t *testing.T, golden, got string) {
	t.Helper()
	data, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(data)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", filepath.Base(golden), diff)
	}
}

// requireBIRD skips a test when BIRD 2 is not installed.
func requireBIRD(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bird"); err != nil {
		t.Skip("bird (Debian package bird2) is not installed")
	}
}

package confd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestMainOnetime runs calico-confd --onetime against an embedded etcd holding Project Calico's
// fixtures: the files it writes are the corpus-host-a golden files.
func TestMainOnetime(t *testing.T) {
	requireBIRD(t)
	srv := etcdtest.Start(t)
	cli := srv.Client()
	etcdtest.LoadFixture(t, cli, "calicoctl-corpus.json")
	etcdtest.LoadFixture(t, cli, "cni-ipam-and-status.json")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	tmpl, _ := filepath.Abs(templatesDir)
	writeFile(t, filepath.Join(dir, "confd.toml"), fmt.Sprintf(`
templates_dir = %q
output_dir = %q
conf_dir = %q
bird_socket = %q
log_severity = "Error"
`, tmpl, out, filepath.Join(dir, "conf.d"), filepath.Join(dir, "bird.ctl")))
	writeFile(t, filepath.Join(dir, "datastore.toml"), fmt.Sprintf("[etcd]\nendpoints = [%q]\n", srv.Endpoints[0]))
	env := map[string]string{"NODENAME": "host-a"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Main(ctx, Options{ConfigFile: filepath.Join(dir, "confd.toml"), DatastoreFile: filepath.Join(dir, "datastore.toml"),
		Onetime: true, Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range DefaultTemplates() {
		compareGolden(t, filepath.Join("testdata", "golden", "corpus-host-a", tmpl.Dest), filepath.Join(out, tmpl.Dest))
	}

	// A configuration error is reported before anything runs.
	writeFile(t, filepath.Join(dir, "bad.toml"), "bogus = 1\n")
	err = Main(ctx, Options{ConfigFile: filepath.Join(dir, "bad.toml"), Onetime: true, Env: func(string) (string, bool) { return "", false }}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Errorf("bad config: %v", err)
	}
	// calico-confd exits 78 (EX_CONFIG) on it: calico-confd.service does not restart it in a loop.
	if code := daemon.ExitCode(err); code != daemon.ExitConfig {
		t.Errorf("bad config: exit status %d, want %d", code, daemon.ExitConfig)
	}
	writeFile(t, filepath.Join(dir, "bad-ds.toml"), "[etcd]\nendpoints = 3\n")
	err = Main(ctx, Options{ConfigFile: filepath.Join(dir, "confd.toml"), DatastoreFile: filepath.Join(dir, "bad-ds.toml"), Onetime: true,
		Env: func(string) (string, bool) { return "", false }}, io.Discard)
	if code := daemon.ExitCode(err); code != daemon.ExitConfig {
		t.Errorf("bad datastore config (%v): exit status %d, want %d", err, code, daemon.ExitConfig)
	}
}

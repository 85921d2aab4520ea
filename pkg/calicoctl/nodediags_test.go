package calicoctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalNodeName(t *testing.T) {
	root := t.TempDir()
	host, _ := os.Hostname()
	if got := localNodeName(noEnv, root); got != strings.ToLower(host) {
		t.Errorf("without env or file: %q, want the hostname %q", got, strings.ToLower(host))
	}
	os.MkdirAll(filepath.Join(root, "var/lib/calico"), 0o755)
	os.WriteFile(filepath.Join(root, "var/lib/calico/nodename"), []byte("from-file\nsecond line\n"), 0o644)
	if got := localNodeName(noEnv, root); got != "from-file" {
		t.Errorf("with nodename file: %q", got)
	}
	env := func(k string) (string, bool) { return "from-env", k == "CALICO_NODENAME" }
	if got := localNodeName(env, root); got != "from-env" {
		t.Errorf("with CALICO_NODENAME: %q", got)
	}
}

func TestNodeDiagsArgs(t *testing.T) {
	h := newHarness(t)
	if r := h.ok("", "node", "diags", "--help"); !strings.HasPrefix(r.stdout, "Usage:\n  calicoctl node diags [--log-dir=<LOG_DIR>]") {
		t.Errorf("--help: %q", r.stdout)
	}
	if r := h.fail("", "node", "diags", "extra"); !strings.Contains(r.stderr, "Invalid option: 'calicoctl node diags extra'") {
		t.Errorf("extra argument: %q", r.stderr)
	}
}

// TestDiagsHostDatastore: the host description connects to etcd when it answers, and records
// why not when it does not (the bundle then says so).
func TestDiagsHostDatastore(t *testing.T) {
	h := newHarness(t)
	c := &cli{ctx: t.Context(), stdout: &strings.Builder{}, stderr: &strings.Builder{}, env: noEnv}
	dh := c.diagsHost(h.config, "/var/log/calico")
	if dh.Datastore == nil || dh.DatastoreErr != nil {
		t.Fatalf("with etcd up: %v", dh.DatastoreErr)
	}
	dh.Datastore.Close()
	h.etcd.Stop()
	dh = c.diagsHost(h.config, "")
	if dh.Datastore != nil || dh.DatastoreErr == nil || !strings.Contains(dh.DatastoreErr.Error(), "etcd does not answer") {
		t.Errorf("with etcd down: %v", dh.DatastoreErr)
	}
}

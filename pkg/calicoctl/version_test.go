package calicoctl

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
)

// TestVersionClientOnly: --client prints the client's version without touching the datastore
// (the configuration names an unreachable etcd).
func TestVersionClientOnly(t *testing.T) {
	cfg := writeFile(t, "ds.toml", "datastore_type = \"etcdv3\"\n[etcd]\nendpoints = [\"http://127.0.0.1:1\"]\n")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"version", "--client", "--config", cfg}, strings.NewReader(""), &out, &errb, noEnv)
	if code != 0 || out.String() != "Client Version:    dev\nGit commit:        \n" || errb.String() != "" {
		t.Errorf("exit %d stdout %q stderr %q", code, out.String(), errb.String())
	}
}

// TestVersionPoll: --poll prints the cluster version again when ClusterInformation changes, and
// stops when interrupted.
func TestVersionPoll(t *testing.T) {
	h := newHarness(t)
	h.put(clusterInfoKey, `{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.30.0","clusterType":"bgp"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb logtest.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"version", "--poll", "20ms", "--config", h.config}, strings.NewReader(""), &out, &errb, noEnv)
	}()
	waitFor(t, func() bool { return strings.Contains(out.String(), "v3.30.0") })
	h.put(clusterInfoKey, `{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.31.0","clusterType":"bgp"}}`)
	waitFor(t, func() bool { return strings.Contains(out.String(), "v3.31.0") })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	want := "Client Version:    dev\nGit commit:        \nCluster Version:   v3.30.0\nCluster Type:      bgp\nCluster Version:   v3.31.0\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if r := h.fail("", "version", "--poll", "often"); !strings.Contains(r.stderr, "Invalid poll duration specified: often") {
		t.Errorf("bad poll: %q", r.stderr)
	}
}

// waitFor waits until cond holds (failing the test after a generous bound).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScriptCompatibilityOptions: --allow-version-mismatch and --context (Kubernetes only) are
// accepted before the command and on every datastore command, as scripts pass them.
func TestScriptCompatibilityOptions(t *testing.T) {
	h := newHarness(t)
	h.ok(poolYAML("p1", "10.65.0.0/24"), "--allow-version-mismatch", "--context", "kind-a", "apply", "-f", "-")
	h.ok(poolYAML("p2", "10.65.1.0/24"), "--context=kind-a", "apply", "-f", "-", "--allow-version-mismatch", "--context", "kind-b")
	for _, args := range [][]string{
		{"get", "ippools", "--allow-version-mismatch"},
		{"--allow-version-mismatch", "get", "ippools", "--context=x"},
		{"ipam", "show", "--allow-version-mismatch", "--context", "x"},
		{"version", "--client", "--allow-version-mismatch"},
	} {
		if r := h.ok("", args...); r.stderr != "" {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}

package calicoctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/selector"
)

// harness runs calicoctl in-process against an embedded etcd.
type harness struct {
	t      *testing.T
	etcd   *etcdtest.Server
	cli    *clientv3.Client
	config string // --config file pointing at the embedded etcd
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s := etcdtest.Start(t)
	cfg := filepath.Join(t.TempDir(), "datastore.toml")
	text := fmt.Sprintf("datastore_type = \"etcdv3\"\n[etcd]\nendpoints = [%q]\n", s.Endpoints[0])
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, etcd: s, cli: s.Client(), config: cfg}
}

// runResult is what one calicoctl invocation did.
type runResult struct {
	code           int
	stdout, stderr string
}

func noEnv(string) (string, bool) { return "", false }

// run runs calicoctl with args (plus --config) and stdin.
func (h *harness) run(stdin string, args ...string) runResult {
	h.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append(args, "--config", h.config)
	code := run(ctx, args, strings.NewReader(stdin), &out, &errb, noEnv)
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs calicoctl and fails the test unless it exits 0.
func (h *harness) ok(stdin string, args ...string) runResult {
	h.t.Helper()
	r := h.run(stdin, args...)
	if r.code != 0 {
		h.t.Fatalf("calicoctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// fail runs calicoctl and fails the test unless it exits 1.
func (h *harness) fail(stdin string, args ...string) runResult {
	h.t.Helper()
	r := h.run(stdin, args...)
	if r.code != 1 {
		h.t.Fatalf("calicoctl %v: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// revision is etcd's current revision.
func (h *harness) revision() int64 {
	h.t.Helper()
	resp, err := h.cli.Get(context.Background(), "revision-probe")
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Header.Revision
}

// dump reads every key under /calico/ as decoded JSON.
func (h *harness) dump() map[string]any {
	h.t.Helper()
	resp, err := h.cli.Get(context.Background(), "/calico/", clientv3.WithPrefix())
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]any{}
	for _, kv := range resp.Kvs {
		var v any
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			h.t.Fatalf("%s holds invalid JSON: %v", kv.Key, err)
		}
		out[string(kv.Key)] = v
	}
	return out
}

func (h *harness) put(key, value string) {
	h.t.Helper()
	if _, err := h.cli.Put(context.Background(), key, value); err != nil {
		h.t.Fatal(err)
	}
}

// get reads one key as decoded JSON (nil if missing).
func (h *harness) get(key string) map[string]any {
	h.t.Helper()
	resp, err := h.cli.Get(context.Background(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		h.t.Fatalf("%s: %v", key, err)
	}
	return v
}

// writeFile writes content to a temporary file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dropMeta removes the given metadata fields from a decoded object, in place.
func dropMeta(v any, fields ...string) any {
	if m, ok := v.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, f := range fields {
				delete(md, f)
			}
		}
	}
	return v
}

// diffJSON describes how two decoded JSON values differ ("" when equal).
func diffJSON(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, _ := json.MarshalIndent(want, "", "  ")
	g, _ := json.MarshalIndent(got, "", "  ")
	return fmt.Sprintf("want:\n%s\ngot:\n%s", w, g)
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("invalid JSON output: %v\n%s", err, s)
	}
	return v
}

// selectorError is the parser's message for a bad selector.
func selectorError(t *testing.T, s string) string {
	t.Helper()
	_, err := selector.Parse(s)
	if err == nil {
		t.Fatalf("selector %q parses", s)
	}
	return err.Error()
}

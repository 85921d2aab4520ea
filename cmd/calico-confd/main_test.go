package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/confd"
)

// TestTLSWithHTTPEndpointRefused: TLS files with an http:// endpoint stop calico-confd with a
// message naming the setting, instead of connecting in plaintext.
func TestTLSWithHTTPEndpointRefused(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "datastore.toml")
	text := "[etcd]\nendpoints = [\"http://127.0.0.1:1\"]\ncert_file = \"/etc/calico/pki/c.pem\"\nkey_file = \"/etc/calico/pki/k.pem\"\n"
	if err := os.WriteFile(ds, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NODENAME": "host-a"}
	opts := confd.Options{ConfigFile: filepath.Join(dir, "none.toml"), DatastoreFile: ds, Onetime: true,
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	var stderr bytes.Buffer
	err := confd.Main(context.Background(), opts, &stderr)
	if err == nil || !strings.Contains(err.Error(), "etcd.cert_file in "+ds) || !strings.Contains(err.Error(), "plain http") {
		t.Fatalf("want a refusal naming etcd.cert_file, got %v", err)
	}
}

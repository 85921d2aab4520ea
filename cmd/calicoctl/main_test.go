package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/calicoctl"
)

// TestTLSWithHTTPEndpointRefused: a calicoctl.cfg with TLS files and an http:// endpoint is
// refused with a message, instead of sending requests in plaintext.
func TestTLSWithHTTPEndpointRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "calicoctl.cfg")
	text := "apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  datastoreType: etcdv3\n" +
		"  etcdEndpoints: http://127.0.0.1:1\n  etcdCACertFile: /etc/calico/pki/ca.pem\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := calicoctl.Main([]string{"get", "nodes", "--config", cfg}, strings.NewReader(""), &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "plain http") || !strings.Contains(stderr.String(), "/etc/calico/pki/ca.pem") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming the CA file", code, stderr.String())
	}
}

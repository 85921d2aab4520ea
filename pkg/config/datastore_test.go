package config_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

func envOf(m map[string]string) config.Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeTOML(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "datastore.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSWithPlainEndpointRefused: CA/cert/key files with an http:// endpoint used to connect in
// plaintext (etcd's client drops the credentials for http://). The configuration is refused with
// a message naming the setting and where it came from; a plain etcd proves the old path connected.
func TestTLSWithPlainEndpointRefused(t *testing.T) {
	srv := etcdtest.Start(t)
	files, err := etcdtest.GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := srv.Endpoints[0]
	cases := []struct {
		name    string
		file    string
		env     map[string]string
		mention []string
	}{
		{"file: ca_file with http", fmt.Sprintf("[etcd]\nendpoints = [%q]\nca_file = %q\n", plain, files.CA),
			nil, []string{"etcd.ca_file in ", plain, "plain http"}},
		{"file: cert and key with http", fmt.Sprintf("[etcd]\nendpoints = [%q]\ncert_file = %q\nkey_file = %q\n", plain, files.ClientCert, files.ClientKey),
			nil, []string{"etcd.cert_file in ", plain}},
		{"env: ETCD_CA_CERT_FILE with http", "", map[string]string{"ETCD_ENDPOINTS": plain, "ETCD_CA_CERT_FILE": files.CA},
			[]string{"ETCD_CA_CERT_FILE", "ETCD_ENDPOINTS", plain}},
		{"env with prefix: CALICO_ETCD_CA_CERT_FILE", fmt.Sprintf("[etcd]\nendpoints = [%q]\n", plain), map[string]string{"CALICO_ETCD_CA_CERT_FILE": files.CA},
			[]string{"CALICO_ETCD_CA_CERT_FILE", "etcd.endpoints in "}},
		{"http first in a TLS list", fmt.Sprintf("[etcd]\nendpoints = [%q, \"https://127.0.0.1:1\"]\nca_file = %q\n", plain, files.CA),
			nil, []string{"etcd.ca_file", plain}},
		{"mixed schemes without TLS files", fmt.Sprintf("[etcd]\nendpoints = [%q, \"https://127.0.0.1:1\"]\n", plain),
			nil, []string{"mix plain and TLS", "https://127.0.0.1:1"}},
		{"unknown scheme", "[etcd]\nendpoints = [\"htps://127.0.0.1:2379\"]\n", nil, []string{"scheme must be"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTOML(t, tc.file)
			_, err := config.LoadDatastore(path, envOf(tc.env))
			if err == nil {
				t.Fatal("configuration accepted")
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %q: %v", m, err)
				}
			}
		})
	}
	t.Run("the old path connected in plaintext", func(t *testing.T) {
		d := config.Datastore{Etcd: config.Etcd{Endpoints: []string{plain}}}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
		d.Etcd.CAFile = files.CA // what Finish used to accept
		mustPing(t, d)
	})
}

// mustPing connects to the datastore d configures and pings it.
func mustPing(t *testing.T, d config.Datastore) {
	t.Helper()
	c, err := datastore.New(d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

// TestTLSEndpointsAccepted: the consistent configurations still load and connect.
func TestTLSEndpointsAccepted(t *testing.T) {
	srv := etcdtest.StartTLS(t)
	f := srv.TLS
	path := writeTOML(t, fmt.Sprintf("[etcd]\nendpoints = [%q]\nca_file = %q\ncert_file = %q\nkey_file = %q\n",
		srv.Endpoints[0], f.CA, f.ClientCert, f.ClientKey))
	d, err := config.LoadDatastore(path, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	mustPing(t, d)
	for _, eps := range [][]string{{"http://127.0.0.1:2379"}, {"127.0.0.1:2379"}, {"unix:///run/etcd.sock"}, {"https://a:1", "https://b:1"}} {
		d := config.Datastore{Etcd: config.Etcd{Endpoints: eps}}
		if err := d.Finish(); err != nil {
			t.Errorf("%v: %v", eps, err)
		}
	}
}

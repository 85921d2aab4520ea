package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestVersionAndHelp(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--version"}, 0, []string{"calico-felix dev"}},
		{[]string{"--help"}, 0, []string{"/etc/calico/felix.toml", "FELIX_INTERFACEPREFIX", "FELIX_ETCDENDPOINTS",
			"ReportingIntervalSecs", "129"}},
		{[]string{"--no-such-flag"}, 2, nil},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

// TestBrokenConfigFileExitsWithConfigStatus: a broken configuration file exits 78 (EX_CONFIG,
// in calico-felix.service's RestartPreventExitStatus=), naming the file.
func TestBrokenConfigFileExitsWithConfigStatus(t *testing.T) {
	path := t.TempDir() + "/felix.toml"
	if err := writeFile(path, "InterfacePrefix = = 1\n"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"--config", path}, &out, &errOut); code != 78 || !strings.Contains(errOut.String(), path) {
		t.Errorf("exit %d, stderr %q: want 78 and the file named", code, errOut.String())
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// TestTLSWithHTTPEndpointRefused: felix's own etcd settings asking for TLS with an http://
// endpoint stop it with a message, instead of connecting in plaintext.
func TestTLSWithHTTPEndpointRefused(t *testing.T) {
	path := t.TempDir() + "/felix.toml"
	if err := writeFile(path, "EtcdEndpoints = \"http://127.0.0.1:1\"\nEtcdCaFile = \"/etc/calico/pki/ca.pem\"\n"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"--config", path}, &out, &errOut)
	if code != 78 || !strings.Contains(errOut.String(), "plain http") || !strings.Contains(errOut.String(), "/etc/calico/pki/ca.pem") {
		t.Errorf("exit %d, stderr %q: want 78 and the TLS setting named", code, errOut.String())
	}
}

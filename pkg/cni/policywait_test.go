package cni

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestEndpointStatusFileName: the names felix's status files have (Project Calico's
// WorkloadEndpointKeyToStatusFilename), for k8s and cni endpoints.
func TestEndpointStatusFileName(t *testing.T) {
	for _, tc := range []struct{ ns, wep, want string }{
		{"ns1", "node1-k8s-web--0-eth0", "k8s ns1%2Fweb-0 eth0"},
		{"default", "host--a-cni-cidpwl20000000000-eth0", "cni default%2Fcidpwl20000000000 eth0"},
	} {
		got, err := EndpointStatusFileName(tc.ns, tc.wep)
		if err != nil || got != tc.want {
			t.Errorf("%s/%s: %q (%v), want %q", tc.ns, tc.wep, got, err, tc.want)
		}
	}
}

// TestWaitForFile: an existing file ends the wait at once; a missing one is an error once the
// timeout passes.
func TestWaitForFile(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "k8s ns%2Fpod eth0")
	if err := os.WriteFile(present, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitForFile(context.Background(), present, time.Hour); err != nil {
		t.Errorf("existing file: %v", err)
	}
	if err := waitForFile(context.Background(), filepath.Join(dir, "missing"), time.Millisecond); err == nil {
		t.Error("a missing file ended the wait without an error")
	}
}

// TestNetConfSettingsNotImplemented: Project Calico fields calico-host does not implement are
// logged, with the network and the field; defaults are not.
func TestNetConfSettingsNotImplemented(t *testing.T) {
	var buf bytes.Buffer
	reportUnimplemented(zerolog.New(&buf), "net1", []byte(`{"name":"net1","type":"calico","num_queues":4,"num_queues_x":1,
		"feature_control":{"floating_ips":true,"ip_addrs_no_ipam":false},"policy":{"type":"k8s"},
		"kubernetes":{"kubeconfig":"/etc/cni/net.d/calico-kubeconfig"},"windows_use_single_network":true,"qps":0}`))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var fields []string
	for _, l := range lines {
		if !strings.Contains(l, `"object":"CNI network configuration net1"`) {
			t.Errorf("line without the network: %s", l)
		}
		_, f, _ := strings.Cut(l, `"field":"`)
		f, _, _ = strings.Cut(f, `"`)
		fields = append(fields, f)
	}
	want := "feature_control.floating_ips kubernetes.kubeconfig num_queues policy.type"
	if strings.Join(slices.Sorted(slices.Values(fields)), " ") != want {
		t.Errorf("logged %v, want %s:\n%s", fields, want, buf.String())
	}
}

// TestParseNetConfPolicySetupTimeout: a negative timeout is refused, as by Project Calico.
func TestParseNetConfPolicySetupTimeout(t *testing.T) {
	_, err := ParseNetConf([]byte(`{"name":"n","type":"calico","ipam":{"type":"calico-ipam"},"policy_setup_timeout_seconds":-1}`))
	if err == nil || !strings.Contains(err.Error(), "policy_setup_timeout_seconds") {
		t.Errorf("negative timeout: %v", err)
	}
	c, err := ParseNetConf([]byte(`{"name":"n","type":"calico","ipam":{"type":"calico-ipam"},"policy_setup_timeout_seconds":5,"endpoint_status_dir":"/run/x/endpoint-status"}`))
	if err != nil || c.PolicySetupTimeoutSeconds != 5 || c.EndpointStatusDir != "/run/x/endpoint-status" {
		t.Errorf("%+v %v", c, err)
	}
}

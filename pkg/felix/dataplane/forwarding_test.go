package dataplane_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestIPForwardingDisabled: with IPForwarding Disabled (dataplane IPForwardingDisabled), the
// dataplane leaves net.ipv4.ip_forward as it finds it (0 in a fresh namespace); with the
// default it sets it to 1 (TestFullStack).
func TestIPForwardingDisabled(t *testing.T) {
	netnstest.Require(t)
	host := netnstest.New(t, "fwd-host")
	log := logtest.Logger(t)
	_, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
		MTUFile: filepath.Join(t.TempDir(), "mtu"), IPForwardingDisabled: true}), log)
	if err != nil {
		t.Fatal(err)
	}
	if fwd := strings.TrimSpace(host.Exec(t, "sysctl", "-n", "net.ipv4.ip_forward")); fwd != "0" {
		t.Errorf("net.ipv4.ip_forward = %s with IPForwarding Disabled, want it left at 0", fwd)
	}
	_, err = dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
		MTUFile: filepath.Join(t.TempDir(), "mtu")}), log)
	if err != nil {
		t.Fatal(err)
	}
	if fwd := strings.TrimSpace(host.Exec(t, "sysctl", "-n", "net.ipv4.ip_forward")); fwd != "1" {
		t.Errorf("net.ipv4.ip_forward = %s with IPForwarding Enabled, want 1", fwd)
	}
}

// TestMTUIfacePattern: the host MTU (here seen through the workload MTU file) is the smallest
// MTU of the up interfaces matching MTUIfacePattern; with Project Calico's default pattern an
// interface named fab0 does not count (fallback 1460).
func TestMTUIfacePattern(t *testing.T) {
	netnstest.Require(t)
	host := netnstest.New(t, "mtu-host")
	host.Exec(t, "ip", "link", "add", "fab0", "mtu", "1400", "type", "veth", "peer", "name", "fab1", "mtu", "1400")
	host.Exec(t, "ip", "link", "set", "fab0", "up")
	host.Exec(t, "ip", "link", "set", "fab1", "up")
	waitLowerUp(t, host, "fab0") // the host MTU counts running interfaces only; a veth's carrier comes up shortly after
	log := logtest.Logger(t)
	for _, tc := range []struct {
		pattern *regexp.Regexp // nil: felix's default
		want    string
	}{{regexp.MustCompile("^fab"), "1400"}, {nil, "1460"}} {
		mtuFile := filepath.Join(t.TempDir(), "mtu")
		_, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
			MTUFile: mtuFile, MTUIfacePattern: tc.pattern}), log)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(mtuFile); err != nil || string(b) != tc.want {
			t.Errorf("MTUIfacePattern %v: workload MTU %q (%v), want %s", tc.pattern, b, err, tc.want)
		}
	}
}

// waitLowerUp waits until iface in n has its carrier (LOWER_UP), up to 10 s.
func waitLowerUp(t *testing.T, n *netnstest.NS, iface string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(n.Exec(t, "ip", "link", "show", iface), "LOWER_UP") {
			return
		}
	}
	t.Fatalf("%s never got its carrier", iface)
}

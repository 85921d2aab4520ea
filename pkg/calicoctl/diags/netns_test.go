package diags_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/birdctl"
	"github.com/calico-host/calico-host/pkg/calicoctl/diags"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// newNetNS makes a network namespace with a veth pair (198.18.77.1/24 and .2/24), a route to
// 10.65.77.0/26 and an nftables table, and removes it when the test ends.
func newNetNS(t *testing.T) *netnstest.NS {
	t.Helper()
	netnstest.Require(t, "nft", "bird")
	ns := netnstest.New(t, "diags")
	for _, args := range [][]string{
		{"link", "add", "veth-diag0", "type", "veth", "peer", "name", "veth-diag1"},
		{"addr", "add", "198.18.77.1/24", "dev", "veth-diag0"},
		{"addr", "add", "198.18.77.2/24", "dev", "veth-diag1"},
		{"link", "set", "veth-diag0", "up"},
		{"link", "set", "veth-diag1", "up"},
		{"route", "add", "10.65.77.0/26", "via", "198.18.77.2", "dev", "veth-diag0"},
	} {
		ns.IP(t, args...)
	}
	ns.Exec(t, "nft", "add", "table", "inet", "diagtest")
	return ns
}

const realBIRDConfig = `router id 198.18.77.1;
protocol device {}
protocol bgp Mesh_198_18_77_2 {
  local as 64512;
  neighbor 198.18.77.2 as 64512;
  password "birdsecret-real";
  ipv4 { import all; export none; };
}
`

// startBIRD runs BIRD in the namespace on the configuration under root and waits for its socket.
func startBIRD(t *testing.T, ns *netnstest.NS, root string) string {
	t.Helper()
	cfg := filepath.Join(root, "etc/calico/confd/config/bird.cfg")
	writeTree(t, root, map[string]string{"etc/calico/confd/config/bird.cfg": realBIRDConfig})
	dir := t.TempDir()
	sock := filepath.Join(dir, "bird.ctl")
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "bird", "-f", "-c", cfg, "-s", sock, "-P", filepath.Join(dir, "bird.pid"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wait := backoff.Backoff{Min: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	for attempt := 0; ; attempt++ {
		cl, err := birdctl.Dial(ctx, sock)
		if err == nil {
			cl.Close()
			return sock
		}
		if err := backoff.Sleep(ctx, wait.Delay(attempt)); err != nil {
			t.Fatalf("BIRD did not open %s: %v", sock, err)
		}
	}
}

// TestDiagsRealHost collects from real tools: ip and nft in a namespace of the test's own and a
// real BIRD (with a BGP password in its configuration) answering on its control socket.
func TestDiagsRealHost(t *testing.T) {
	ns := newNetNS(t)
	root := t.TempDir()
	sock := startBIRD(t, ns, root)
	h := &diags.Host{
		Root:          root,
		CommandPrefix: []string{"ip", "netns", "exec", ns.Name},
		LookPath: func(name string) (string, error) {
			if name == "systemctl" || name == "journalctl" { // the host's units are not this test's
				return "", errors.New("not in this test")
			}
			return exec.LookPath(name)
		},
		BIRDSockets:  []string{sock},
		DatastoreErr: errors.New("no etcd in this test"),
		NodeName:     "host-a",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := diags.Run(ctx, h, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := readBundle(t, res.Path)
	for name, want := range map[string]string{
		"network/links.txt":           "veth-diag0",
		"network/addresses.txt":       "inet 198.18.77.1/24",
		"network/ipv4_route.txt":      "10.65.77.0/26 via 198.18.77.2 dev veth-diag0",
		"network/ipv4_rule.txt":       "from all lookup main",
		"nftables/ruleset.nft":        "table inet diagtest",
		"bird/protocols.txt":          "Mesh_198_18_77_2 BGP",
		"bird/status.txt":             "Router ID is 198.18.77.1",
		"bird/config/bird.cfg":        `password "REDACTED";`,
		"versions/bird.txt":           "BIRD version",
		"units/NOTE-no-systemctl.txt": "systemctl is not available on this host",
	} {
		if !strings.Contains(files[name], want) {
			t.Errorf("%s lacks %q:\n%s", name, want, files[name])
		}
	}
	for name, content := range files {
		if strings.Contains(content, "birdsecret-real") {
			t.Errorf("BIRD's password is in %s", name)
		}
	}
}

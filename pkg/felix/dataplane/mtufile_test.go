package dataplane_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestKernelWorkloadMTUFile: the dataplane, on its own interfaces in a namespace whose host
// MTU is 1400, writes the workload MTU file at start from the configuration (1400: nothing
// forces an encapsulation) and rewrites it as IP pools turn encapsulations on and off: an IPIP
// pool (1380), an IPIP and a VXLAN pool (1350), no pool again (1400).
func TestKernelWorkloadMTUFile(t *testing.T) {
	netnstest.Require(t)
	host := netnstest.New(t, "mtuf-host")
	host.Exec(t, "ip", "link", "add", "fab0", "mtu", "1400", "type", "veth", "peer", "name", "fab1", "mtu", "1400")
	host.Exec(t, "ip", "link", "set", "fab0", "up")
	host.Exec(t, "ip", "link", "set", "fab1", "up")
	mtuFile := filepath.Join(t.TempDir(), "mtu")
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	dp, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
		MTUFile: mtuFile, MTUIfacePattern: regexp.MustCompile("^fab")}), log)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, mtuFile, "1400", "at start")
	in, status := make(chan []calc.Update), make(chan dataplane.EndpointStatus, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dp.Run(ctx, in, status, func() {}) }()
	defer func() { cancel(); <-done }()
	pool := func(name, cidr, ipip, vxlan string) calc.Update {
		return calc.IPPoolUpdate{Pool: &calc.IPPool{Name: name, CIDR: netip.MustParsePrefix(cidr), IPIPMode: ipip, VXLANMode: vxlan}}
	}
	in <- []calc.Update{pool("ipip", "10.65.0.0/17", "Always", "Never"), calc.InSync{}}
	waitFile(t, mtuFile, "1380", "with an IPIP pool")
	in <- []calc.Update{pool("vxlan", "10.65.128.0/17", "Never", "CrossSubnet")}
	waitFile(t, mtuFile, "1350", "with an IPIP and a VXLAN pool")
	in <- []calc.Update{calc.IPPoolRemove{Name: "ipip"}, calc.IPPoolRemove{Name: "vxlan"}}
	waitFile(t, mtuFile, "1400", "without pools")
}

// waitFile waits (up to 10 s) for path to hold want.
func waitFile(t *testing.T, path, want, stage string) {
	t.Helper()
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(path); string(got) == want {
			return
		}
	}
	t.Errorf("%s: workload MTU file holds %q, want %s", stage, got, want)
}

// TestKernelRequireMTUFile: when the workload MTU file cannot be written (its directory is a
// file), the dataplane starts anyway, unless RequireMTUFile asks it not to (Project Calico's
// felix then does not start either).
func TestKernelRequireMTUFile(t *testing.T) {
	netnstest.Require(t)
	host := netnstest.New(t, "mtur-host")
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	for _, require := range []bool{false, true} {
		_, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
			MTUFile: filepath.Join(blocker, "mtu"), RequireMTUFile: require}), log)
		if (err != nil) != require {
			t.Errorf("RequireMTUFile %v: New returned %v", require, err)
		}
	}
}

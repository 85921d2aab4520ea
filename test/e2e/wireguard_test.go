package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// TestWireGuard runs the whole stack on two BGP hosts with WireguardEnabled: each felix keeps a
// key, publishes it in its Node status, calico-startup allocates the WireGuard tunnel address,
// the felixes configure each other as peers and workload traffic crosses the device. The kernel
// here has no wireguard driver, so each host runs a userspace device (golang.zx2c4.com/wireguard
// over TUN) under a name of its own (the UAPI sockets share /var/run/wireguard).
func TestWireGuard(t *testing.T) {
	requireBinaries(t)
	kernel := wgtest.KernelDriver(t)
	devs := map[string]string{}
	before := func(f *topo.Fabric) error {
		for _, h := range f.Hosts {
			dev := fmt.Sprintf("wg%d-%d", h.Index, time.Now().UnixNano()%1000000)
			devs[h.Name] = dev
			h.FelixEnv = append(h.FelixEnv, "FELIX_WIREGUARDENABLED=true", "FELIX_WIREGUARDINTERFACENAME="+dev,
				"FELIX_ROUTETABLERANGES=300-310,1000-1100") // WireGuard's IPv4 table: the lowest, 300
			if !kernel {
				wgtest.Start(t, h.NS.Name, dev)
			}
		}
		t.Logf("WireGuard devices: kernel=%v (userspace golang.zx2c4.com/wireguard over TUN when false)", kernel)
		return nil
	}
	s := newSystemWith(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true}, before)
	ds, err := s.Datastore()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range s.Hosts {
		s.eventually(30*time.Second, h.Name+" publishes its key and gets a WireGuard address", func() error {
			n, err := datastore.GetAs[*api.Node](context.Background(), ds, "", h.Name)
			if err != nil {
				return err
			}
			if n.Status.WireguardPublicKey == "" || n.Spec.Wireguard == nil || n.Spec.Wireguard.InterfaceIPv4Address == "" {
				return fmt.Errorf("status %+v wireguard %+v", n.Status, n.Spec.Wireguard)
			}
			return nil
		})
	}
	a := s.workload(s.Host(1), "a1", nil, 80)
	c := s.workload(s.Host(2), "c2", nil, 80)
	s.expect(30*time.Second, tcp(a, c, 80, true), tcp(c, a, 80, true), icmp(a, c, true))
	h1 := s.Host(1)
	rules, _ := h1.NS.Exec(context.Background(), "ip", "rule")
	table, _ := h1.NS.Exec(context.Background(), "ip", "route", "show", "table", "300")
	if !strings.Contains(rules, "not from all fwmark 0x200000/0x200000 lookup 300") || !strings.Contains(table, "dev "+devs[h1.Name]) {
		t.Errorf("host-1 routing:\n%s\n%s", rules, table)
	}
	s.eventually(20*time.Second, "STATUS shows the peer up", func() error {
		if st := h1.Felix.Notify.Status(); !strings.Contains(st, "WireGuard: 1 of 1 peers up") {
			return fmt.Errorf("STATUS=%s", st)
		}
		return nil
	})
	stats, _ := h1.NS.Exec(context.Background(), "ip", "-s", "-j", "link", "show", devs[h1.Name])
	var links []struct {
		Stats64 struct {
			RX, TX struct{ Packets uint64 }
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(stats), &links); err != nil || len(links) != 1 ||
		links[0].Stats64.RX.Packets == 0 || links[0].Stats64.TX.Packets == 0 {
		t.Errorf("workload traffic did not cross %s: %s (%v)", devs[h1.Name], stats, err)
	}
}

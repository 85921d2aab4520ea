package dataplane_test

import (
	"net"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestWireGuardHostEncryption runs two hosts with WireguardHostEncryptionEnabled: traffic
// between the hosts' own addresses (ping, TCP) crosses the fabric only as WireGuard, as does
// workload traffic; each host's table routes the other's address through the device, the
// device carries the host's address (there is no tunnel address), and raw PREROUTING marks
// packets from host interfaces.
func TestWireGuardHostEncryption(t *testing.T) {
	netnstest.Require(t)
	fabric, hosts := newWGHosts(t)
	kernel := wgtest.KernelDriver(t)
	for _, h := range hosts {
		h.cfg.Wireguard.HostEncryption = true
		t.Logf("%s: WireGuard devices: %s", h.name, startDevice(t, h, kernel))
		var err error
		if h.pub, h.pub6, err = dataplane.WireguardKeys(h.cfg); err != nil {
			t.Fatal(err)
		}
	}
	a, b := hosts[0], hosts[1]
	t.Cleanup(func() { dumpOnFailure(t, hosts) })
	hostAddrs := [2]string{"198.18.0.2", "fd5c:ffff::2"}
	for _, addr := range hostAddrs {
		ln := listen(t, b.ns, net.JoinHostPort(addr, "9090"))
		defer ln.Close()
	}
	capt := startCapture(t, fabric)
	for i, h := range hosts {
		h.run(t, h.cfg)
		h.in <- wgState(hosts, i, true)
	}
	if v := strings.TrimSpace(a.ns.Exec(t, "sysctl", "-n", "net.ipv4.conf.all.src_valid_mark")); v != "1" {
		t.Errorf("net.ipv4.conf.all.src_valid_mark = %s, want 1 (host encryption)", v)
	}
	for _, f := range wgFams {
		waitFor(t, "a host-to-host ping over WireGuard", func() bool {
			return canPingOnce(a.ns, hostAddrs[f.i]) && strings.Contains(f.table1(a), hostAddrs[f.i]+" dev "+f.device(a))
		})
		if addrs := a.ns.Exec(t, "ip", f.ip, "addr", "show", "dev", f.device(a)); !strings.Contains(addrs, map[int]string{0: "198.18.0.1/32", 1: "fd5c:ffff::1/128"}[f.i]) {
			t.Errorf("%s: the device does not carry the host's address:\n%s", f.ip, addrs)
		}
		capt.reset()
		capt.hostPlainReset()
		if !canPingOnce(a.ns, hostAddrs[f.i]) || !dial(t, a.ns, net.JoinHostPort(hostAddrs[f.i], "9090")) {
			t.Errorf("%s: host-to-host ping or TCP failed with host encryption", f.ip)
		}
		if !canPingOnce(a.wl, f.dst) {
			t.Errorf("%s: workload ping failed with host encryption", f.ip)
		}
		wg, plain := capt.reset()
		if hp := capt.hostPlainReset(); wg[f.i] == 0 || plain[f.i] != 0 || hp[f.i] != 0 {
			t.Errorf("%s: fabric saw %d WireGuard packets, %d plaintext workload and %d plaintext host packets; want some, none, none", f.ip, wg[f.i], plain[f.i], hp[f.i])
		}
		table := map[int]string{0: "ip", 1: "ip6"}[f.i]
		chain := a.ns.Exec(t, "nft", "list", "chain", table, "calico", "raw-cali-wireguard-incoming-mark")
		if !strings.Contains(chain, `iifname "lo" return`) || !strings.Contains(chain, "meta mark set meta mark | 0x00200000") {
			t.Errorf("%s: the incoming-mark chain:\n%s", f.ip, chain)
		}
	}
}

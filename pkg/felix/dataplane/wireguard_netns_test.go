package dataplane_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
)

func TestMain(m *testing.M) {
	wgtest.MaybeServe()
	os.Exit(m.Run())
}

// wgHost is one host of the WireGuard test: its namespace, workload and dataplane.
type wgHost struct {
	name   string
	ns, wl *ns
	cfg    dataplane.Config
	pub    string // published public key
	in     chan []calc.Update
	stop   func()
	dp     *dataplane.Dataplane
}

// wgFabric joins the hosts' eth0 through a bridge in the fabric namespace, where the test
// captures what crosses between the hosts.
func newWGHosts(t *testing.T) (*ns, []*wgHost) {
	fabric := newNS(t, "wg-fab")
	fabric.run(t, "ip", "link", "add", "br0", "type", "bridge")
	fabric.run(t, "ip", "link", "set", "br0", "up")
	suffix := fabric.name[len(fabric.name)-6:]
	var hosts []*wgHost
	for i, n := range []string{"a", "b"} {
		h := &wgHost{name: "host-" + n, ns: newNS(t, "wg-"+n)}
		mustExec(t, "ip", "link", "add", "eth0", "netns", h.ns.name, "type", "veth", "peer", "name", "p"+n, "netns", fabric.name)
		fabric.run(t, "ip", "link", "set", "p"+n, "master", "br0", "up")
		h.ns.run(t, "ip", "addr", "add", fmt.Sprintf("198.18.0.%d/24", i+1), "dev", "eth0")
		h.ns.run(t, "ip", "link", "set", "eth0", "up")
		h.ns.run(t, "ip", "route", "add", "default", "via", "198.18.0.254") // proxy ARP answers for 169.254.1.1 via a route
		h.wl = addWorkload(t, h.ns, "wg-w"+n, "cali"+n, fmt.Sprintf("10.65.%d.1", i))
		// The plaintext route to the other host's block, as BIRD would program it.
		h.ns.run(t, "ip", "route", "add", fmt.Sprintf("10.65.%d.0/26", 1-i), "via", fmt.Sprintf("198.18.0.%d", 2-i), "proto", "bird")
		h.cfg = dataplane.Config{Hostname: h.name, NetNS: h.ns.path(), InterfaceRefreshInterval: 10 * time.Second,
			MTUFile: filepath.Join(t.TempDir(), "mtu"), Wireguard: dataplane.WireguardConfig{Enabled: true,
				InterfaceName: "wg" + n + "-" + suffix, KeyFile: filepath.Join(t.TempDir(), "wireguard-private-key")}}
		hosts = append(hosts, h)
	}
	return fabric, hosts
}

func mustExec(t *testing.T, args ...string) {
	t.Helper()
	if out, err := execCommand(args...); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func execCommand(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return string(out), err
}

// startDevice provides the WireGuard device: the kernel's where it has the driver (the
// dataplane creates it), else a userspace one. It returns which.
func startDevice(t *testing.T, h *wgHost, kernel bool) string {
	if kernel {
		return "kernel"
	}
	wgtest.Start(t, h.ns.name, h.cfg.Wireguard.InterfaceName)
	return "userspace (golang.zx2c4.com/wireguard over TUN)"
}

// run starts the host's dataplane with the given configuration.
func (h *wgHost) run(t *testing.T, cfg dataplane.Config) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	dp, err := dataplane.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	h.in, h.dp = make(chan []calc.Update, 4), dp
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	status := make(chan dataplane.EndpointStatus, 64)
	go func() {
		for range status {
		}
	}()
	go func() { defer close(done); dp.Run(ctx, h.in, status, func() {}) }()
	h.stop = func() { cancel(); <-done }
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
}

func (h *wgHost) halt() { h.stop(); h.stop = nil }

// wgState is what calc sends host i: both hosts (the other with its key when withKey), the
// other's block, this host's workload with policy allowing tcp 8080 and ping from anywhere.
func wgState(hosts []*wgHost, i int, withKey bool) []calc.Update {
	p := netip.MustParsePrefix
	other := hosts[1-i]
	hm := func(h *wgHost, j int, key string) calc.Update {
		return calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: h.name,
			IPv4Addr: p(fmt.Sprintf("198.18.0.%d/24", j+1)), WireguardPublicKey: key}}
	}
	okey := ""
	if withKey {
		okey = other.pub
	}
	pol := calc.PolicyID{Tier: "default", Kind: "gnp", Name: "web"}
	allow := &calc.Profile{OutboundRules: []calc.Rule{{Action: calc.RuleAllow}}}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: p(fmt.Sprintf("198.18.0.%d/24", i+1))},
		hm(hosts[i], i, hosts[i].pub), hm(other, 1-i, okey),
		calc.RouteUpdate{Route: &calc.Route{Dst: p(fmt.Sprintf("10.65.%d.0/26", 1-i)), Type: calc.RouteRemoteWorkload, DstNode: other.name}},
		calc.RouteUpdate{Route: &calc.Route{Dst: p(fmt.Sprintf("10.65.%d.0/26", i)), Type: calc.RouteLocalWorkload, DstNode: hosts[i].name}},
		calc.ActivePolicyUpdate{ID: pol, Policy: &calc.Policy{InboundRules: []calc.Rule{
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: []calc.PortRange{{First: 8080, Last: 8080}}},
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: []calc.PortRange{{First: 5201, Last: 5202}}}, // throughput
			{Action: calc.RuleAllow, Protocol: 1}}}},
		calc.ActiveProfileUpdate{Name: "egress", Profile: allow},
		calc.WorkloadEndpointUpdate{ID: wepID("w"), Endpoint: &calc.WorkloadEndpoint{Name: "cali" + string("ab"[i]),
			IPv4Nets: []netip.Prefix{p(fmt.Sprintf("10.65.%d.1/32", i))}, ProfileIDs: []string{"egress"},
			Tiers: []calc.TierInfo{{Name: "default", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{pol}}}}},
		calc.InSync{},
	}
}

// capture records what crosses the fabric: an AF_PACKET socket on host A's bridge port in the
// fabric namespace.
type capture struct {
	mu        sync.Mutex
	wgUDP     int       // UDP packets to or from port 51820
	plain     int       // IPv4 packets with a workload (10.65/16) address in the clear
	firstWG   time.Time // when the first WireGuard packet was seen
	fd        int
	closeOnce sync.Once
}

func startCapture(t *testing.T, fabric *ns) *capture {
	c := &capture{fd: -1}
	inNS(t, fabric, func() {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			t.Fatal(err)
		}
		port, err := net.InterfaceByName("pa")
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: port.Index}); err != nil {
			t.Fatal(err)
		}
		c.fd = fd
	})
	tv := unix.Timeval{Usec: 200000}
	_ = unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	done := make(chan struct{})
	go func() { defer close(done); c.loop() }()
	t.Cleanup(func() { c.close(); <-done })
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (c *capture) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		fd := c.fd
		c.fd = -1
		c.mu.Unlock()
		_ = unix.Close(fd)
	})
}

func (c *capture) loop() {
	buf := make([]byte, 65536)
	for {
		c.mu.Lock()
		fd := c.fd
		c.mu.Unlock()
		if fd < 0 {
			return
		}
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			return
		}
		c.record(buf[:n])
	}
}

// record classifies an Ethernet frame.
func (c *capture) record(f []byte) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != unix.ETH_P_IP {
		return
	}
	ip := f[14:]
	src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	wl := netip.MustParsePrefix("10.65.0.0/16")
	c.mu.Lock()
	defer c.mu.Unlock()
	if wl.Contains(src) || wl.Contains(dst) {
		c.plain++
	}
	hl := int(ip[0]&0xf) * 4
	if ip[9] == unix.IPPROTO_UDP && len(ip) >= hl+4 {
		sp, dp := binary.BigEndian.Uint16(ip[hl:]), binary.BigEndian.Uint16(ip[hl+2:])
		if sp == 51820 || dp == 51820 {
			c.wgUDP++
			if c.firstWG.IsZero() {
				c.firstWG = time.Now()
			}
		}
	}
}

func (c *capture) reset() (wg, plain int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wg, plain = c.wgUDP, c.plain
	c.wgUDP, c.plain, c.firstWG = 0, 0, time.Time{}
	return wg, plain
}

func (c *capture) first() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstWG
}

// TestWireGuardTwoHosts runs two hosts' dataplanes with WireGuard: peers from the published
// keys, workload traffic encrypted on the fabric, policy still enforced, a host without a key
// on plaintext routes, and cleanup when WireGuard is turned off.
func TestWireGuardTwoHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	fabric, hosts := newWGHosts(t)
	kernel := wgtest.KernelDriver(t)
	for _, h := range hosts {
		t.Logf("%s: WireGuard device: %s", h.name, startDevice(t, h, kernel))
		var err error
		if h.pub, _, err = dataplane.WireguardKeys(h.cfg); err != nil || h.pub == "" {
			t.Fatalf("keys: %q %v", h.pub, err)
		}
	}
	a, b := hosts[0], hosts[1]
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range hosts {
				for _, c := range [][]string{{"ip", "rule"}, {"ip", "route", "show", "table", "all"}, {"ip", "addr"}, {"nft", "list", "ruleset"}} {
					out, _ := execCommand(append([]string{"ip", "netns", "exec", h.ns.name}, c...)...)
					t.Logf("%s: %s:\n%s", h.name, strings.Join(c, " "), out)
				}
				for _, c := range [][]string{{"ping", "-c", "1", "-W", "1", "10.65.1.1"}, {"ip", "neigh"}, {"ip", "route"}} {
					out, _ := execCommand(append([]string{"ip", "netns", "exec", h.wl.name}, c...)...)
					t.Logf("%s workload: %s:\n%s", h.name, strings.Join(c, " "), out)
				}
				out, _ := execCommand("ip", "netns", "exec", h.ns.name, "sysctl", "net.ipv4.conf.calia.proxy_arp", "net.ipv4.ip_forward", "net.ipv4.conf.calib.proxy_arp")
				t.Logf("%s", out)
			}
		}
	})
	ln := listen(t, b.wl, "10.65.1.1:8080")
	defer ln.Close()
	capt := startCapture(t, fabric)

	// No keys known yet (the other host has not published one): plaintext routes.
	for i, h := range hosts {
		h.run(t, h.cfg)
		h.in <- wgState(hosts, i, false)
	}
	waitFor(t, "a plaintext ping", func() bool { return canPingOnce(a.wl, "10.65.1.1") })
	if _, plain := capt.reset(); plain == 0 {
		t.Error("a host without a key: no plaintext packets on the fabric")
	}
	if out := table1(a); strings.TrimSpace(out) != "" {
		t.Errorf("WireGuard routes to a host without a key: %s", out)
	}
	plainRate := throughput(t, a.wl, b.wl, "10.65.1.1:5201")

	// The keys arrive: from here on workload traffic is encrypted.
	capt.reset()
	start := time.Now()
	for i, h := range hosts {
		h.in <- wgState(hosts, i, true)
	}
	waitFor(t, "a WireGuard packet on the fabric", func() bool { canPingOnce(a.wl, "10.65.1.1"); return !capt.first().IsZero() })
	t.Logf("time from the peers' keys reaching the dataplanes to the first encrypted packet on the fabric: %v", capt.first().Sub(start))
	waitFor(t, "a ping over WireGuard", func() bool { return canPingOnce(a.wl, "10.65.1.1") })
	capt.reset()
	checkWGState(t, a, b)
	if !canPingOnce(a.wl, "10.65.1.1") {
		t.Error("ping failed over WireGuard")
	}
	if !dial(t, a.wl, "10.65.1.1:8080") {
		t.Error("tcp 8080 (allowed) failed over WireGuard")
	}
	if dial(t, a.wl, "10.65.1.1:8081") {
		t.Error("tcp 8081 (denied by policy) got through over WireGuard")
	}
	if wg, plain := capt.reset(); wg == 0 || plain != 0 {
		t.Errorf("fabric saw %d WireGuard packets and %d plaintext workload packets; want some and none", wg, plain)
	}
	checkWGMetrics(t, a)
	wgRate := throughput(t, a.wl, b.wl, "10.65.1.1:5202")
	if wg, plain := capt.reset(); wg == 0 || plain != 0 {
		t.Errorf("during the TCP stream the fabric saw %d WireGuard packets and %d plaintext workload packets", wg, plain)
	}
	t.Logf("single TCP stream workload to workload: plaintext %.0f Mbit/s, WireGuard (userspace=%v) %.0f Mbit/s", plainRate, !kernel, wgRate)

	// WireGuard off at A (felix restarts with the new setting): rule, routes, peers and key go.
	a.halt()
	off := a.cfg
	off.Wireguard.Enabled = false
	if pub, _, err := dataplane.WireguardKeys(off); err != nil || pub != "" {
		t.Fatalf("disabled keys: %q %v", pub, err)
	}
	if _, err := os.Stat(a.cfg.Wireguard.KeyFile); !os.IsNotExist(err) {
		t.Errorf("the private key file survived disabling: %v", err)
	}
	a.run(t, off)
	a.in <- wgState(hosts, 0, true)
	waitFor(t, "the WireGuard rule to go", func() bool { return !strings.Contains(a.ns.run(t, "ip", "rule"), "lookup 1") })
	if out := table1(a); strings.TrimSpace(out) != "" {
		t.Errorf("routes left in the WireGuard table: %s", out)
	}
	if out := a.ns.run(t, "ip", "link", "show", a.cfg.Wireguard.InterfaceName); !kernel && strings.Contains(out, "state UP") || kernel && out != "" {
		t.Errorf("WireGuard device left configured: %s", out)
	}
}

func checkWGState(t *testing.T, a, b *wgHost) {
	t.Helper()
	rule := a.ns.run(t, "ip", "rule")
	if !strings.Contains(rule, "99:\tnot from all fwmark 0x200000/0x200000 lookup 1") {
		t.Errorf("WireGuard rule missing:\n%s", rule)
	}
	r := table1(a)
	if !strings.Contains(r, "10.65.1.0/26 dev "+a.cfg.Wireguard.InterfaceName+" proto 80 scope link") {
		t.Errorf("WireGuard table:\n%s", r)
	}
	link := a.ns.run(t, "ip", "link", "show", a.cfg.Wireguard.InterfaceName)
	if !strings.Contains(link, "mtu 1440") {
		t.Errorf("device MTU is not host MTU - 60:\n%s", link)
	}
	nft := a.ns.run(t, "nft", "list", "chain", "ip", "calico", "filter-cali-INPUT")
	if !strings.Contains(nft, "udp dport 51820 fib daddr type local accept") {
		t.Errorf("nftables input lacks the WireGuard accept:\n%s", nft)
	}
}

func canPingOnce(n *ns, dst string) bool {
	out, err := execCommand("ip", "netns", "exec", n.name, "ping", "-c", "1", "-W", "1", dst)
	return err == nil && strings.Contains(out, "1 received")
}

// throughput sends a single TCP stream from one workload to a listener in the other for 2 s
// and returns the rate in Mbit/s.
func throughput(t *testing.T, from, to *ns, addr string) float64 {
	var ln net.Listener
	inNS(t, to, func() {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			t.Fatal(err)
		}
	})
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	var c net.Conn
	inNS(t, from, func() {
		var err error
		if c, err = net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
			t.Fatalf("throughput dial: %v", err)
		}
	})
	buf := make([]byte, 128<<10)
	start := time.Now()
	for time.Since(start) < 2*time.Second {
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("throughput write: %v", err)
		}
	}
	c.Close()
	n := <-got
	return float64(n) * 8 / time.Since(start).Seconds() / 1e6
}

// table1 lists felix's WireGuard routing table ("" when it is empty or absent).
func table1(h *wgHost) string {
	out, err := execCommand("ip", "netns", "exec", h.ns.name, "ip", "route", "show", "table", "1")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// checkWGMetrics: the peer is up and Calico's wireguard_* metrics describe it.
func checkWGMetrics(t *testing.T, h *wgHost) {
	t.Helper()
	if up, total, on := h.dp.WireguardPeers(); up != 1 || total != 1 || !on {
		t.Errorf("WireguardPeers = %d of %d (on %v), want 1 of 1", up, total, on)
	}
	reg := prometheus.NewRegistry()
	for _, c := range h.dp.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf
	}
	for _, name := range []string{"wireguard_meta", "wireguard_latest_handshake_seconds", "wireguard_bytes_sent", "wireguard_bytes_rcvd"} {
		mf := got[name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Errorf("metric %s: %v", name, mf)
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["hostname"] != h.name || labels["public_key"] != h.pub {
			t.Errorf("%s labels %v", name, labels)
		}
	}
	if mf := got["wireguard_bytes_sent"]; mf != nil && mf.GetMetric()[0].GetCounter().GetValue() == 0 {
		t.Error("wireguard_bytes_sent is 0 after traffic")
	}
}

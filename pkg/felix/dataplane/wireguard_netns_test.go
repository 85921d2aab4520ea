package dataplane_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

func TestMain(m *testing.M) {
	wgtest.MaybeServe()
	os.Exit(m.Run())
}

// wgHost is one host of the WireGuard test: its namespace, workload and dataplane.
type wgHost struct {
	name   string
	ns, wl *netnstest.NS
	cfg    dataplane.Config
	pub    string // published public keys
	pub6   string
	in     chan []calc.Update
	logs   *logtest.Buffer // the dataplane's warnings
	stop   func()
	dp     *dataplane.Dataplane
}

// wgFabric joins the hosts' eth0 through a bridge in the fabric namespace, where the test
// captures what crosses between the hosts.
func newWGHosts(t *testing.T) (*netnstest.NS, []*wgHost) {
	fabric := netnstest.New(t, "wg-fab")
	fabric.Exec(t, "ip", "link", "add", "br0", "type", "bridge")
	fabric.Exec(t, "ip", "link", "set", "br0", "up")
	suffix := fabric.Name[len(fabric.Name)-6:]
	var hosts []*wgHost
	for i, n := range []string{"a", "b"} {
		h := &wgHost{name: "host-" + n, ns: netnstest.New(t, "wg-"+n)}
		netnstest.Run(t, "ip", "link", "add", "eth0", "netns", h.ns.Name, "type", "veth", "peer", "name", "p"+n, "netns", fabric.Name)
		fabric.Exec(t, "ip", "link", "set", "p"+n, "master", "br0", "up")
		h.ns.Exec(t, "ip", "addr", "add", fmt.Sprintf("198.18.0.%d/24", i+1), "dev", "eth0")
		h.ns.Exec(t, "ip", "link", "set", "eth0", "up")
		h.ns.Exec(t, "ip", "-6", "addr", "add", fmt.Sprintf("fd5c:ffff::%d/64", i+1), "dev", "eth0", "nodad")
		h.ns.Exec(t, "ip", "route", "add", "default", "via", "198.18.0.254") // proxy ARP answers for 169.254.1.1 via a route
		h.wl = addWorkload(t, h.ns, "wg-w"+n, "cali"+n, fmt.Sprintf("10.65.%d.1", i))
		plumbWorkloadV6(t, h.ns, h.wl, "cali"+n, fmt.Sprintf("fd5c:%d::1", i))
		// The plaintext routes to the other host's blocks, as BIRD would program them.
		h.ns.Exec(t, "ip", "route", "add", fmt.Sprintf("10.65.%d.0/26", 1-i), "via", fmt.Sprintf("198.18.0.%d", 2-i), "proto", "bird")
		h.ns.Exec(t, "ip", "-6", "route", "add", fmt.Sprintf("fd5c:%d::/122", 1-i), "via", fmt.Sprintf("fd5c:ffff::%d", 2-i), "proto", "bird")
		h.cfg = dataplane.FelixDefaults(dataplane.Config{Hostname: h.name, NetNS: h.ns.Path(), InterfaceRefreshInterval: 10 * time.Second, IPv6Support: true,
			MTUFile: filepath.Join(t.TempDir(), "mtu"), Wireguard: dataplane.WireguardConfig{Enabled: true, EnabledV6: true,
				RoutingTable: 1000, RoutingTableV6: 1001, ThreadingEnabled: true, // from RouteTableRanges "1000-1100"
				InterfaceName: "wg" + n + "-" + suffix, InterfaceNameV6: "w6" + n + "-" + suffix,
				KeyFile: filepath.Join(t.TempDir(), "wireguard-private-key"), KeyFileV6: filepath.Join(t.TempDir(), "wireguard-private-key-v6")}})
		hosts = append(hosts, h)
	}
	return fabric, hosts
}

// plumbWorkloadV6 gives the workload an IPv6 address and a default route via the host side's
// link-local address, as the CNI plugin does.
func plumbWorkloadV6(t *testing.T, host, wl *netnstest.NS, iface, addr string) {
	wl.Exec(t, "ip", "-6", "addr", "add", addr+"/128", "dev", "eth0", "nodad")
	var ll string
	waitFor(t, "the host side's link-local address", func() bool {
		out := host.Exec(t, "ip", "-6", "-o", "addr", "show", "dev", iface, "scope", "link")
		f := strings.Fields(out)
		for i := range f {
			if f[i] == "inet6" && i+1 < len(f) && !strings.Contains(out, "tentative") {
				ll = strings.Split(f[i+1], "/")[0]
				return true
			}
		}
		return false
	})
	wl.Exec(t, "ip", "-6", "route", "add", "default", "via", ll, "dev", "eth0")
}

// startDevice provides the WireGuard device: the kernel's where it has the driver (the
// dataplane creates it), else a userspace one. It returns which.
func startDevice(t *testing.T, h *wgHost, kernel bool) string {
	if kernel {
		return "kernel"
	}
	wgtest.Start(t, h.ns.Name, h.cfg.Wireguard.InterfaceName)
	wgtest.Start(t, h.ns.Name, h.cfg.Wireguard.InterfaceNameV6)
	return "userspace (golang.zx2c4.com/wireguard over TUN)"
}

// run starts the host's dataplane with the given configuration.
func (h *wgHost) run(t *testing.T, cfg dataplane.Config) {
	h.logs = &logtest.Buffer{}
	log := zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), h.logs)).Level(zerolog.WarnLevel)
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
	hm := func(h *wgHost, j int, key, key6 string) calc.Update {
		return calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: h.name,
			IPv4Addr: p(fmt.Sprintf("198.18.0.%d/24", j+1)), IPv6Addr: p(fmt.Sprintf("fd5c:ffff::%d/64", j+1)),
			WireguardPublicKey: key, WireguardPublicKeyV6: key6}}
	}
	okey, okey6 := "", ""
	if withKey {
		okey, okey6 = other.pub, other.pub6
	}
	pol := calc.PolicyID{Tier: "default", Kind: "gnp", Name: "web"}
	allow := &calc.Profile{OutboundRules: []calc.Rule{{Action: calc.RuleAllow}}}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: p(fmt.Sprintf("198.18.0.%d/24", i+1)), HostIPv6: p(fmt.Sprintf("fd5c:ffff::%d/64", i+1))},
		hm(hosts[i], i, hosts[i].pub, hosts[i].pub6), hm(other, 1-i, okey, okey6),
		calc.RouteUpdate{Route: &calc.Route{Dst: p(fmt.Sprintf("fd5c:%d::/122", 1-i)), Type: calc.RouteRemoteWorkload, DstNode: other.name}},
		calc.RouteUpdate{Route: &calc.Route{Dst: p(fmt.Sprintf("10.65.%d.0/26", 1-i)), Type: calc.RouteRemoteWorkload, DstNode: other.name}},
		calc.RouteUpdate{Route: &calc.Route{Dst: p(fmt.Sprintf("10.65.%d.0/26", i)), Type: calc.RouteLocalWorkload, DstNode: hosts[i].name}},
		calc.ActivePolicyUpdate{ID: pol, Policy: &calc.Policy{InboundRules: []calc.Rule{
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: []calc.PortRange{{First: 8080, Last: 8080}}},
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: []calc.PortRange{{First: 5201, Last: 5202}}}, // throughput
			{Action: calc.RuleAllow, Protocol: 1}, {Action: calc.RuleAllow, Protocol: 58}}}},
		calc.ActiveProfileUpdate{Name: "egress", Profile: allow},
		calc.WorkloadEndpointUpdate{ID: wepID("w"), Endpoint: &calc.WorkloadEndpoint{Name: "cali" + string("ab"[i]),
			IPv4Nets: []netip.Prefix{p(fmt.Sprintf("10.65.%d.1/32", i))}, IPv6Nets: []netip.Prefix{p(fmt.Sprintf("fd5c:%d::1/128", i))}, ProfileIDs: []string{"egress"},
			Tiers: []calc.TierInfo{{Name: "default", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{pol}}}}},
		calc.InSync{},
	}
}

// capture records what crosses the fabric: an AF_PACKET socket on host A's bridge port in the
// fabric namespace.
type capture struct {
	mu        sync.Mutex
	wgUDP     [2]int    // per IP version: UDP packets to or from the WireGuard port (51820, 51821)
	plain     [2]int    // per IP version: packets with a workload address in the clear
	hostPlain [2]int    // per IP version: packets between the hosts' addresses in the clear (not WireGuard, ARP or ND)
	firstWG   time.Time // when the first WireGuard packet was seen
	fd        int
	closeOnce sync.Once
}

func startCapture(t *testing.T, fabric *netnstest.NS) *capture {
	c := &capture{fd: -1}
	fabric.Do(t, func() {
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

// Workload prefixes and WireGuard ports per IP version.
var (
	capWorkloads = [2]netip.Prefix{netip.MustParsePrefix("10.65.0.0/16"), netip.MustParsePrefix("fd5c::/31")}
	capPorts     = [2]uint16{51820, 51821}
	capHosts     = [2]netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("fd5c:ffff::/64")}
)

// record classifies an Ethernet frame (IPv6 without extension headers).
func (c *capture) record(f []byte) {
	if len(f) < 14+40 {
		return
	}
	ip := f[14:]
	var fam, hl int
	var src, dst netip.Addr
	var proto byte
	switch binary.BigEndian.Uint16(f[12:14]) {
	case unix.ETH_P_IP:
		fam, hl, proto = 0, int(ip[0]&0xf)*4, ip[9]
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	case unix.ETH_P_IPV6:
		fam, hl, proto = 1, 40, ip[6]
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if capWorkloads[fam].Contains(src) || capWorkloads[fam].Contains(dst) {
		c.plain[fam]++
	}
	if proto == unix.IPPROTO_UDP && len(ip) >= hl+4 {
		sp, dp := binary.BigEndian.Uint16(ip[hl:]), binary.BigEndian.Uint16(ip[hl+2:])
		if sp == capPorts[fam] || dp == capPorts[fam] {
			c.wgUDP[fam]++
			if c.firstWG.IsZero() {
				c.firstWG = time.Now()
			}
			return
		}
	}
	nd := proto == unix.IPPROTO_ICMPV6 && len(ip) > hl && ip[hl] >= 133 && ip[hl] <= 137
	if capHosts[fam].Contains(src) && capHosts[fam].Contains(dst) && !nd {
		c.hostPlain[fam]++
	}
}

// hostPlainReset returns the plaintext host-to-host packets per IP version since the last call.
func (c *capture) hostPlainReset() [2]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.hostPlain
	c.hostPlain = [2]int{}
	return n
}

// reset returns the counts per IP version since the last reset and clears them.
func (c *capture) reset() (wg, plain [2]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wg, plain = c.wgUDP, c.plain
	c.wgUDP, c.plain, c.firstWG = [2]int{}, [2]int{}, time.Time{}
	return wg, plain
}

func (c *capture) first() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstWG
}

// wgFam is what the test checks per IP version.
type wgFam struct {
	i     int    // 0: IPv4, 1: IPv6
	dst   string // B's workload address
	table string // felix's WireGuard routing table
	ip    string // the ip command's family flag
	port  string // WireGuard port
	mtu   string // device MTU: host MTU 1500 - 60 / - 80
	block string // B's block
	local string // A's throw route for its own workloads (block, or workload address outside one)
}

var wgFams = []wgFam{
	{0, "10.65.1.1", "1000", "-4", "51820", "1440", "10.65.1.0/26", "throw 10.65.0.0/26"},
	{1, "fd5c:1::1", "1001", "-6", "51821", "1420", "fd5c:1::/122", "throw fd5c::1"},
}

func (f wgFam) addr(port int) string { return net.JoinHostPort(f.dst, strconv.Itoa(port)) }

func (f wgFam) device(h *wgHost) string {
	if f.i == 1 {
		return h.cfg.Wireguard.InterfaceNameV6
	}
	return h.cfg.Wireguard.InterfaceName
}

// table lists felix's WireGuard routing table of the version ("" when empty or absent).
func (f wgFam) table1(h *wgHost) string {
	out, err := h.ns.Try("ip", f.ip, "route", "show", "table", f.table)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// TestWireGuardTwoHosts runs two hosts' dataplanes with WireGuard for IPv4 and IPv6: a host
// without a key on plaintext routes, then peers from the published keys with workload traffic
// encrypted on the fabric and policy still enforced, then cleanup when WireGuard is turned off.
func TestWireGuardTwoHosts(t *testing.T) {
	netnstest.Require(t)
	fabric, hosts := newWGHosts(t)
	kernel := wgtest.KernelDriver(t)
	for _, h := range hosts {
		t.Logf("%s: WireGuard devices: %s", h.name, startDevice(t, h, kernel))
		var err error
		if h.pub, h.pub6, err = dataplane.WireguardKeys(h.cfg); err != nil || h.pub == "" || h.pub6 == "" {
			t.Fatalf("keys: %q %q %v", h.pub, h.pub6, err)
		}
	}
	a, b := hosts[0], hosts[1]
	t.Cleanup(func() { dumpOnFailure(t, hosts) })
	for _, f := range wgFams {
		// Both ports listen: only policy (which allows 8080, not 8081) can refuse 8081.
		for _, port := range []int{8080, 8081} {
			ln := listen(t, b.wl, f.addr(port))
			defer ln.Close()
		}
	}
	capt := startCapture(t, fabric)

	// No keys known yet (the other host has not published one): plaintext routes.
	for i, h := range hosts {
		h.run(t, h.cfg)
		h.in <- wgState(hosts, i, false)
	}
	for _, f := range wgFams {
		waitFor(t, "a plaintext ping", func() bool { return canPingOnce(a.wl, f.dst) })
		if _, plain := capt.reset(); plain[f.i] == 0 {
			t.Errorf("%s: a host without a key: no plaintext packets on the fabric", f.ip)
		}
		// Project Calico's table: throw routes for the host without a key and for local workloads.
		if out := f.table1(a); strings.Contains(out, " dev "+f.device(a)) || !strings.Contains(out, "throw "+f.block) || !strings.Contains(out, f.local) {
			t.Errorf("%s: WireGuard table with a host without a key, want only throw routes for %s and %q:\n%s", f.ip, f.block, f.local, out)
		}
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
	for _, f := range wgFams {
		checkEncrypted(t, capt, a, f)
	}
	checkWGMetrics(t, a)
	if !kernel {
		if n := strings.Count(a.logs.String(), "does not apply to a userspace WireGuard device"); n != 2 {
			t.Errorf("WireguardThreadingEnabled with userspace devices: %d log lines, want one per device:\n%s", n, a.logs.String())
		}
	}
	wgRate := throughput(t, a.wl, b.wl, "10.65.1.1:5202")
	if wg, plain := capt.reset(); wg[0] == 0 || plain[0] != 0 {
		t.Errorf("during the TCP stream the fabric saw %d WireGuard packets and %d plaintext workload packets", wg[0], plain[0])
	}
	t.Logf("single TCP stream workload to workload (IPv4): plaintext %.0f Mbit/s, WireGuard (userspace=%v) %.0f Mbit/s", plainRate, !kernel, wgRate)
	checkSharedKey(t, capt, hosts)
	checkDisable(t, hosts, kernel)
}

// checkEncrypted: felix's rule, routes, device and nftables are in place for the version, and
// ping and the allowed TCP port work with only WireGuard on the fabric; policy still denies.
func checkEncrypted(t *testing.T, capt *capture, a *wgHost, f wgFam) {
	t.Helper()
	waitFor(t, "a ping over WireGuard", func() bool { return canPingOnce(a.wl, f.dst) })
	rule := a.ns.Exec(t, "ip", f.ip, "rule")
	if !strings.Contains(rule, "99:\tnot from all fwmark 0x200000/0x200000 lookup "+f.table) {
		t.Errorf("%s: WireGuard rule missing:\n%s", f.ip, rule)
	}
	if r := f.table1(a); !strings.Contains(r, f.block+" dev "+f.device(a)+" proto 80") || !strings.Contains(r, f.local) || strings.Contains(r, "throw "+f.block) {
		t.Errorf("%s: WireGuard table:\n%s", f.ip, r)
	}
	if link := a.ns.Exec(t, "ip", "link", "show", f.device(a)); !strings.Contains(link, "mtu "+f.mtu) {
		t.Errorf("%s: device MTU is not %s:\n%s", f.ip, f.mtu, link)
	}
	table := map[int]string{0: "ip", 1: "ip6"}[f.i]
	if nft := a.ns.Exec(t, "nft", "list", "chain", table, "calico", "filter-cali-INPUT"); !strings.Contains(nft, "udp dport "+f.port+" fib daddr type local accept") {
		t.Errorf("%s: nftables input lacks the WireGuard accept:\n%s", f.ip, nft)
	}
	capt.reset()
	if !canPingOnce(a.wl, f.dst) {
		t.Errorf("%s: ping failed over WireGuard", f.ip)
	}
	if !dial(t, a.wl, f.addr(8080)) {
		t.Errorf("%s: tcp 8080 (allowed) failed over WireGuard", f.ip)
	}
	if dial(t, a.wl, f.addr(8081)) {
		t.Errorf("%s: tcp 8081 (denied by policy) got through over WireGuard", f.ip)
	}
	if wg, plain := capt.reset(); wg[f.i] == 0 || plain[f.i] != 0 {
		t.Errorf("%s: fabric saw %d WireGuard packets and %d plaintext workload packets; want some and none", f.ip, wg[f.i], plain[f.i])
	}
}

// linkFlagUp matches the UP flag in `ip link show` output (<BROADCAST,UP,LOWER_UP>).
var linkFlagUp = regexp.MustCompile(`<[^>]*\bUP\b`)

// checkDisable turns WireGuard off at A (felix restarts with the new setting): keys, rules,
// routes and device configuration go.
func checkDisable(t *testing.T, hosts []*wgHost, kernel bool) {
	a := hosts[0]
	a.halt()
	off := a.cfg
	off.Wireguard.Enabled, off.Wireguard.EnabledV6 = false, false
	if pub, pub6, err := dataplane.WireguardKeys(off); err != nil || pub != "" || pub6 != "" {
		t.Fatalf("disabled keys: %q %q %v", pub, pub6, err)
	}
	for _, file := range []string{a.cfg.Wireguard.KeyFile, a.cfg.Wireguard.KeyFileV6} {
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("the private key file %s survived disabling: %v", file, err)
		}
	}
	a.run(t, off)
	a.in <- wgState(hosts, 0, true)
	hosts[1].in <- wgState(hosts, 1, false) // A's felix cleared its key in the Node status
	for _, f := range wgFams {
		waitFor(t, "the WireGuard rule to go", func() bool { return !strings.Contains(a.ns.Exec(t, "ip", f.ip, "rule"), "lookup "+f.table) })
		// The rule goes first; the table's routes go with the route reconciler's next pass.
		waitFor(t, f.ip+": the WireGuard table to empty", func() bool { return f.table1(a) == "" })
		out, _ := a.ns.Try("ip", "link", "show", f.device(a))
		// A TUN device shows "state UNKNOWN" even when up: look at its flags.
		if !kernel && linkFlagUp.MatchString(out) || kernel && out != "" {
			t.Errorf("%s: WireGuard device left configured: %s", f.ip, out)
		}
	}
	if !canPingOnce(a.wl, "10.65.1.1") || !canPingOnce(a.wl, "fd5c:1::1") {
		t.Error("no plaintext connectivity after WireGuard was turned off at one end")
	}
}

func dumpOnFailure(t *testing.T, hosts []*wgHost) {
	if !t.Failed() {
		return
	}
	for _, h := range hosts {
		for _, c := range [][]string{{"ip", "rule"}, {"ip", "-6", "rule"}, {"ip", "route", "show", "table", "all"}, {"ip", "-6", "route", "show", "table", "all"}, {"nft", "list", "ruleset"}} {
			out, _ := h.ns.Try(c...)
			t.Logf("%s: %s:\n%s", h.name, strings.Join(c, " "), out)
		}
	}
}

func canPingOnce(n *netnstest.NS, dst string) bool {
	out, err := n.Try("ping", "-c", "1", "-W", "1", dst)
	return err == nil && strings.Contains(out, "1 received")
}

// throughput sends a single TCP stream from one workload to a listener in the other for 2 s
// and returns the rate in Mbit/s.
func throughput(t *testing.T, from, to *netnstest.NS, addr string) float64 {
	var ln net.Listener
	to.Do(t, func() {
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
	from.Do(t, func() {
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

// checkWGMetrics: the peer is up and Calico's wireguard_* metrics describe it.
func checkWGMetrics(t *testing.T, h *wgHost) {
	t.Helper()
	if up, total, on := h.dp.WireguardPeers(); up != 2 || total != 2 || !on {
		t.Errorf("WireguardPeers = %d of %d (on %v), want 2 of 2 (one per IP version)", up, total, on)
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
		if mf == nil || len(mf.GetMetric()) != 2 {
			t.Errorf("metric %s: %v", name, mf)
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["hostname"] != h.name || labels["public_key"] != h.pub && labels["public_key"] != h.pub6 {
			t.Errorf("%s labels %v", name, labels)
		}
	}
	if mf := got["wireguard_bytes_sent"]; mf != nil && mf.GetMetric()[0].GetCounter().GetValue() == 0 {
		t.Error("wireguard_bytes_sent is 0 after traffic")
	}
}

// checkSharedKey: a third host publishing the other host's IPv4 key (as each host sees it) makes
// A and B stop treating each other as IPv4 peers (Project Calico skips every host claiming a
// shared key): the other's block is thrown to the plaintext route, the nodes are logged, IPv4
// workload traffic flows in the clear; when the third host goes, they are peers again.
func checkSharedKey(t *testing.T, capt *capture, hosts []*wgHost) {
	a, b := hosts[0], hosts[1]
	f := wgFams[0]
	for i, h := range hosts {
		h.in <- []calc.Update{calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: "host-c",
			IPv4Addr: netip.MustParsePrefix("198.18.0.3/24"), WireguardPublicKey: hosts[1-i].pub}}}
	}
	waitFor(t, "B's block thrown", func() bool { return strings.Contains(f.table1(a), "throw "+f.block) })
	waitFor(t, "A's block thrown", func() bool { return strings.Contains(f.table1(b), "throw 10.65.0.0/26") })
	if !strings.Contains(a.logs.String(), `"nodes":["host-b","host-c"]`) {
		t.Errorf("no log line naming host-b and host-c:\n%s", a.logs.String())
	}
	if _, total, _ := a.dp.WireguardPeers(); total != 1 {
		t.Errorf("%d WireGuard peers with B's IPv4 key shared, want 1 (B over IPv6 only)", total)
	}
	capt.reset()
	if !canPingOnce(a.wl, f.dst) {
		t.Error("no plaintext ping to a host whose key is shared")
	}
	if _, plain := capt.reset(); plain[0] == 0 {
		t.Error("a host whose key is shared: no plaintext packets on the fabric")
	}
	for _, h := range hosts {
		h.in <- []calc.Update{calc.HostMetadataRemove{Hostname: "host-c"}}
	}
	waitFor(t, "B a peer again", func() bool { return strings.Contains(f.table1(a), f.block+" dev "+f.device(a)) })
}

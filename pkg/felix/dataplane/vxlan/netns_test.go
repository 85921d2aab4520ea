package vxlan

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// The real test builds two "hosts", each a network namespace, joined by a veth (the fabric), with a
// "workload" namespace behind each, plumbed as the CNI plugin does. This package programs the
// VXLAN devices, package routes the routes and package ifaces the workload sysctls. Only
// namespaces the test creates are touched.

// host is one node: its namespace, its workload's namespace, and our dataplane pieces.
type host struct {
	name    string
	ns, wl  *netnstest.NS
	dev     string // the workload's host-side interface
	devices *Devices
	routes  *routes.Reconciler
	v4, v6  Device
}

// newHost numbers host i (1 or 2): underlay 198.18.0.i, block 10.65.i.0/26 and fd5c:i::/122.
func newHost(t *testing.T, i int, fabricNS *netnstest.NS) *host {
	t.Helper()
	n := string(rune('0' + i))
	h := &host{name: "host" + n, ns: fabricNS, wl: netnstest.New(t, "vxwl"+n), dev: "cali" + n}
	path := h.ns.Path()
	nl, err := OpenNetlink(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	ih, err := ifaces.OpenNetlink(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ih.Close)
	hostMTU := func(ctx context.Context) (int, error) { return ifaces.HostMTU(ctx, ih, regexp.MustCompile(`^eth`)) }
	h.devices = NewDevices(nl, logtest.Logger(t), hostMTU, time.Hour)
	rh, err := routes.OpenNetlink(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rh.Close)
	h.routes = routes.New(rh, routes.Ownership{}, logtest.Logger(t))

	h.v4 = Device{Name: DeviceV4, VNI: testVNI, Port: testPort, MAC: vtepmac.ForNode(h.name, false),
		LocalAddr: addr("198.18.0." + n), TunnelAddr: addr("10.65." + n + ".0")}
	h.v6 = Device{Name: DeviceV6, VNI: testVNI, Port: testPort, MAC: vtepmac.ForNode(h.name, true),
		LocalAddr: addr("fd5c:ffff::" + n), TunnelAddr: addr("fd5c:" + n + "::")}
	h.plumbWorkload(t, n)
	return h
}

// plumbWorkload connects the workload as the CNI plugin does: /32 and /128 addresses, a default
// route via 169.254.1.1 (answered by proxy ARP) and via the host side's link-local address.
func (h *host) plumbWorkload(t *testing.T, n string) {
	t.Helper()
	netnstest.Run(t, "ip", "link", "add", h.dev, "netns", h.ns.Name, "type", "veth", "peer", "name", "eth0", "netns", h.wl.Name)
	h.ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf."+h.dev+".accept_dad=0")
	h.wl.Exec(t, "sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=0")
	h.ns.IP(t, "link", "set", h.dev, "up")
	w := func(args ...string) { h.wl.IP(t, args...) }
	w("link", "set", "eth0", "up")
	w("addr", "add", "10.65."+n+".5/32", "dev", "eth0")
	w("-6", "addr", "add", "fd5c:"+n+"::5/128", "dev", "eth0", "nodad")
	w("route", "add", "169.254.1.1", "dev", "eth0", "scope", "link")
	w("route", "add", "default", "via", "169.254.1.1", "dev", "eth0")
	w("-6", "route", "add", "default", "via", h.linkLocal(t), "dev", "eth0")

	p, err := ifaces.NewProcSys(h.ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := ifaces.ConfigureWorkload(p, h.dev, true); err != nil {
		t.Fatal(err)
	}
}

func (h *host) linkLocal(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`inet6 (fe80::[0-9a-f:]+)/64`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(h.ns.IP(t, "-6", "addr", "show", "dev", h.dev)); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no link-local address on %s", h.dev)
	return ""
}

// apply programs the host: VXLAN devices with peer as the remote VTEP (or none), then routes.
func (h *host) apply(t *testing.T, peer *host) {
	t.Helper()
	v4, v6 := h.v4, h.v6
	v4.Peers, v6.Peers = nil, nil
	if peer != nil {
		v4.Peers = []Peer{{MAC: peer.v4.MAC, TunnelAddr: peer.v4.TunnelAddr, HostAddr: peer.v4.LocalAddr}}
		v6.Peers = []Peer{{MAC: peer.v6.MAC, TunnelAddr: peer.v6.TunnelAddr, HostAddr: peer.v6.LocalAddr}}
	}
	if err := h.devices.Apply(ctx, []Device{v4, v6}); err != nil {
		t.Fatalf("%s: VXLAN: %v", h.name, err)
	}
	n := h.name[len(h.name)-1:]
	desired := []routes.Route{
		{Dst: pfx("10.65." + n + ".5/32"), Dev: h.dev},
		{Dst: pfx("fd5c:" + n + "::5/128"), Dev: h.dev},
		{Dst: pfx("10.65." + n + ".0/26"), Blackhole: true},
	}
	if peer != nil {
		m := peer.name[len(peer.name)-1:]
		desired = append(desired,
			routes.Route{Dst: pfx("10.65." + m + ".0/26"), Dev: DeviceV4, Gateway: peer.v4.TunnelAddr, Onlink: true},
			routes.Route{Dst: pfx("fd5c:" + m + "::/122"), Dev: DeviceV6, Gateway: peer.v6.TunnelAddr, Onlink: true})
	}
	if st, err := h.routes.Apply(ctx, desired); err != nil || st.Pending != 0 {
		t.Fatalf("%s: routes: %+v %v", h.name, st, err)
	}
}

// counters returns a device's RX and TX packet counts.
func counters(t *testing.T, ns *netnstest.NS, dev string) (rx, tx uint64) {
	t.Helper()
	var links []struct {
		Stats64 struct {
			RX struct{ Packets uint64 } `json:"rx"`
			TX struct{ Packets uint64 } `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(ns.IP(t, "-s", "-j", "link", "show", "dev", dev)), &links); err != nil || len(links) != 1 {
		t.Fatalf("parsing ip -s link: %v", err)
	}
	return links[0].Stats64.RX.Packets, links[0].Stats64.TX.Packets
}

func waitOperUp(t *testing.T, ns *netnstest.NS, dev string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(ns.IP(t, "link", "show", "dev", dev), "state UP") {
			return
		}
	}
	t.Fatalf("%s is not up", dev)
}

// startCapture runs tcpdump on a namespace's eth0 until it has seen 3 packets matching filter; the
// returned func waits for it (10 s at most) and returns what it printed ("" without tcpdump).
func startCapture(t *testing.T, ns *netnstest.NS, filter string) func() string {
	t.Helper()
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Log("no tcpdump: not capturing")
		return func() string { return "" }
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cmd := exec.CommandContext(cctx, "ip", "netns", "exec", ns.Name, "tcpdump", "-l", "-n", "-i", "eth0", "-c", "3", filter)
	var out strings.Builder
	cmd.Stdout = &out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("tcpdump: %v", err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on") {
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return func() string {
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Errorf("tcpdump: %v (captured %q)", err, out.String())
		}
		return out.String()
	}
}

func ping(wl *netnstest.NS, dst string) error {
	_, err := wl.Try("ping", "-c", "3", "-i", "0.2", "-W", "2", dst)
	return err
}

func TestNetnsTwoHostsOverVXLAN(t *testing.T) {
	netnstest.Require(t, "ping")
	nsA, nsB := netnstest.New(t, "vxhostA"), netnstest.New(t, "vxhostB")
	netnstest.Link(t, nsA, nsB, "eth0", []string{"198.18.0.1/24", "fd5c:ffff::1/64"}, []string{"198.18.0.2/24", "fd5c:ffff::2/64"})
	for _, ns := range []*netnstest.NS{nsA, nsB} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
		// A host has a default route; proxy ARP answers for 169.254.1.1 only if it is routable.
		ns.IP(t, "route", "add", "default", "dev", "eth0")
	}
	for _, ns := range []*netnstest.NS{nsA, nsB} {
		waitOperUp(t, ns, "eth0") // so that the host MTU is found
	}
	a, b := newHost(t, 1, nsA), newHost(t, 2, nsB)
	a.apply(t, b)
	b.apply(t, a)

	// The devices are as Calico makes them.
	detail := nsA.IP(t, "-d", "link", "show", DeviceV4)
	for _, want := range []string{"mtu 1450", "vxlan id 4096", "dev eth0", "dstport 4789", "nolearning",
		"local 198.18.0.1", "link/ether " + vtepmac.ForNode("host1", false).String(), "UP"} {
		if !strings.Contains(detail, want) {
			t.Errorf("%s lacks %q:\n%s", DeviceV4, want, detail)
		}
	}
	if d := nsA.IP(t, "-d", "link", "show", DeviceV6); !strings.Contains(d, "mtu 1430") || !strings.Contains(d, "local fd5c:ffff::1") {
		t.Errorf("%s:\n%s", DeviceV6, d)
	}
	neigh := nsA.IP(t, "neigh", "show", "dev", DeviceV4)
	if !strings.Contains(neigh, "10.65.2.0 lladdr "+vtepmac.ForNode("host2", false).String()+" PERMANENT") {
		t.Errorf("ARP entries: %s", neigh)
	}
	fdb := netnstest.Run(t, "bridge", "-n", nsA.Name, "fdb", "show", "dev", DeviceV4)
	if !strings.Contains(fdb, vtepmac.ForNode("host2", false).String()+" dst 198.18.0.2 self permanent") {
		t.Errorf("FDB entries: %s", fdb)
	}

	rxA, txA := counters(t, nsA, DeviceV4)
	rxB, txB := counters(t, nsB, DeviceV4)
	capture := startCapture(t, nsB, "udp dst port 4789")
	if err := ping(a.wl, "10.65.2.5"); err != nil {
		dumpState(t, a, b)
		t.Fatalf("ping 10.65.1.5 -> 10.65.2.5 failed: %v", err)
	}
	if out := capture(); out != "" {
		t.Logf("on host B's eth0:\n%s", out)
		if !strings.Contains(out, "198.18.0.1.") || !strings.Contains(out, "> 198.18.0.2.4789: VXLAN") ||
			!strings.Contains(out, "vni 4096") || !strings.Contains(out, "10.65.1.5 > 10.65.2.5: ICMP echo request") {
			t.Errorf("the fabric did not carry the pings in VXLAN (VNI 4096, port 4789)")
		}
	}
	rxA2, txA2 := counters(t, nsA, DeviceV4)
	rxB2, txB2 := counters(t, nsB, DeviceV4)
	t.Logf("%s counters: host A tx +%d rx +%d, host B rx +%d tx +%d", DeviceV4, txA2-txA, rxA2-rxA, rxB2-rxB, txB2-txB)
	if txA2-txA < 3 || rxB2-rxB < 3 || txB2-txB < 3 || rxA2-rxA < 3 {
		t.Errorf("the pings did not all cross %s", DeviceV4)
	}
	rx6, tx6 := counters(t, nsA, DeviceV6)
	if err := ping(a.wl, "fd5c:2::5"); err != nil {
		t.Fatalf("ping fd5c:1::5 -> fd5c:2::5 failed: %v", err)
	}
	if rx62, tx62 := counters(t, nsA, DeviceV6); tx62-tx6 < 3 || rx62-rx6 < 3 {
		t.Errorf("the IPv6 pings did not all cross %s: tx +%d rx +%d", DeviceV6, tx62-tx6, rx62-rx6)
	}

	// Without B's VTEP (its ARP and FDB entries), A cannot reach B's workload; restored, it can.
	a.devices.Apply(ctx, []Device{a.v4, a.v6})
	if err := ping(a.wl, "10.65.2.5"); err == nil {
		t.Errorf("ping worked without the VTEP's neighbour entries")
	}
	a.apply(t, b)
	if err := ping(a.wl, "10.65.2.5"); err != nil {
		t.Errorf("ping after restoring the VTEP: %v", err)
	}

	// Removing VXLAN deletes both devices (and the kernel drops the routes through them).
	if err := a.devices.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if out := nsA.IP(t, "link", "show", "type", "vxlan"); strings.TrimSpace(out) != "" {
		t.Errorf("VXLAN devices left: %s", out)
	}
}

// dumpState logs the namespaces' state after a failure.
func dumpState(t *testing.T, hosts ...*host) {
	t.Helper()
	for _, h := range hosts {
		for _, cmd := range [][]string{
			{"ip", "-n", h.ns.Name, "-s", "link"}, {"ip", "-n", h.ns.Name, "addr"}, {"ip", "-n", h.ns.Name, "route", "show", "table", "all"},
			{"ip", "-n", h.ns.Name, "neigh"}, {"bridge", "-n", h.ns.Name, "fdb", "show", "dev", DeviceV4},
			{"ip", "-n", h.wl.Name, "addr"}, {"ip", "-n", h.wl.Name, "route"}, {"ip", "-n", h.wl.Name, "neigh"},
			{"ip", "netns", "exec", h.ns.Name, "sysctl", "net.ipv4.conf.all.rp_filter", "net.ipv4.conf." + h.dev + ".rp_filter",
				"net.ipv4.conf." + h.dev + ".proxy_arp", "net.ipv4.ip_forward"},
		} {
			out, _ := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
			t.Logf("%s: %s\n%s", h.name, strings.Join(cmd, " "), out)
		}
	}
}

// countingHandle counts the writes made through a Handle.
type countingHandle struct {
	Handle
	writes []string
}

func (c *countingHandle) note(op string, err error) error {
	c.writes = append(c.writes, op)
	return err
}
func (c *countingHandle) AddVXLAN(l Link) error  { return c.note("add", c.Handle.AddVXLAN(l)) }
func (c *countingHandle) DeleteLink(i int) error { return c.note("del", c.Handle.DeleteLink(i)) }
func (c *countingHandle) SetMTU(i, mtu int) error {
	return c.note("mtu", c.Handle.SetMTU(i, mtu))
}
func (c *countingHandle) SetMAC(i int, m net.HardwareAddr) error {
	return c.note("mac", c.Handle.SetMAC(i, m))
}
func (c *countingHandle) SetUp(i int) error { return c.note("up", c.Handle.SetUp(i)) }
func (c *countingHandle) AddAddr(i int, p netip.Prefix) error {
	return c.note("addr+ "+p.String(), c.Handle.AddAddr(i, p))
}
func (c *countingHandle) DelAddr(i int, p netip.Prefix) error {
	return c.note("addr- "+p.String(), c.Handle.DelAddr(i, p))
}
func (c *countingHandle) SetNeighbor(i int, n Neigh) error {
	return c.note("set "+n.String(), c.Handle.SetNeighbor(i, n))
}
func (c *countingHandle) DelNeighbor(i int, n Neigh) error {
	return c.note("del "+n.String(), c.Handle.DelNeighbor(i, n))
}

func TestNetnsManagerReadBackAndDrift(t *testing.T) {
	netnstest.Require(t, "ping")
	ns := netnstest.New(t, "vxdrift")
	ns.IP(t, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	ns.IP(t, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	ns.IP(t, "link", "set", "eth0", "up")
	nl, err := OpenNetlink(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	vteps := []VTEP{vtepB, vtepC}
	applyOK(t, NewManager(nl, logtest.Logger(t)), v4Config(), vteps...)
	// state is what `ip` and `bridge` show of the device, as sorted lines (listing order and the
	// IPv6 link-local address's DAD state are not ours).
	state := func() string {
		out := ns.IP(t, "-d", "link", "show", DeviceV4) + ns.IP(t, "addr", "show", "dev", DeviceV4) +
			ns.IP(t, "neigh", "show", "dev", DeviceV4) + netnstest.Run(t, "bridge", "-n", ns.Name, "fdb", "show", "dev", DeviceV4)
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "fe80::") && !strings.HasPrefix(l, "valid_lft") {
				lines = append(lines, l)
			}
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	want := state()

	// A restarted Manager reads everything back and writes nothing.
	c := &countingHandle{Handle: nl}
	m := NewManager(c, logtest.Logger(t))
	applyOK(t, m, v4Config(), vteps...)
	if len(c.writes) != 0 {
		t.Fatalf("restart wrote %v", c.writes)
	}

	ip := func(args ...string) { ns.IP(t, args...) }
	drifts := []struct {
		name string
		do   func()
	}{
		{"neighbours", func() {
			ip("neigh", "del", "10.65.2.0", "dev", DeviceV4)
			ip("neigh", "add", "10.65.9.0", "lladdr", "66:00:00:00:00:09", "dev", DeviceV4, "nud", "permanent")
			netnstest.Run(t, "bridge", "-n", ns.Name, "fdb", "del", "66:00:00:00:00:03", "dev", DeviceV4, "dst", "198.18.0.3", "self")
			netnstest.Run(t, "bridge", "-n", ns.Name, "fdb", "add", "66:00:00:00:00:09", "dev", DeviceV4, "dst", "198.18.0.9", "self", "permanent")
		}},
		{"device", func() {
			// Setting the device down also flushes its ARP entries, permanent ones included.
			ip("link", "set", DeviceV4, "down", "mtu", "1300", "address", "02:00:00:00:00:99")
			ip("addr", "add", "10.65.9.9/24", "dev", DeviceV4)
		}},
	}
	for _, d := range drifts {
		d.do()
		if got := state(); got == want {
			t.Fatalf("%s: no drift", d.name)
		}
		applyOK(t, m, v4Config(), vteps...) // trusts its mirror
		m.RequestResync()
		applyOK(t, m, v4Config(), vteps...)
		if got := state(); got != want {
			t.Errorf("%s: after repair:\n%s\nwant:\n%s\nwrites %v", d.name, got, want, c.writes)
		}
	}

	// Learning switched on cannot be fixed in place: the device is re-created, entries included.
	ip("link", "set", DeviceV4, "type", "vxlan", "learning")
	m.RequestResync()
	c.writes = nil
	applyOK(t, m, v4Config(), vteps...)
	if c.writes[0] != "del" || c.writes[1] != "add" {
		t.Errorf("not re-created: %v", c.writes)
	}
	if got := state(); strings.Contains(got, " learning") || !strings.Contains(got, "nolearning") ||
		strings.Count(got, "PERMANENT") != 2 || strings.Count(got, "self permanent") != 2 {
		t.Errorf("after re-creation:\n%s", got)
	}
}

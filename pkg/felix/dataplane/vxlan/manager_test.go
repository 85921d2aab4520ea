package vxlan

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

var ctx = context.Background()

// testVNI and testPort are felix's defaults, VXLANVNI and VXLANPort.
const testVNI, testPort = 4096, 4789

func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }
func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func v4Config() *Config {
	return &Config{Device: DeviceV4, VNI: testVNI, Port: testPort, MTU: 1450, MAC: mac("66:00:00:00:00:01"),
		TunnelAddr: addr("10.65.1.0"), ParentAddr: addr("198.18.0.1")}
}

var (
	vtepB  = VTEP{Node: "b", MAC: mac("66:00:00:00:00:02"), TunnelAddr: addr("10.65.2.0"), ParentAddr: addr("198.18.0.2")}
	vtepC  = VTEP{Node: "c", MAC: mac("66:00:00:00:00:03"), TunnelAddr: addr("10.65.3.0"), ParentAddr: addr("198.18.0.3")}
	vtepC2 = VTEP{Node: "c", MAC: mac("66:00:00:00:00:33"), TunnelAddr: addr("10.65.3.0"), ParentAddr: addr("198.18.0.3")}
	vtepD  = VTEP{Node: "d", MAC: mac("66:00:00:00:00:04"), TunnelAddr: addr("10.65.4.0"), ParentAddr: addr("198.18.0.4")}
	vtepV6 = VTEP{Node: "b", MAC: mac("66:00:00:00:00:62"), TunnelAddr: addr("fd5c::2"), ParentAddr: addr("fd5c:ffff::2")}
)

// newHost is a Fake with an eth0 (index 2) holding the parent address.
func newFakeHost() *Fake {
	f := NewFake()
	f.AddLink("eth0", "veth", pfx("198.18.0.1/24"), pfx("fd5c:ffff::1/64"))
	return f
}

func applyOK(t *testing.T, m *Manager, cfg *Config, vteps ...VTEP) {
	t.Helper()
	if err := m.Apply(ctx, cfg, vteps); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func checkDump(t *testing.T, f *Fake, want []string) {
	t.Helper()
	if d := cmp.Diff(want, f.Dump(DeviceV4)); d != "" {
		t.Errorf("device (-want +got):\n%s", d)
	}
}

const deviceLine = "vxlan.calico vxlan vni 4096 port 4789 learning false parent 2 src 198.18.0.1 mtu 1450 mac 66:00:00:00:00:01 up true"

func TestManagerCreatesAndConverges(t *testing.T) {
	f := newFakeHost()
	m := NewManager(f, logtest.Logger(t))
	applyOK(t, m, v4Config(), vtepB, vtepC, vtepV6)
	checkDump(t, f, []string{
		deviceLine,
		"addr 10.65.1.0/32",
		"fdb 66:00:00:00:00:02 dst 198.18.0.2",
		"fdb 66:00:00:00:00:03 dst 198.18.0.3",
		"neigh 10.65.2.0 lladdr 66:00:00:00:00:02",
		"neigh 10.65.3.0 lladdr 66:00:00:00:00:03",
	})

	// The same again: no kernel access at all.
	reads, writes := f.Reads, f.Writes
	applyOK(t, m, v4Config(), vtepB, vtepC, vtepV6)
	if f.Reads != reads || f.Writes != writes {
		t.Errorf("unchanged apply: %d reads, %d writes", f.Reads-reads, f.Writes-writes)
	}

	// c changes MAC, b goes, d comes: 2 FDB + 2 ARP sets, 2 FDB + 1 ARP deletions.
	applyOK(t, m, v4Config(), vtepC2, vtepD)
	if f.Writes-writes != 7 {
		t.Errorf("VTEP changes: %d writes, want 7", f.Writes-writes)
	}
	checkDump(t, f, []string{
		deviceLine,
		"addr 10.65.1.0/32",
		"fdb 66:00:00:00:00:04 dst 198.18.0.4",
		"fdb 66:00:00:00:00:33 dst 198.18.0.3",
		"neigh 10.65.3.0 lladdr 66:00:00:00:00:33",
		"neigh 10.65.4.0 lladdr 66:00:00:00:00:04",
	})
}

func TestManagerRepairsDriftAtResync(t *testing.T) {
	f := newFakeHost()
	m := NewManager(f, logtest.Logger(t))
	applyOK(t, m, v4Config(), vtepB)
	f.Mutate(DeviceV4, func(l *Link, addrs *[]netip.Prefix, ns *[]Neigh) {
		l.MTU, l.Up, l.MAC = 1400, false, mac("02:00:00:00:00:99")
		*addrs = append(*addrs, pfx("10.65.9.9/24"))
		*ns = append((*ns)[:1], Neigh{IP: addr("10.65.9.0"), MAC: mac("66:00:00:00:00:09")}) // keeps the FDB entry only
	})
	applyOK(t, m, v4Config(), vtepB) // trusts its mirror
	if f.Dump(DeviceV4)[0] == deviceLine {
		t.Fatalf("repaired without a resync")
	}
	m.RequestResync()
	applyOK(t, m, v4Config(), vtepB)
	checkDump(t, f, []string{
		deviceLine,
		"addr 10.65.1.0/32",
		"fdb 66:00:00:00:00:02 dst 198.18.0.2",
		"neigh 10.65.2.0 lladdr 66:00:00:00:00:02",
	})
}

func TestManagerRecreatesIncompatibleDevice(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(l *Link)
		cfg    func(c *Config)
	}{
		{"VNI changed", nil, func(c *Config) { c.VNI = 4097 }},
		{"port changed", nil, func(c *Config) { c.Port = 8472 }},
		{"learning turned on", func(l *Link) { l.Learning = true }, nil},
		{"not a VXLAN device", func(l *Link) { l.Kind = "veth" }, nil},
		{"other parent", func(l *Link) { l.ParentIndex = 1 }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHost()
			m := NewManager(f, logtest.Logger(t))
			applyOK(t, m, v4Config(), vtepB)
			before, _ := f.Link(DeviceV4)
			cfg := v4Config()
			if tc.mutate != nil {
				f.Mutate(DeviceV4, func(l *Link, _ *[]netip.Prefix, _ *[]Neigh) { tc.mutate(l) })
				m.RequestResync()
			}
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			applyOK(t, m, cfg, vtepB)
			after, _ := f.Link(DeviceV4)
			if after.Index == before.Index || after.Kind != "vxlan" || after.Learning || after.VNI != cfg.VNI ||
				after.Port != cfg.Port || after.ParentIndex != 2 || !after.Up {
				t.Fatalf("not re-created: before %+v after %+v", before, after)
			}
			if got := len(f.Dump(DeviceV4)); got != 4 { // device, address, fdb, neigh
				t.Errorf("dump after re-creation: %v", f.Dump(DeviceV4))
			}
		})
	}
}

func TestManagerErrors(t *testing.T) {
	f := NewFake() // no interface holds the parent address yet
	m := NewManager(f, logtest.Logger(t))
	if err := m.Apply(ctx, v4Config(), nil); err == nil {
		t.Fatalf("created without a parent")
	}
	f.AddLink("eth0", "veth", pfx("198.18.0.1/24"))
	// VTEPs that cannot have their entries are left out, alone: the apply succeeds.
	bad := []VTEP{
		{Node: "x", MAC: mac("66:00:00:00:00:02"), TunnelAddr: addr("10.65.8.0"), ParentAddr: addr("198.18.0.8")}, // b's MAC
		{Node: "y", MAC: mac("00:00:00:00:00:00"), TunnelAddr: addr("10.65.9.0"), ParentAddr: addr("198.18.0.9")},
		{Node: "z", MAC: mac("ff:ff:ff:ff:ff:ff"), TunnelAddr: addr("10.65.10.0"), ParentAddr: addr("198.18.0.10")},
		{Node: "w", MAC: mac("66:00:00:00:00:0b"), TunnelAddr: vtepB.TunnelAddr, ParentAddr: addr("198.18.0.11")}, // b's address
	}
	if err := m.Apply(ctx, v4Config(), append([]VTEP{vtepB}, bad...)); err != nil {
		t.Fatalf("VTEPs that cannot have entries failed the apply: %v", err)
	}
	if got := len(f.Dump(DeviceV4)); got != 4 {
		t.Errorf("want the device, its address and b's entries only: %v", f.Dump(DeviceV4))
	}
	if len(m.refused) != len(bad) {
		t.Errorf("refused %v, want x, y, z and w", m.refused)
	}
	for name, mut := range map[string]func(c *Config){
		"no MAC":        func(c *Config) { c.MAC = nil },
		"VNI too large": func(c *Config) { c.VNI = 1 << 24 },
		"family":        func(c *Config) { c.TunnelAddr = addr("fd5c::1") },
		"tiny MTU":      func(c *Config) { c.MTU = 10 },
	} {
		cfg := v4Config()
		mut(cfg)
		if err := m.Apply(ctx, cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestManagerRemoves(t *testing.T) {
	f := newFakeHost()
	m := NewManager(f, logtest.Logger(t))
	applyOK(t, m, v4Config(), vtepB)
	applyOK(t, m, nil)
	if f.Dump(DeviceV4) != nil {
		t.Fatalf("device not removed")
	}
	reads := f.Reads
	applyOK(t, m, nil)
	if f.Reads != reads {
		t.Errorf("removed device looked up again without a resync")
	}
	// A non-VXLAN interface with the name is not ours to delete.
	f.AddLink(DeviceV4, "veth")
	m.RequestResync()
	applyOK(t, m, nil)
	if f.Dump(DeviceV4) == nil {
		t.Errorf("deleted a non-VXLAN interface")
	}
}

func TestDevices(t *testing.T) {
	f := newFakeHost()
	f.AddVXLAN(Link{Name: DeviceV6, VNI: 4096, Port: 4789}) // left over from an earlier run
	mtuCalls := 0
	d := NewDevices(f, logtest.Logger(t), func(context.Context) (int, error) { mtuCalls++; return 1500, nil }, 0)
	v4 := Device{Name: DeviceV4, VNI: 4096, Port: 4789, MAC: mac("66:00:00:00:00:01"),
		LocalAddr: addr("198.18.0.1"), TunnelAddr: addr("10.65.1.0"),
		Peers: []Peer{{MAC: vtepB.MAC, TunnelAddr: vtepB.TunnelAddr, HostAddr: vtepB.ParentAddr}}}
	v6 := Device{Name: DeviceV6, VNI: 4096, Port: 4789, MAC: mac("66:00:00:00:00:61"),
		LocalAddr: addr("fd5c:ffff::1"), TunnelAddr: addr("fd5c::1"),
		Peers: []Peer{{MAC: vtepV6.MAC, TunnelAddr: vtepV6.TunnelAddr, HostAddr: vtepV6.ParentAddr}}}

	if err := d.Apply(ctx, []Device{v4}); err != nil {
		t.Fatal(err)
	}
	checkDump(t, f, []string{
		deviceLine, "addr 10.65.1.0/32",
		"fdb 66:00:00:00:00:02 dst 198.18.0.2", "neigh 10.65.2.0 lladdr 66:00:00:00:00:02",
	})
	if f.Dump(DeviceV6) != nil {
		t.Errorf("leftover %s not removed", DeviceV6)
	}
	if err := d.Apply(ctx, []Device{v4, v6}); err != nil {
		t.Fatal(err)
	}
	want6 := []string{
		"vxlan-v6.calico vxlan vni 4096 port 4789 learning false parent 2 src fd5c:ffff::1 mtu 1430 mac 66:00:00:00:00:61 up true",
		"addr fd5c::1/128", "fdb 66:00:00:00:00:62 dst fd5c:ffff::2", "neigh fd5c::2 lladdr 66:00:00:00:00:62",
	}
	if d := cmp.Diff(want6, f.Dump(DeviceV6)); d != "" {
		t.Errorf("IPv6 device (-want +got):\n%s", d)
	}
	if mtuCalls != 1 {
		t.Errorf("host MTU looked up %d times", mtuCalls)
	}
	// Drift is noticed after InterfaceChanged (or at the periodic resync), not before.
	f.Mutate(DeviceV4, func(l *Link, _ *[]netip.Prefix, _ *[]Neigh) { l.Up = false })
	both := []Device{v4, v6}
	if err := d.Apply(ctx, both); err != nil || f.Dump(DeviceV4)[0] == deviceLine {
		t.Fatalf("repaired without being told: %v", err)
	}
	d.InterfaceChanged("cali1") // not ours: nothing
	d.InterfaceChanged(DeviceV4)
	if err := d.Apply(ctx, both); err != nil || f.Dump(DeviceV4)[0] != deviceLine {
		t.Fatalf("not repaired: %v %v", err, f.Dump(DeviceV4))
	}
	if err := d.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if f.Dump(DeviceV4) != nil || f.Dump(DeviceV6) != nil {
		t.Errorf("devices not removed")
	}
}

func TestDeviceMTU(t *testing.T) {
	tests := []struct{ host, configured, want4, want6 int }{
		{1500, 0, 1450, 1430},
		{9001, 0, 8951, 8931},
		{1500, 1400, 1400, 1400},
	}
	for _, tc := range tests {
		if got := DeviceMTU(tc.host, tc.configured, false); got != tc.want4 {
			t.Errorf("DeviceMTU(%d, %d, v4) = %d", tc.host, tc.configured, got)
		}
		if got := DeviceMTU(tc.host, tc.configured, true); got != tc.want6 {
			t.Errorf("DeviceMTU(%d, %d, v6) = %d", tc.host, tc.configured, got)
		}
	}
}

func TestWriteMTUFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "var/lib/calico/mtu")
	for _, mtu := range []int{1450, 1450, 8951} {
		if err := WriteMTUFile(path, mtu); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != strconv.Itoa(mtu) {
			t.Fatalf("content %q, %v", b, err)
		}
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

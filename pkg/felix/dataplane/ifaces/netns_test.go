package ifaces

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// These tests program only network namespaces they create (never the host's), as root.

func openNetlink(t testing.TB, ns *netnstest.NS) *Netlink {
	t.Helper()
	h, err := OpenNetlink(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// waitFor reads updates until one satisfies ok.
func waitFor(t *testing.T, ch <-chan Update, what string, ok func(Update) bool) Update {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case u := <-ch:
			if ok(u) {
				return u
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestNetnsMonitor(t *testing.T) {
	ns := netnstest.New(t, "ifaces")
	ch := startMonitor(t, openNetlink(t, ns), time.Hour)
	initial := untilInSync(t, ch)
	if d := cmp.Diff([]string{"lo up 65536 127.0.0.1/8 ::1/128"}, initial); d != "" { // the kit sets lo up
		t.Fatalf("initial (-want +got):\n%s", d)
	}

	ns.IP(t, "link", "add", "cali1", "mtu", "1450", "type", "veth", "peer", "name", "cali1p")
	waitFor(t, ch, "cali1 down", func(u Update) bool { return brief(u) == "cali1 down 1450" })
	ns.IP(t, "link", "set", "cali1", "up")
	ns.IP(t, "link", "set", "cali1p", "up") // a veth is lower-up only when its peer is up
	waitFor(t, ch, "cali1 up", func(u Update) bool { return u.State != nil && u.Name == "cali1" && u.State.Up })
	ns.IP(t, "addr", "add", "10.65.0.1/32", "dev", "cali1")
	waitFor(t, ch, "cali1 address", func(u Update) bool {
		return u.State != nil && u.Name == "cali1" && len(u.State.Addrs) > 0 &&
			u.State.Addrs[0] == pfx("10.65.0.1/32")
	})
	ns.IP(t, "link", "set", "cali1p", "down")
	waitFor(t, ch, "cali1 lower down", func(u Update) bool { return u.State != nil && u.Name == "cali1" && !u.State.Up })
	ns.IP(t, "link", "set", "cali1p", "name", "tap9")
	waitFor(t, ch, "rename", func(u Update) bool { return u.Name == "cali1p" && u.State == nil })
	ns.IP(t, "link", "del", "cali1")
	waitFor(t, ch, "cali1 deleted", func(u Update) bool { return u.Name == "cali1" && u.State == nil })
	waitFor(t, ch, "peer deleted", func(u Update) bool { return u.Name == "tap9" && u.State == nil })
}

func TestNetnsWorkloadSysctls(t *testing.T) {
	ns := netnstest.New(t, "ifaces")
	ns.IP(t, "link", "add", "cali1", "type", "veth", "peer", "name", "vxlan.calico")
	p, err := NewProcSys(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	for _, name := range []string{"cali1", "vxlan.calico"} {
		must(t, ConfigureWorkload(p, name, true))
		for _, s := range workloadSysctls(name, WorkloadOptions{IPv6: true}) {
			// Read independently, from a process inside the namespace.
			got := strings.TrimSpace(ns.Exec(t, "cat", "/proc/sys/"+s[0]))
			if got != s[1] {
				t.Errorf("%s = %q, want %q", s[0], got, s[1])
			}
		}
		if v, err := p.ReadSysctl("net/ipv6/conf/" + name + "/accept_ra"); err != nil || v != "0" {
			t.Errorf("%s accept_ra = %q, %v", name, v, err)
		}
	}
	// The interface exists only in the namespace: the writes cannot have gone to the host.
	if _, err := os.Stat("/proc/sys/net/ipv4/conf/cali1"); err == nil {
		t.Skip("the host has a cali1 interface; cannot tell namespaces apart")
	}
	if err := ConfigureWorkload(p, "nosuch0", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing interface: %v", err)
	}
	p.Close()
	if err := p.WriteSysctl("net/ipv4/conf/cali1/forwarding", "1"); err == nil {
		t.Errorf("write after Close succeeded")
	}
}

func TestNetnsNeighborAndMTU(t *testing.T) {
	ns := netnstest.New(t, "ifaces")
	ns.IP(t, "link", "add", "eth0", "mtu", "1400", "type", "veth", "peer", "name", "p0")
	ns.IP(t, "link", "add", "eth1", "mtu", "9000", "type", "veth", "peer", "name", "p1")
	ns.IP(t, "link", "add", "tap1", "type", "veth", "peer", "name", "tap1p")
	for _, l := range []string{"eth0", "p0", "eth1", "p1", "tap1", "tap1p"} {
		ns.IP(t, "link", "set", l, "up")
	}
	h := openNetlink(t, ns)
	mac, _ := net.ParseMAC("fa:16:3e:00:00:01")
	must(t, SetPermanentNeighbor(h, "tap1", netip.MustParseAddr("10.65.0.5"), mac))
	must(t, SetPermanentNeighbor(h, "tap1", netip.MustParseAddr("fd5c::5"), mac))
	for _, fam := range []string{"-4", "-6"} {
		out := ns.IP(t, fam, "neigh", "show", "dev", "tap1")
		if !strings.Contains(out, "lladdr fa:16:3e:00:00:01 PERMANENT") {
			t.Errorf("%s neighbours: %q", fam, out)
		}
	}
	if err := SetPermanentNeighbor(h, "tap2", netip.MustParseAddr("10.65.0.6"), mac); err == nil {
		t.Errorf("missing interface accepted")
	}
	for _, l := range []string{"eth0", "eth1"} { // the host MTU counts running interfaces only: a veth's carrier comes up shortly after
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(ns.IP(t, "link", "show", l), "LOWER_UP"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never got its carrier", l)
			}
		}
	}
	if got, err := HostMTU(context.Background(), h, physical); err != nil || got != 1400 {
		t.Errorf("HostMTU = %d, %v", got, err)
	}
	ns.IP(t, "link", "set", "eth0", "down")
	if got, err := HostMTU(context.Background(), h, physical); err != nil || got != 9000 {
		t.Errorf("HostMTU with eth0 down = %d, %v", got, err)
	}
}

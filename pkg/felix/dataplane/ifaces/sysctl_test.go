package ifaces

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

func TestConfigureWorkload(t *testing.T) {
	tests := []struct {
		name    string
		opts    WorkloadOptions
		missing []string
		want    []string
		wantErr bool
	}{
		{"ipv4", WorkloadOptions{}, nil, []string{
			"net/ipv6/conf/cali1/accept_ra=0",
			"net/ipv4/conf/cali1/route_localnet=1",
			"net/ipv4/neigh/cali1/proxy_delay=0",
			"net/ipv4/conf/cali1/proxy_arp=1",
			"net/ipv4/conf/cali1/forwarding=1",
			"net/ipv4/conf/cali1/rp_filter=1",
		}, false},
		{"dual stack", WorkloadOptions{IPv6: true}, nil, []string{
			"net/ipv6/conf/cali1/accept_ra=0",
			"net/ipv4/conf/cali1/route_localnet=1",
			"net/ipv4/neigh/cali1/proxy_delay=0",
			"net/ipv4/conf/cali1/proxy_arp=1",
			"net/ipv4/conf/cali1/forwarding=1",
			"net/ipv4/conf/cali1/rp_filter=1",
			"net/ipv6/conf/cali1/disable_ipv6=0",
			"net/ipv6/conf/cali1/proxy_ndp=1",
			"net/ipv6/conf/cali1/forwarding=1",
		}, false},
		{"spoofing allowed", WorkloadOptions{AllowSpoofedSources: true}, nil, []string{
			"net/ipv6/conf/cali1/accept_ra=0",
			"net/ipv4/conf/cali1/route_localnet=1",
			"net/ipv4/neigh/cali1/proxy_delay=0",
			"net/ipv4/conf/cali1/proxy_arp=1",
			"net/ipv4/conf/cali1/forwarding=1",
			"net/ipv4/conf/cali1/rp_filter=0",
		}, false},
		{"kernel without IPv6", WorkloadOptions{}, []string{"net/ipv6"}, []string{
			"net/ipv4/conf/cali1/route_localnet=1",
			"net/ipv4/neigh/cali1/proxy_delay=0",
			"net/ipv4/conf/cali1/proxy_arp=1",
			"net/ipv4/conf/cali1/forwarding=1",
			"net/ipv4/conf/cali1/rp_filter=1",
		}, false},
		{"interface gone", WorkloadOptions{}, []string{"cali1"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFakeSysctl()
			for _, m := range tc.missing {
				fs.Missing[m] = true
			}
			err := ConfigureWorkloadWith(fs, "cali1", tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if d := cmp.Diff(tc.want, fs.Writes); d != "" {
				t.Errorf("writes (-want +got):\n%s", d)
			}
		})
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if err := ConfigureWorkload(NewFakeSysctl(), bad, false); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

func TestProcSysPaths(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "net/ipv4/conf/vxlan.calico"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "net/ipv4/conf/vxlan.calico/forwarding"), []byte("0\n"), 0o644))
	p := &ProcSys{root: dir}
	must(t, p.WriteSysctl("net/ipv4/conf/vxlan.calico/forwarding", "1"))
	if v, err := p.ReadSysctl("net/ipv4/conf/vxlan.calico/forwarding"); err != nil || v != "1" {
		t.Fatalf("read back %q, %v", v, err)
	}
	if err := p.WriteSysctl("net/ipv4/conf/nope/forwarding", "1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := p.WriteSysctl("net/../../etc/passwd", "1"); err == nil {
		t.Errorf("path escaping /proc/sys accepted")
	}
}

// physical is felix's default MTUIfacePattern: the host's physical interfaces.
var physical = regexp.MustCompile(`^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)`)

func TestHostMTU(t *testing.T) {
	tests := []struct {
		name    string
		links   []State
		pattern *regexp.Regexp
		want    int
	}{
		{"smallest up match", []State{
			{Name: "eth0", Up: true, MTU: 1500}, {Name: "ens3", Up: true, MTU: 9000},
			{Name: "eth1", Up: false, MTU: 1400}, {Name: "cali1", Up: true, MTU: 1300},
			{Name: "enp0s3", Up: true, MTU: 1450},
		}, physical, 1450},
		{"nothing matches", []State{{Name: "cali1", Up: true, MTU: 1300}, {Name: "lo", Up: true, MTU: 65536}}, physical, FallbackMTU},
		{"custom pattern", []State{{Name: "bond0", Up: true, MTU: 8900}, {Name: "eth0", Up: true, MTU: 1500}},
			regexp.MustCompile(`^bond`), 8900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake()
			for _, l := range tc.links {
				f.AddLink(l.Name, l.Up, l.MTU)
			}
			got, err := HostMTU(context.Background(), f, tc.pattern)
			if err != nil || got != tc.want {
				t.Fatalf("HostMTU = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	f := NewFake()
	f.ListErr = errors.New("boom")
	if got, err := HostMTU(context.Background(), f, physical); err == nil || got != FallbackMTU {
		t.Errorf("on error: %d, %v", got, err)
	}
}

func TestSetStaticNeighbors(t *testing.T) {
	f := NewFake()
	f.AddLink("tap1", true, 1500)
	i := NewInterfaces(f, NewFakeSysctl(), logtest.Logger(t), 0)
	mac, _ := net.ParseMAC("fa:16:3e:00:00:01")
	must(t, i.SetStaticNeighbors("tap1", mac, []netip.Addr{netip.MustParseAddr("10.65.0.5"), netip.MustParseAddr("fd5c::5")}))
	want := []string{"tap1 10.65.0.5 fa:16:3e:00:00:01", "tap1 fd5c::5 fa:16:3e:00:00:01"}
	if d := cmp.Diff(want, f.Neighbors); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if err := i.SetStaticNeighbors("tap2", mac, []netip.Addr{netip.MustParseAddr("10.65.0.6")}); err == nil {
		t.Errorf("missing interface accepted")
	}
	if err := SetPermanentNeighbor(f, "tap1", netip.Addr{}, mac); err == nil {
		t.Errorf("invalid address accepted")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

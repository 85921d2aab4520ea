package startup

import (
	"context"
	"net/netip"
	"testing"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func iface(index int, name string, addrs ...string) Interface {
	i := Interface{Index: index, Name: name}
	for _, a := range addrs {
		i.Addrs = append(i.Addrs, pfx(a))
	}
	return i
}

// hostInterfaces is a host with excluded interfaces at high indexes, so that a method that
// ignores the exclusions would pick them first.
func hostInterfaces() []Interface {
	return []Interface{
		iface(1, "lo", "127.0.0.1/8", "::1/128"),
		iface(2, "eth0", "198.18.1.2/24", "169.254.3.3/16", "fd5c:ff:1::2/64", "fe80::1/64"),
		iface(3, "eth1", "198.18.2.2/24", "198.18.20.2/24"),
		iface(4, "ens5"),
		iface(5, "docker0", "198.18.8.1/24"),
		iface(6, "veth1234", "198.18.9.1/24"),
		iface(7, "cali0123", "198.18.10.1/32"),
		iface(8, "vxlan.calico", "198.18.11.1/32"),
		iface(9, "lonely", "198.18.12.1/24"),
		iface(10, "wlan0", "169.254.7.7/16", "fe80::2/64"),
	}
}

func TestDetect(t *testing.T) {
	k := NewFakeKernel(hostInterfaces()...)
	k.SetRoute(pfx("198.18.1.0/24"), netip.MustParseAddr("198.18.1.2"))
	k.SetRoute(pfx("0.0.0.0/0"), netip.MustParseAddr("198.18.2.2"))
	k.SetRoute(pfx("198.18.99.0/24"), netip.MustParseAddr("198.18.99.99")) // a source on no interface
	cases := []struct {
		method     string
		fam        Family
		wantIface  string
		wantAddr   string
		wantFailed bool
	}{
		// eth1 is the highest-index interface that is not excluded ("lonely" matches ^lo, wlan0 has only link-local).
		{"first-found", V4, "eth1", "198.18.2.2/24", false},
		{"", V4, "eth1", "198.18.2.2/24", false},
		{"skip-interface=eth1", V4, "eth0", "198.18.1.2/24", false},
		{"skip-interface=eth1, eth0", V4, "", "", true},
		{"interface=eth0", V4, "eth0", "198.18.1.2/24", false},
		{"interface=^eth0$,^eth1$", V4, "eth1", "198.18.2.2/24", false},
		// Regexes are unanchored, as in Calico: "eth1" also matches veth1234.
		{"interface=eth0,eth1", V4, "veth1234", "198.18.9.1/24", false},
		// interface= and cidr= apply no default exclusions.
		{"interface=veth.*", V4, "veth1234", "198.18.9.1/24", false},
		{"cidr=198.18.8.0/24", V4, "docker0", "198.18.8.1/24", false},
		{"cidr=198.18.20.0/24,10.65.0.0/16", V4, "eth1", "198.18.20.2/24", false},
		{"cidr=10.65.0.0/16", V4, "", "", true},
		{"can-reach=198.18.1.77", V4, "eth0", "198.18.1.2/24", false},
		{"can-reach=203.0.113.5", V4, "eth1", "198.18.2.2/24", false},
		{"can-reach=198.18.99.1", V4, "", "", true},
		{"can-reach=fd5c::1", V4, "", "", true},
		{"first-found", V6, "eth0", "fd5c:ff:1::2/64", false},
		{"interface=wlan0", V6, "", "", true}, // link-local only
	}
	for _, tc := range cases {
		t.Run(tc.method+"/"+tc.fam.String(), func(t *testing.T) {
			m, err := ParseMethod(tc.method)
			if err != nil {
				t.Fatal(err)
			}
			ifaces, _ := k.Interfaces()
			d, err := m.Detect(context.Background(), k, ifaces, tc.fam)
			if tc.wantFailed {
				if err == nil {
					t.Fatalf("want an error, got %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Interface != tc.wantIface || d.Addr != pfx(tc.wantAddr) {
				t.Errorf("got %s on %s, want %s on %s", d.Addr, d.Interface, tc.wantAddr, tc.wantIface)
			}
		})
	}
}

// TestFirstFoundNeverPicksExcluded gives first-found interfaces whose names match each default
// exclusion (in every position) and checks it never picks one.
func TestFirstFoundNeverPicksExcluded(t *testing.T) {
	excluded := []string{"docker0", "cbr0", "dummy0", "podman1", "virbr0", "lxcbr0", "veth0", "lo", "br-1a2b",
		"cali12345", "tunl0", "flannel.1", "kube-ipvs0", "cni0", "vxlan.calico", "vxlan-v6.calico",
		"wireguard.cali", "wg-v6.cali", "nodelocaldns"}
	m, _ := ParseMethod("first-found")
	for pos := 0; pos <= len(excluded); pos++ {
		var ifaces []Interface
		for i, name := range excluded {
			if i == pos {
				ifaces = append(ifaces, iface(len(ifaces)+1, "eth0", "198.18.1.2/24"))
			}
			ifaces = append(ifaces, iface(len(ifaces)+1, name, "198.18.200."+itoa(i+1)+"/24"))
		}
		if pos == len(excluded) {
			ifaces = append(ifaces, iface(len(ifaces)+1, "eth0", "198.18.1.2/24"))
		}
		d, err := m.Detect(context.Background(), NewFakeKernel(), ifaces, V4)
		if err != nil || d.Interface != "eth0" {
			t.Fatalf("eth0 at position %d: got %+v, %v", pos, d, err)
		}
	}
}

func itoa(i int) string { return netip.AddrFrom4([4]byte{0, 0, 0, byte(i)}).String()[6:] }

func TestNodeInterfaces(t *testing.T) {
	got := nodeInterfaces(hostInterfaces(), map[Family]bool{V4: true})
	names := []string{}
	for _, n := range got {
		names = append(names, n.Name)
	}
	want := []string{"ens5", "eth0", "eth1", "wlan0"}
	if len(names) != len(want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got %v, want %v (sorted by name, exclusions dropped)", names, want)
		}
	}
	if a := got[1].Addresses; len(a) != 2 || a[0] != "198.18.1.2" || a[1] != "169.254.3.3" {
		t.Errorf("eth0 IPv4 addresses: got %v", a)
	}
	both := nodeInterfaces(hostInterfaces(), map[Family]bool{V4: true, V6: true})
	if a := both[1].Addresses; len(a) != 4 {
		t.Errorf("eth0 with both families: got %v", a)
	}
}

package startup

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testNS is a fresh network namespace for one test; it never touches the host's interfaces.
type testNS struct {
	t  *testing.T
	ns netns.NsHandle
	h  *netlink.Handle
}

func newTestNS(t *testing.T) *testNS {
	t.Helper()
	ns := netnstest.New(t, "startup")
	return &testNS{t: t, ns: netns.NsHandle(ns.FD), h: ns.Handle(t)}
}

// veth creates a veth pair inside the namespace, both ends up, with addrs on the first end.
func (n *testNS) veth(name, peer string, addrs ...string) {
	n.t.Helper()
	if err := n.h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		n.t.Fatalf("adding veth %s: %v", name, err)
	}
	for _, l := range []string{name, peer} {
		link, err := n.h.LinkByName(l)
		if err != nil {
			n.t.Fatal(err)
		}
		if err := n.h.LinkSetUp(link); err != nil {
			n.t.Fatal(err)
		}
	}
	for _, a := range addrs {
		n.addr(name, a, true)
	}
}

func (n *testNS) addr(link, cidr string, add bool) {
	n.t.Helper()
	l, err := n.h.LinkByName(link)
	if err != nil {
		n.t.Fatal(err)
	}
	ip, ipn, err := net.ParseCIDR(cidr)
	if err != nil {
		n.t.Fatal(err)
	}
	ipn.IP = ip
	a := &netlink.Addr{IPNet: ipn}
	if ip.To4() == nil {
		a.Flags = unix.IFA_F_NODAD
	}
	if add {
		err = n.h.AddrAdd(l, a)
	} else {
		err = n.h.AddrDel(l, a)
	}
	if err != nil {
		n.t.Fatalf("address %s on %s (add=%v): %v", cidr, link, add, err)
	}
}

func (n *testNS) kernel() Kernel {
	n.t.Helper()
	k, err := NewNetlinkKernelAt(n.ns, testLogger(n.t))
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { k.Close() })
	return k
}

// standardHost builds: ens1 198.18.1.2/24; ens2 198.18.2.2/24 + fd5c:ff:2::2/64; then excluded
// docker1 198.18.8.2/24 and veth9 198.18.9.2/24 at higher indexes.
func standardHost(t *testing.T) *testNS {
	n := newTestNS(t)
	n.veth("ens1", "ens1p", "198.18.1.2/24")
	n.veth("ens2", "ens2p", "198.18.2.2/24", "fd5c:ff:2::2/64")
	n.veth("docker1", "docker1p", "198.18.8.2/24")
	n.veth("veth9", "veth9p", "198.18.9.2/24")
	return n
}

func TestNetlinkAutodetection(t *testing.T) {
	n := standardHost(t)
	k := n.kernel()
	ifaces, err := k.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ifaces); i++ {
		if ifaces[i].Index <= ifaces[i-1].Index {
			t.Fatalf("interfaces not in index order: %+v", ifaces)
		}
	}
	cases := []struct {
		method, iface, addr string
		fam                 Family
	}{
		{"first-found", "ens2", "198.18.2.2/24", V4},
		{"skip-interface=ens2", "ens1", "198.18.1.2/24", V4},
		{"interface=ens1", "ens1", "198.18.1.2/24", V4},
		{"interface=^veth", "veth9", "198.18.9.2/24", V4},
		{"cidr=198.18.8.0/24", "docker1", "198.18.8.2/24", V4},
		{"can-reach=198.18.1.77", "ens1", "198.18.1.2/24", V4},
		{"can-reach=198.18.2.9", "ens2", "198.18.2.2/24", V4},
		{"can-reach=198.18.9.200", "veth9", "198.18.9.2/24", V4},
		{"first-found", "ens2", "fd5c:ff:2::2/64", V6},
		{"can-reach=fd5c:ff:2::99", "ens2", "fd5c:ff:2::2/64", V6},
	}
	for _, tc := range cases {
		t.Run(tc.method+"/"+tc.fam.String(), func(t *testing.T) {
			m, err := ParseMethod(tc.method)
			if err != nil {
				t.Fatal(err)
			}
			d, err := m.Detect(context.Background(), k, ifaces, tc.fam)
			if err != nil {
				t.Fatal(err)
			}
			if d.Interface != tc.iface || d.Addr != netip.MustParsePrefix(tc.addr) {
				t.Errorf("got %s on %s, want %s on %s", d.Addr, d.Interface, tc.addr, tc.iface)
			}
		})
	}
	m, _ := ParseMethod("can-reach=198.19.77.1") // no route in the namespace
	if d, err := m.Detect(context.Background(), k, ifaces, V4); err == nil {
		t.Errorf("can-reach without a route: got %+v", d)
	}
}

func TestNetlinkAddressEvents(t *testing.T) {
	n := newTestNS(t)
	n.veth("ens1", "ens1p")
	k := n.kernel()
	drain(k.AddressEvents())
	n.addr("ens1", "198.18.4.2/24", true)
	select {
	case <-k.AddressEvents():
	case <-time.After(5 * time.Second):
		t.Fatal("no event after adding an address")
	}
	ifaces, _ := k.Interfaces()
	if d, ok := findAddr(ifaces, netip.MustParseAddr("198.18.4.2")); !ok || d.Interface != "ens1" {
		t.Fatalf("new address not listed: %+v", ifaces)
	}
	drain(k.AddressEvents())
	n.addr("ens1", "198.18.4.2/24", false)
	select {
	case <-k.AddressEvents():
	case <-time.After(5 * time.Second):
		t.Fatal("no event after deleting an address")
	}
}

// drain empties an event channel after letting pending notifications arrive.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// TestMonitorInNetns runs the daemon on a real namespace: the Node follows address changes.
func TestMonitorInNetns(t *testing.T) {
	n := standardHost(t)
	env := fixtureEnv(t)
	env["IP6"] = "autodetect"
	h := newHarness(t, env, n.kernel())
	s := h.startup()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 20*time.Second, "registration", func() bool {
		nd, err := getNode(h)
		return err == nil && nd.Spec.BGP != nil && nd.Spec.BGP.IPv4Address == "198.18.2.2/24" &&
			nd.Spec.BGP.IPv6Address == "fd5c:ff:2::2/64"
	})
	steps := []struct {
		what     string
		change   func()
		want4    string
		excluded bool
	}{
		{"ens2 loses its IPv4 address", func() { n.addr("ens2", "198.18.2.2/24", false) }, "198.18.1.2/24", false},
		{"a new interface appears", func() { n.veth("ens3", "ens3p", "198.18.3.2/25") }, "198.18.3.2/25", false},
		{"an excluded interface gets an address", func() { n.veth("cali1", "cali1p", "198.18.10.2/24") }, "198.18.3.2/25", true},
	}
	for _, st := range steps {
		st.change()
		took := eventually(t, 10*time.Second, st.what, func() bool {
			nd, err := getNode(h)
			return err == nil && nd.Spec.BGP.IPv4Address == st.want4
		})
		if st.excluded {
			time.Sleep(time.Second) // give a wrong update the chance to happen
			if nd, _ := getNode(h); nd.Spec.BGP.IPv4Address != st.want4 {
				t.Fatalf("%s: node moved to %s", st.what, nd.Spec.BGP.IPv4Address)
			}
			continue
		}
		t.Logf("%s: node updated within %s", st.what, took.Round(time.Millisecond))
	}
}

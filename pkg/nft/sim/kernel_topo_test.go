package sim_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// Nothing these tests run may program the test process's own namespace.
func init() { kernel.RefuseOwnNamespace() }

// The differential tests' network: a host under test (dut) joined to two
// peers by veth pairs, a0-a1 (198.18.1.0/24, fd5c:1::/64; 10.65.1.0/24 and
// fd5c:a::/64 routed behind peer A) and b0-b1 (198.18.2.0/24, fd5c:2::/64;
// 10.65.2.0/24 and fd5c:b::/64 behind peer B). The host forwards, has no
// reverse path filter, permanent neighbours, and no automatic IPv6 flow
// labels (so that the packets it makes itself have label 0).
type topo struct {
	dut, peerA, peerB *nstest.NS
	macs              map[string]net.HardwareAddr // by interface name (a0, a1, b0, b1)
}

func newTopo(t *testing.T) *topo {
	tp := &topo{dut: nstest.New(t), peerA: nstest.New(t), peerB: nstest.New(t), macs: map[string]net.HardwareAddr{}}
	for _, s := range []struct {
		peer                *nstest.NS
		side, far           string
		behind4, behind6    string
		nearAddrs, farAddrs []string
		gateway4, gateway6  string
	}{
		{tp.peerA, "a0", "a1", "10.65.1.0/24", "fd5c:a::/64", []string{"198.18.1.1/24", "fd5c:1::1/64"}, []string{"198.18.1.2/24", "fd5c:1::2/64"}, "198.18.1.2", "fd5c:1::2"},
		{tp.peerB, "b0", "b1", "10.65.2.0/24", "fd5c:b::/64", []string{"198.18.2.1/24", "fd5c:2::1/64"}, []string{"198.18.2.2/24", "fd5c:2::2/64"}, "198.18.2.2", "fd5c:2::2"},
	} {
		netnstest.Run(t, "ip", "link", "add", s.side, "netns", tp.dut.Name, "type", "veth", "peer", "name", s.far, "netns", s.peer.Name)
		link(t, tp.dut, s.side, s.nearAddrs)
		link(t, s.peer, s.far, s.farAddrs)
		tp.dut.Exec(t, "ip", "route", "add", s.behind4, "via", s.gateway4)
		tp.dut.Exec(t, "ip", "-6", "route", "add", s.behind6, "via", s.gateway6)
		tp.macs[s.side], tp.macs[s.far] = mac(t, tp.dut, s.side), mac(t, s.peer, s.far)
		for _, g := range []string{s.gateway4, s.gateway6} {
			tp.dut.Exec(t, "ip", "neigh", "replace", g, "lladdr", tp.macs[s.far].String(), "dev", s.side, "nud", "permanent")
		}
	}
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1", "net.ipv4.conf.all.rp_filter=0",
		"net.ipv4.conf.default.rp_filter=0", "net.ipv4.conf.a0.rp_filter=0", "net.ipv4.conf.b0.rp_filter=0", "net.ipv6.auto_flowlabels=0"} {
		tp.dut.Exec(t, "sysctl", "-qw", kv)
	}
	return tp
}

func link(t *testing.T, ns *nstest.NS, name string, addrs []string) {
	for _, a := range addrs {
		args := []string{"ip", "addr", "add", a, "dev", name}
		if strings.Contains(a, ":") {
			args = append(args, "nodad")
		}
		ns.Exec(t, args...)
	}
	ns.Exec(t, "ip", "link", "set", name, "up")
}

func mac(t *testing.T, ns *nstest.NS, name string) net.HardwareAddr {
	var hw net.HardwareAddr
	ns.Do(t, func() {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			t.Fatal(err)
		}
		hw = ifc.HardwareAddr
	})
	return hw
}

// inject sends pk from the peer behind the dut's interface side (a0 or
// b0), as a frame to the dut's MAC address.
func (tp *topo) inject(t *testing.T, side string, pk sim.Packet) {
	peer, far := tp.peerA, "a1"
	if side == "b0" {
		peer, far = tp.peerB, "b1"
	}
	peer.Do(t, func() {
		proto := htons(pk.Proto)
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(proto))
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		ifc, err := net.InterfaceByName(far)
		if err != nil {
			t.Fatal(err)
		}
		sa := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Protocol: proto, Halen: 6}
		copy(sa.Addr[:], tp.macs[side])
		if err := unix.Sendto(fd, pk.Network, 0, sa); err != nil {
			t.Fatalf("sending from %s: %v", far, err)
		}
	})
}

// link is the Ethernet header a packet injected towards side arrives with.
func (tp *topo) linkHeader(side string, proto uint16) []byte {
	far := "a1"
	if side == "b0" {
		far = "b1"
	}
	return sim.EthernetHeader(tp.macs[side], tp.macs[far], proto)
}

// send sends pk from the dut itself through a raw socket (the header as
// built; mark set with SO_MARK). It reports false when the kernel has no
// route for it.
func (tp *topo) send(t *testing.T, pk sim.Packet, mark uint32) bool {
	ok := true
	tp.dut.Do(t, func() {
		fam, sa := unix.AF_INET, unix.Sockaddr(nil)
		_, dst := addrsOf(pk)
		if dst.Is6() {
			fam, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: dst.As16()}
		} else {
			sa = &unix.SockaddrInet4{Addr: dst.As4()}
		}
		fd, err := unix.Socket(fam, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MARK, int(mark)); err != nil {
			t.Fatal(err)
		}
		err = unix.Sendto(fd, pk.Network, 0, sa)
		switch err {
		case nil, unix.EPERM: // EPERM: a rule dropped it
		case unix.ENETUNREACH, unix.EHOSTUNREACH:
			ok = false
		default:
			t.Fatalf("sending %s: %v", dst, err)
		}
	})
	return ok
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// addrsOf reads an IP packet's addresses.
func addrsOf(pk sim.Packet) (src, dst netip.Addr) {
	if pk.Proto == unix.ETH_P_IPV6 {
		return netip.AddrFrom16([16]byte(pk.Network[8:24])), netip.AddrFrom16([16]byte(pk.Network[24:40]))
	}
	return netip.AddrFrom4([4]byte(pk.Network[12:16])), netip.AddrFrom4([4]byte(pk.Network[16:20]))
}

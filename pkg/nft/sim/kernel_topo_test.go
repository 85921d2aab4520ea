package sim_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
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
	ifaces            map[string]sim.Iface        // the dut's, by name
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
		nstest.Run(t, "ip", "link", "add", s.side, "netns", tp.dut.Name, "type", "veth", "peer", "name", s.far, "netns", s.peer.Name)
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
	tp.ifaces = dutIfaces(t, tp.dut)
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

// dutIfaces lists the dut's interfaces as the simulator sees them.
func dutIfaces(t *testing.T, ns *nstest.NS) map[string]sim.Iface {
	out := map[string]sim.Iface{}
	ns.Do(t, func() {
		ifcs, err := net.Interfaces()
		if err != nil {
			t.Fatal(err)
		}
		for _, ifc := range ifcs {
			typ := uint16(unix.ARPHRD_ETHER)
			if ifc.Flags&net.FlagLoopback != 0 {
				typ = unix.ARPHRD_LOOPBACK
			}
			out[ifc.Name] = sim.Iface{Name: ifc.Name, Index: uint32(ifc.Index), Type: typ}
		}
	})
	return out
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

// kernelFIB answers the simulator's routing questions from the dut's own
// routing tables, over netlink.
type kernelFIB struct {
	h      *netlink.Handle
	ifaces map[int]sim.Iface
}

func newKernelFIB(t *testing.T, tp *topo) *kernelFIB {
	h, err := netlink.NewHandleAt(netns.NsHandle(tp.dut.FD))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	f := &kernelFIB{h: h, ifaces: map[int]sim.Iface{}}
	for _, i := range tp.ifaces {
		f.ifaces[int(i.Index)] = i
	}
	return f
}

// Route asks the kernel (`ip route get`): an input route for the routing
// decision of a received packet, else an output route without a source
// (the dut has no source-based rules).
func (f *kernelFIB) Route(q sim.RouteQuery) (sim.Route, bool) {
	opts := &netlink.RouteGetOptions{Mark: q.Mark}
	if q.Input {
		opts.IifIndex, opts.SrcAddr = int(q.IIF.Index), q.Src.AsSlice()
	}
	if q.OIF != nil {
		opts.OifIndex = int(q.OIF.Index)
	}
	rs, err := f.h.RouteGetWithOptions(q.Dst.AsSlice(), opts)
	if err != nil || len(rs) == 0 {
		return sim.Route{}, false
	}
	r := rs[0]
	switch r.Type {
	case unix.RTN_UNICAST, unix.RTN_LOCAL, unix.RTN_BROADCAST, unix.RTN_MULTICAST:
	default:
		return sim.Route{}, false
	}
	out := sim.Route{Type: nft.AddrType(r.Type), OIFs: []sim.Iface{f.ifaces[r.LinkIndex]}}
	if a, ok := netip.AddrFromSlice(r.Src); ok {
		out.Src = a.Unmap()
	}
	return out, true
}

// AddrType gives the kernel's answer: for IPv4 the local table
// (inet_dev_addr_type), for IPv6 the address's interface or route
// (__nft_fib6_eval_type).
func (f *kernelFIB) AddrType(a netip.Addr, dev *sim.Iface) nft.AddrType {
	if a.Is4() {
		return f.addrType4(a, dev)
	}
	if dev != nil && f.onDev(a, dev) {
		return nft.AddrTypeLocal
	}
	r, err := f.h.RouteGetWithOptions(a.AsSlice(), &netlink.RouteGetOptions{})
	switch {
	case err != nil:
		return nft.AddrTypeUnreach
	case dev == nil && len(r) > 0 && r[0].Type == unix.RTN_LOCAL:
		return nft.AddrTypeLocal
	case a.IsMulticast():
		return nft.AddrTypeMulticast
	}
	return nft.AddrTypeUnicast
}

func (f *kernelFIB) addrType4(a netip.Addr, dev *sim.Iface) nft.AddrType {
	switch {
	case a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return nft.AddrTypeBroadcast
	case a.IsMulticast():
		return nft.AddrTypeMulticast
	}
	rs, err := f.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_LOCAL}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nft.AddrTypeUnicast
	}
	best, bits := -1, -1
	for i, r := range rs {
		if r.Dst == nil {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		p, ok := netip.AddrFromSlice(r.Dst.IP)
		if ok && netip.PrefixFrom(p.Unmap(), ones).Contains(a) && ones > bits {
			best, bits = i, ones
		}
	}
	if best < 0 || dev != nil && rs[best].LinkIndex != int(dev.Index) {
		return nft.AddrTypeUnicast
	}
	return nft.AddrType(rs[best].Type)
}

func (f *kernelFIB) onDev(a netip.Addr, dev *sim.Iface) bool {
	l, err := f.h.LinkByIndex(int(dev.Index))
	if err != nil {
		return false
	}
	addrs, err := f.h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return false
	}
	for _, ad := range addrs {
		if x, ok := netip.AddrFromSlice(ad.IP); ok && x == a {
			return true
		}
	}
	return false
}

package hostfib

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// FIB is a network namespace's routing.
type FIB struct {
	h      *netlink.Handle
	ifaces map[int]sim.Iface
}

// New opens the namespace netns (a descriptor; 0 for the caller's) and
// lists its interfaces.
func New(netnsFD int) (*FIB, error) {
	var h *netlink.Handle
	var err error
	if netnsFD == 0 {
		h, err = netlink.NewHandle()
	} else {
		h, err = netlink.NewHandleAt(netns.NsHandle(netnsFD))
	}
	if err != nil {
		return nil, fmt.Errorf("opening a netlink handle: %w", err)
	}
	f := &FIB{h: h}
	if err := f.Refresh(); err != nil {
		h.Close()
		return nil, err
	}
	return f, nil
}

// Close releases the netlink handle.
func (f *FIB) Close() { f.h.Close() }

// Refresh lists the interfaces again.
func (f *FIB) Refresh() error {
	links, err := f.h.LinkList()
	if err != nil {
		return fmt.Errorf("listing interfaces: %w", err)
	}
	f.ifaces = map[int]sim.Iface{}
	for _, l := range links {
		a := l.Attrs()
		f.ifaces[a.Index] = sim.Iface{Name: a.Name, Index: uint32(a.Index), Type: arphrd(a.EncapType)}
	}
	return nil
}

// arphrd is the device type of a link's encapsulation name.
func arphrd(encap string) uint16 {
	switch encap {
	case "loopback":
		return unix.ARPHRD_LOOPBACK
	case "none":
		return unix.ARPHRD_NONE
	case "ipip":
		return unix.ARPHRD_TUNNEL
	case "sit":
		return unix.ARPHRD_SIT
	}
	return unix.ARPHRD_ETHER
}

// Iface returns the interface called name.
func (f *FIB) Iface(name string) (sim.Iface, bool) {
	for _, i := range f.ifaces {
		if i.Name == name {
			return i, true
		}
	}
	return sim.Iface{}, false
}

// Route asks the kernel for the route.
func (f *FIB) Route(q sim.RouteQuery) (sim.Route, bool) {
	opts := &netlink.RouteGetOptions{Mark: q.Mark}
	if q.Input && q.IIF != nil {
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
	if a, ok := netip.AddrFromSlice(r.Src); ok && q.Dst.Is6() {
		out.Src = a
	}
	if q.Dst.Is4() {
		nh := q.Dst
		if gw, ok := netip.AddrFromSlice(r.Gw); ok {
			nh = gw.Unmap()
		}
		out.Src = f.selectAddr(r.LinkIndex, nh)
	}
	return out, true
}

// selectAddr is inet_select_addr(dev, nh, RT_SCOPE_UNIVERSE): the first
// primary global address of the interface, one whose subnet holds nh
// first; without one, the first primary global address of the first
// interface (in the kernel's order) that has one.
func (f *FIB) selectAddr(index int, nh netip.Addr) netip.Addr {
	if a := f.devAddr(index, nh); a.IsValid() {
		return a
	}
	links, err := f.h.LinkList()
	if err != nil {
		return netip.Addr{}
	}
	for _, l := range links {
		if a := f.devAddr(l.Attrs().Index, netip.Addr{}); a.IsValid() {
			return a
		}
	}
	return netip.Addr{}
}

// devAddr is the first primary global IPv4 address of interface index
// (whose subnet holds nh, when one does).
func (f *FIB) devAddr(index int, nh netip.Addr) netip.Addr {
	l, err := f.h.LinkByIndex(index)
	if err != nil {
		return netip.Addr{}
	}
	addrs, err := f.h.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}
	}
	var first netip.Addr
	for _, ad := range addrs {
		a, ok := netip.AddrFromSlice(ad.IP)
		if !ok || ad.Flags&unix.IFA_F_SECONDARY != 0 || ad.Scope != unix.RT_SCOPE_UNIVERSE {
			continue
		}
		ones, _ := ad.Mask.Size()
		if nh.IsValid() && netip.PrefixFrom(a.Unmap(), ones).Contains(nh) {
			return a.Unmap()
		}
		if !first.IsValid() {
			first = a.Unmap()
		}
	}
	return first
}

// AddrType is the type fib gives address a (on dev when not nil).
func (f *FIB) AddrType(a netip.Addr, dev *sim.Iface) nft.AddrType {
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

// addrType4 is inet_dev_addr_type: the type of the local table's route
// covering a (of dev's, when dev is set), unicast without one.
func (f *FIB) addrType4(a netip.Addr, dev *sim.Iface) nft.AddrType {
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

func (f *FIB) onDev(a netip.Addr, dev *sim.Iface) bool {
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

package sim

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// StaticFIB is a FIB given as data, for callers that know a host's
// addressing without the host at hand (a trace from the datastore): the
// host's addresses on its interfaces (each also a connected route), its
// other routes (the longest prefix wins), and whether it forwards.
// Package hostfib reads a live host instead.
type StaticFIB struct {
	Loopback Iface
	Addrs    []IfaceAddr
	Routes   []StaticRoute
	Forward  bool // the host forwards packets (net.ipv4.ip_forward, IPv6 forwarding)
}

// IfaceAddr is an address of the host and its prefix length, on Iface.
type IfaceAddr struct {
	Iface  Iface
	Prefix netip.Prefix // the address, with its subnet's length
}

// StaticRoute is a route to Dst through Iface (by Gateway, when set).
type StaticRoute struct {
	Dst     netip.Prefix
	Iface   Iface
	Gateway netip.Addr
}

var _ FIB = (*StaticFIB)(nil)

// AddrType is local for an address of the host (on dev, when set),
// broadcast for an IPv4 subnet's broadcast address, multicast, and for
// the rest unicast (IPv4) or, without a route, unreachable (IPv6).
func (f *StaticFIB) AddrType(a netip.Addr, dev *Iface) nft.AddrType {
	for _, ad := range f.Addrs {
		if ad.Prefix.Addr() == a && (dev == nil || dev.Index == ad.Iface.Index) {
			return nft.AddrTypeLocal
		}
		if a.Is4() && ad.Prefix.Bits() < 31 && a == lastAddr(ad.Prefix) && (dev == nil || dev.Index == ad.Iface.Index) {
			return nft.AddrTypeBroadcast
		}
	}
	switch {
	case a.IsMulticast():
		return nft.AddrTypeMulticast
	case a.Is4() && (a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})):
		return nft.AddrTypeBroadcast
	case a.Is6() && !f.lookup(a).Dst.IsValid():
		return nft.AddrTypeUnreach
	}
	return nft.AddrTypeUnicast
}

// Route finds the host's own addresses (through the loopback interface),
// then the longest prefix among connected and static routes; a received
// packet (Input) for another host has none when the host does not
// forward.
func (f *StaticFIB) Route(q RouteQuery) (Route, bool) {
	if f.AddrType(q.Dst, nil) == nft.AddrTypeLocal {
		return Route{Type: nft.AddrTypeLocal, OIFs: []Iface{f.Loopback}, Src: f.selectAddr(f.Loopback, q.Dst)}, true
	}
	if q.Input && !f.Forward {
		return Route{}, false
	}
	r := f.lookup(q.Dst)
	if !r.Dst.IsValid() {
		return Route{}, false
	}
	nh := q.Dst
	if r.Gateway.IsValid() {
		nh = r.Gateway
	}
	return Route{Type: nft.AddrTypeUnicast, OIFs: []Iface{r.Iface}, Src: f.selectAddr(r.Iface, nh)}, true
}

// lookup is the longest prefix route to a.
func (f *StaticFIB) lookup(a netip.Addr) StaticRoute {
	var best StaticRoute
	consider := func(r StaticRoute) {
		if r.Dst.Contains(a) && (!best.Dst.IsValid() || r.Dst.Bits() > best.Dst.Bits()) {
			best = r
		}
	}
	for _, ad := range f.Addrs {
		consider(StaticRoute{Dst: ad.Prefix.Masked(), Iface: ad.Iface})
	}
	for _, r := range f.Routes {
		consider(r)
	}
	return best
}

// selectAddr is the masquerade source (see Route.Src): an address of dev
// of nh's family, one whose subnet holds nh first; else the first address
// of that family.
func (f *StaticFIB) selectAddr(dev Iface, nh netip.Addr) netip.Addr {
	var onDev, first netip.Addr
	for _, ad := range f.Addrs {
		a := ad.Prefix.Addr()
		if a.Is4() != nh.Is4() || a.IsLoopback() {
			continue
		}
		if ad.Iface.Index == dev.Index && ad.Prefix.Contains(nh) {
			return a
		}
		if ad.Iface.Index == dev.Index && !onDev.IsValid() {
			onDev = a
		}
		if !first.IsValid() {
			first = a
		}
	}
	if onDev.IsValid() {
		return onDev
	}
	return first
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := range b {
		keep := min(max(p.Bits()-i*8, 0), 8)
		b[i] |= byte(0xff >> keep)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

package sim_test

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// staticFIB is a host with addresses on interfaces and routes by prefix
// (the longest prefix wins), for unit tests.
type staticFIB struct {
	local  map[netip.Addr]sim.Iface
	routes []staticRoute
	lo     sim.Iface
}

type staticRoute struct {
	prefix netip.Prefix
	dev    sim.Iface
	src    netip.Addr
}

func (f *staticFIB) AddrType(a netip.Addr, dev *sim.Iface) nft.AddrType {
	if d, ok := f.local[a]; ok && (dev == nil || dev.Index == d.Index) {
		return nft.AddrTypeLocal
	}
	if a.IsMulticast() {
		return nft.AddrTypeMulticast
	}
	return nft.AddrTypeUnicast
}

func (f *staticFIB) Route(q sim.RouteQuery) (sim.Route, bool) {
	if _, ok := f.local[q.Dst]; ok {
		return sim.Route{Type: nft.AddrTypeLocal, OIFs: []sim.Iface{f.lo}, Src: q.Dst}, true
	}
	best := -1
	for i, r := range f.routes {
		if r.prefix.Contains(q.Dst) && (best < 0 || r.prefix.Bits() > f.routes[best].prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		return sim.Route{}, false
	}
	r := f.routes[best]
	return sim.Route{Type: nft.AddrTypeUnicast, OIFs: []sim.Iface{r.dev}, Src: r.src}, true
}

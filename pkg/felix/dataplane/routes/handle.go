package routes

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nlhandle"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Handle is the Reconciler's access to one network namespace's routing tables. Netlink implements
// it over a netlink handle; Fake implements it in memory. Errors keep the kernel's errno
// (unix.ENODEV when a device is missing, unix.ESRCH when a route to delete is gone).
type Handle interface {
	// ListRoutes lists the routes of every table, both families.
	ListRoutes(ctx context.Context) ([]KernelRoute, error)
	// ReplaceRoute adds the route or replaces the one with the same table, destination and metric.
	ReplaceRoute(r KernelRoute) error
	// DeleteRoute deletes the route with r's table, destination, metric and protocol.
	DeleteRoute(r KernelRoute) error
	// LinkIndexes maps every interface name to its index.
	LinkIndexes(ctx context.Context) (map[string]int, error)
}

// Netlink is Handle over a netlink handle (nlhandle's, shared with the other kernel pieces).
type Netlink struct{ *nlhandle.Handle }

// NewNetlink wraps h; closing h stays with the caller.
func NewNetlink(h *netlink.Handle) *Netlink { return &Netlink{nlhandle.Wrap(h)} }

// OpenNetlink opens a netlink handle in the namespace at nsPath ("" = the current one). Close
// releases it.
func OpenNetlink(nsPath string) (*Netlink, error) {
	h, err := nlhandle.OpenHandle(nsPath)
	if err != nil {
		return nil, err
	}
	return &Netlink{h}, nil
}

var families = []int{netlink.FAMILY_V4, netlink.FAMILY_V6}

// ListRoutes implements Handle.
func (n *Netlink) ListRoutes(ctx context.Context) ([]KernelRoute, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_UNSPEC}
	mask := netlink.RT_FILTER_TABLE
	var out []KernelRoute
	for _, fam := range families {
		// Each route is converted as it is read: the list of netlink.Route (a few hundred bytes
		// each) would be a few MB at the peak of a big host's first sync.
		rs, err := nlhandle.RetryDump(ctx, func() ([]KernelRoute, error) {
			var got []KernelRoute
			err := n.RouteListFilteredIter(fam, filter, mask, func(r netlink.Route) bool {
				if kr, ok := fromNetlink(r, fam); ok {
					got = append(got, kr)
				}
				return true
			})
			return got, err
		})
		if errors.Is(err, unix.EAFNOSUPPORT) {
			continue // IPv6 disabled in this kernel
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// ReplaceRoute implements Handle.
func (n *Netlink) ReplaceRoute(r KernelRoute) error { return n.RouteReplace(toNetlink(r)) }

// DeleteRoute implements Handle. The device is left out, so a route whose device was re-created
// can still be deleted.
func (n *Netlink) DeleteRoute(r KernelRoute) error {
	nr := toNetlink(r)
	nr.LinkIndex, nr.Gw, nr.Src, nr.Flags, nr.Scope = 0, nil, nil, 0, netlink.SCOPE_NOWHERE
	return n.RouteDel(nr)
}

// LinkIndexes implements Handle.
func (n *Netlink) LinkIndexes(ctx context.Context) (map[string]int, error) {
	links, err := nlhandle.RetryDump(ctx, n.LinkList)
	if err != nil {
		return nil, err
	}
	m := make(map[string]int, len(links))
	for _, l := range links {
		m[l.Attrs().Name] = l.Attrs().Index
	}
	return m, nil
}

func toNetlink(r KernelRoute) *netlink.Route {
	nr := &netlink.Route{
		Dst:       nlhandle.IPNet(r.Dst),
		LinkIndex: r.LinkIndex,
		Table:     r.Table,
		Priority:  r.Metric,
		Protocol:  netlink.RouteProtocol(r.Protocol), // #nosec G115 -- canonical checks 0..255
		Scope:     scopeToNetlink(r.Scope),
		MTU:       r.MTU,
	}
	if r.Blackhole {
		nr.Type = unix.RTN_BLACKHOLE
	}
	if r.Throw {
		nr.Type = unix.RTN_THROW
	}
	if r.Gateway.IsValid() {
		nr.Gw = r.Gateway.AsSlice()
	}
	if r.Src.IsValid() {
		nr.Src = r.Src.AsSlice()
	}
	if r.Onlink {
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	return nr
}

// fromNetlink converts a listed route. Kinds of route we never write (multipath, unreachable...)
// come out as routes no desired route equals, so they are replaced or deleted.
func fromNetlink(nr netlink.Route, family int) (KernelRoute, bool) {
	dst, ok := ipNetToPrefix(nr.Dst, family)
	if !ok {
		return KernelRoute{}, false
	}
	kr := KernelRoute{
		Route: Route{
			Dst:       dst,
			Blackhole: nr.Type == unix.RTN_BLACKHOLE,
			Throw:     nr.Type == unix.RTN_THROW,
			Onlink:    nr.Flags&int(netlink.FLAG_ONLINK) != 0,
			Table:     nr.Table,
			Scope:     scopeFromNetlink(nr.Scope),
			Metric:    nr.Priority,
			Protocol:  int(nr.Protocol),
			MTU:       nr.MTU,
		},
		LinkIndex: nr.LinkIndex,
	}
	kr.Gateway = nlhandle.Addr(nr.Gw)
	for _, nh := range nr.MultiPath {
		if gw := nlhandle.Addr(nh.Gw); gw.IsValid() {
			kr.Multipath = append(kr.Multipath, gw)
		}
	}
	kr.Src = nlhandle.Addr(nr.Src)
	if !kr.Gateway.IsValid() {
		kr.Onlink = false
	}
	if kr.Blackhole || kr.Throw {
		kr.LinkIndex = 0 // IPv6 blackholes and throw routes are reported on lo
	}
	return kr, true
}

// ipNetToPrefix converts a route destination; nil is the default route of the family.
func ipNetToPrefix(n *net.IPNet, family int) (netip.Prefix, bool) {
	if n == nil {
		if family == netlink.FAMILY_V6 {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), true
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), true
	}
	return nlhandle.Prefix(n)
}

func scopeToNetlink(s Scope) netlink.Scope {
	switch s {
	case ScopeLink:
		return netlink.SCOPE_LINK
	case ScopeHost:
		return netlink.SCOPE_HOST
	}
	return netlink.SCOPE_UNIVERSE
}

func scopeFromNetlink(s netlink.Scope) Scope {
	switch s {
	case netlink.SCOPE_LINK:
		return ScopeLink
	case netlink.SCOPE_HOST:
		return ScopeHost
	}
	return ScopeGlobal
}

package cni

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/calico-host/calico-host/pkg/netnstest"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestHostRouteLookupWhileAddressesChurn checks a host route while links, addresses and routes of
// the namespace come and go. The lookup reads a netlink dump of the whole namespace, which the
// kernel may interrupt when the table changes meanwhile (links come and go on a host where
// containers start in parallel): it must repeat the dump, not fail the ADD.
func TestHostRouteLookupWhileAddressesChurn(t *testing.T) {
	ns, h := newDumpTestNS(t)
	var links []netlink.Link
	for i := range 40 {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("h%d", i)}, PeerName: fmt.Sprintf("p%d", i)}
		mustNL(t, h.LinkAdd(v))
		l, err := h.LinkByName(v.Name)
		mustNL(t, err)
		mustNL(t, h.LinkSetUp(l))
		ll := netip.MustParseAddr(fmt.Sprintf("fe80::%x", i+1))
		mustNL(t, h.AddrAdd(l, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(ll, 64)), Flags: unix.IFA_F_NODAD}))
		links = append(links, l)
	}
	for i := range 400 { // a busy host: many workload addresses and routes, so dumps take several parts
		l := links[2+i%30]
		mustNL(t, h.AddrAdd(l, &netlink.Addr{IPNet: prefixNet(netip.MustParsePrefix(fmt.Sprintf("fd5c:8::%x/128", i+1))), Flags: unix.IFA_F_NODAD}))
		mustNL(t, hostRoutes(h, l, []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.65.%d.%d/32", 2+i/250, i%250)), netip.MustParsePrefix(fmt.Sprintf("fd5c:7::%x/128", i+1))}))
	}
	target := netip.MustParsePrefix("10.65.0.7/32")
	mustNL(t, hostRoutes(h, links[0], []netip.Prefix{target}))

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { churnAddrsAndRoutes(ctx, t, ns, links[1].Attrs().Name) })
	for i := range 300 {
		if !routeVia(h, target, links[0].Attrs().Index) {
			t.Fatalf("lookup %d: the route to %s through %s was not found", i, target, links[0].Attrs().Name)
		}
	}
}

// churnAddrsAndRoutes adds and deletes a veth pair (as parallel ADDs do), and an IPv6 address and
// an IPv4 route on link, until ctx ends, on a netlink handle of its own.
func churnAddrsAndRoutes(ctx context.Context, t *testing.T, ns netns.NsHandle, link string) {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Error(err)
		return
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		t.Error(err)
		return
	}
	for i := 0; ctx.Err() == nil; i++ {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("c%d", i%4)}, PeerName: fmt.Sprintf("cp%d", i%4)}
		if h.LinkAdd(v) == nil {
			_ = h.LinkDel(v)
		}
		a := &netlink.Addr{IPNet: prefixNet(netip.MustParsePrefix(fmt.Sprintf("fd5c:9::%x/128", i%64+1))), Flags: unix.IFA_F_NODAD}
		if h.AddrAdd(l, a) == nil {
			_ = h.AddrDel(l, a)
		}
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4(10, 65, 1, byte(i)), Mask: net.CIDRMask(32, 32)}, Scope: netlink.SCOPE_LINK}
		if h.RouteAdd(r) == nil {
			_ = h.RouteDel(r)
		}
	}
}

// newDumpTestNS creates a network namespace for one test and a netlink handle in it.
func newDumpTestNS(t *testing.T) (netns.NsHandle, *netlink.Handle) {
	t.Helper()
	ns := netnstest.New(t, "cnidump")
	return netns.NsHandle(ns.FD), ns.Handle(t)
}

func mustNL(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package cni

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// CheckVeth verifies what SetupVeth configured: the container interface with its addresses and
// default routes, the host veth with its MAC, and the host routes.
func CheckVeth(c VethConfig) error {
	cont, err := openNetNS(c.NetNS)
	if err != nil {
		return err
	}
	defer cont.Close()
	contLink, err := cont.nl.LinkByName(string(c.ContainerIf))
	if err != nil {
		return fmt.Errorf("container interface %s: %w", c.ContainerIf, err)
	}
	if err := checkAddrs(cont.nl, contLink, c.IPs); err != nil {
		return err
	}
	for _, fam := range []int{4, 6} {
		if c.has(fam) && !hasDefaultRoute(cont.nl, contLink, fam) {
			return fmt.Errorf("no IPv%d default route through %s in the container", fam, c.ContainerIf)
		}
	}
	hostLink, err := netlink.LinkByName(string(c.HostIf))
	if err != nil {
		return fmt.Errorf("host veth %s: %w", c.HostIf, err)
	}
	if hostLink.Attrs().HardwareAddr.String() != HostVethMAC.String() {
		return fmt.Errorf("host veth %s has MAC %s, want %s", c.HostIf, hostLink.Attrs().HardwareAddr, HostVethMAC)
	}
	h, err := nlhandle.Open("")
	if err != nil {
		return err
	}
	defer h.Close()
	for _, p := range c.IPs {
		if !routeVia(h, p, hostLink.Attrs().Index) {
			return fmt.Errorf("no host route to %s through %s", p, c.HostIf)
		}
	}
	return nil
}

func checkAddrs(nl *netlink.Handle, link netlink.Link, want []netip.Prefix) error {
	addrs, err := nlhandle.RetryDump(context.Background(), func() ([]netlink.Addr, error) { return nl.AddrList(link, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("listing addresses of %s: %w", link.Attrs().Name, err)
	}
	have := map[netip.Prefix]bool{}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			ones, _ := a.Mask.Size()
			have[netip.PrefixFrom(ip.Unmap(), ones)] = true
		}
	}
	for _, p := range want {
		if !have[p] {
			return fmt.Errorf("address %s missing from %s", p, link.Attrs().Name)
		}
	}
	return nil
}

func hasDefaultRoute(nl *netlink.Handle, link netlink.Link, fam int) bool {
	f := netlink.FAMILY_V4
	if fam == 6 {
		f = netlink.FAMILY_V6
	}
	routes, err := nlhandle.RetryDump(context.Background(), func() ([]netlink.Route, error) { return nl.RouteList(link, f) })
	if err != nil {
		return false
	}
	for _, r := range routes {
		if (r.Dst == nil || isZeroNet(r.Dst.String())) && r.Gw != nil {
			return true
		}
	}
	return false
}

func isZeroNet(s string) bool { return s == "0.0.0.0/0" || s == "::/0" }

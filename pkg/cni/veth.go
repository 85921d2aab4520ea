package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// HostVethMAC is the MAC of every host-side veth (Project Calico's EE:EE:EE:EE:EE:EE).
var HostVethMAC = net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}

// gatewayV4 is the fake next hop containers route through; the host side answers ARP for it.
var gatewayV4 = netip.MustParseAddr("169.254.1.1")

// gatewayV6 is the IPv6 next hop of containers: the host side's link-local address, the EUI-64
// address of HostVethMAC (what the kernel gives it in its default address generation mode). The
// plugin adds it itself, so the container's route works as soon as ADD returns, whatever the host's
// address generation mode and without waiting for the kernel.
var gatewayV6 = netip.MustParseAddr("fe80::ecee:eeff:feee:eeee")

// VethConfig describes the veth pair of one container.
type VethConfig struct {
	NetNS       string // CNI_NETNS: opened as a namespace, never used as a plain path
	ContainerIf IfName
	HostIf      IfName
	// Owner is the container ID marked on the host veth (its alias): only the interfaces of this
	// container are ever replaced or deleted.
	Owner string
	// ReplaceOther lets ADD replace a host veth of the same name marked for another container
	// (Kubernetes: the veth of an older sandbox of the same pod, whose name is the same).
	ReplaceOther    bool
	MTU             MTU
	IPs             []netip.Prefix // host prefixes (/32, /128)
	AllowForwarding bool
}

func (c VethConfig) has(fam int) bool {
	for _, p := range c.IPs {
		if (fam == 4) == p.Addr().Is4() {
			return true
		}
	}
	return false
}

// VethPreflight checks, before anything is allocated, that SetupVeth would not have to touch an
// interface that is not this container's: the container interface must not exist and a host
// veth of the same name must be this container's (or replaceable, see ReplaceOther).
func VethPreflight(c VethConfig) error {
	cont, err := openNetNS(c.NetNS)
	if err != nil {
		return err
	}
	defer cont.Close()
	host, err := nlhandle.Open("")
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer host.Close()
	if err := containerIfAbsent(cont, c); err != nil {
		return err
	}
	_, err = replaceableHostVeth(host, c)
	return err
}

// SetupVeth creates the veth pair, marks the host end with its owner, configures both ends
// (sysctls, addresses, routes) and the host route to each address, and returns the container
// side's MAC and the host end's index. On failure the pair it created is removed; nothing else is.
func SetupVeth(c VethConfig) (net.HardwareAddr, int, error) {
	cont, err := openNetNS(c.NetNS)
	if err != nil {
		return nil, 0, err
	}
	defer cont.Close()
	host, err := nlhandle.Open("")
	if err != nil {
		return nil, 0, fmt.Errorf("netlink socket: %w", err)
	}
	defer host.Close()
	hostLink, err := createVeth(host, cont, c)
	if err != nil {
		return nil, 0, err
	}
	mac, err := configureVeth(host, hostLink, cont, c)
	if err != nil {
		if delErr := host.LinkDel(hostLink); delErr != nil && !nlhandle.IsLinkNotFound(delErr) {
			err = errors.Join(err, fmt.Errorf("removing veth %s: %w", c.HostIf, delErr))
		}
		return nil, 0, err
	}
	return mac, hostLink.Attrs().Index, nil
}

// createVeth replaces a stale host veth of the same name when it may (see replaceableHostVeth)
// and creates the pair, the container end directly inside the container's namespace.
func createVeth(host *netlink.Handle, cont *netNS, c VethConfig) (netlink.Link, error) {
	if err := containerIfAbsent(cont, c); err != nil {
		return nil, err
	}
	old, err := replaceableHostVeth(host, c)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if err := host.LinkDel(old); err != nil && !nlhandle.IsLinkNotFound(err) {
			return nil, fmt.Errorf("deleting stale host veth %s (%s): %w", c.HostIf, ownerText(old), err)
		}
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: string(c.HostIf), MTU: int(c.MTU), HardwareAddr: HostVethMAC},
		PeerName:      string(c.ContainerIf),
		PeerNamespace: netlink.NsFd(int(cont.ns)),
		PeerMTU:       uint32(c.MTU),
	}
	if err := host.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("creating veth %s/%s: %w", c.HostIf, c.ContainerIf, err)
	}
	link, err := host.LinkByName(string(c.HostIf))
	if err != nil {
		return nil, fmt.Errorf("reading back veth %s: %w", c.HostIf, err)
	}
	if err := markVeth(host, link, c); err != nil {
		if delErr := host.LinkDel(link); delErr != nil && !nlhandle.IsLinkNotFound(delErr) {
			err = errors.Join(err, fmt.Errorf("removing veth %s: %w", c.HostIf, delErr))
		}
		return nil, err
	}
	return link, nil
}

// markVeth sets the owner mark (the kernel ignores an alias given at creation) and the MAC.
func markVeth(host *netlink.Handle, link netlink.Link, c VethConfig) error {
	if err := host.LinkSetAlias(link, ownerAlias(c.Owner)); err != nil {
		return fmt.Errorf("marking %s with its owner: %w", c.HostIf, err)
	}
	if link.Attrs().HardwareAddr.String() != HostVethMAC.String() {
		if err := host.LinkSetHardwareAddr(link, HostVethMAC); err != nil {
			return fmt.Errorf("setting the MAC of %s: %w", c.HostIf, err)
		}
	}
	return nil
}

// configureVeth sets sysctls on both ends, brings them up, and adds addresses and routes.
func configureVeth(host *netlink.Handle, hostLink netlink.Link, cont *netNS, c VethConfig) (net.HardwareAddr, error) {
	if err := writeSysctls(hostSysctls(c)); err != nil {
		return nil, err
	}
	if err := hostGatewayV6(host, hostLink, c); err != nil {
		return nil, err
	}
	if err := host.LinkSetUp(hostLink); err != nil {
		return nil, fmt.Errorf("bringing up %s: %w", c.HostIf, err)
	}
	if err := cont.Do(func() error { return writeSysctls(containerSysctls(c)) }); err != nil {
		return nil, err
	}
	contLink, err := cont.nl.LinkByName(string(c.ContainerIf))
	if err != nil {
		return nil, fmt.Errorf("finding %s in %s: %w", c.ContainerIf, c.NetNS, err)
	}
	if err := cont.nl.LinkSetUp(contLink); err != nil {
		return nil, fmt.Errorf("bringing up %s: %w", c.ContainerIf, err)
	}
	if err := containerRoutes(cont, contLink, c); err != nil {
		return nil, err
	}
	if err := hostRoutes(host, hostLink, c.IPs); err != nil {
		return nil, err
	}
	return contLink.Attrs().HardwareAddr, nil
}

func hostSysctls(c VethConfig) []sysctl {
	var s []sysctl
	h := string(c.HostIf)
	if c.has(4) {
		s = append(s, sysctl{"net/ipv4/conf/" + h + "/route_localnet", "1"}, sysctl{"net/ipv4/neigh/" + h + "/proxy_delay", "0"},
			sysctl{"net/ipv4/conf/" + h + "/proxy_arp", "1"}, sysctl{"net/ipv4/conf/" + h + "/forwarding", "1"})
	}
	if c.has(6) {
		s = append(s, sysctl{"net/ipv6/conf/" + h + "/disable_ipv6", "0"}, sysctl{"net/ipv6/conf/" + h + "/accept_dad", "0"},
			sysctl{"net/ipv6/conf/" + h + "/accept_ra", "0"}, sysctl{"net/ipv6/conf/" + h + "/proxy_ndp", "1"},
			sysctl{"net/ipv6/conf/" + h + "/forwarding", "1"})
	}
	return s
}

func containerSysctls(c VethConfig) []sysctl {
	fwd := "0"
	if c.AllowForwarding {
		fwd = "1"
	}
	var s []sysctl
	if c.has(4) {
		s = append(s, sysctl{"net/ipv4/ip_forward", fwd})
	}
	if c.has(6) {
		s = append(s, sysctl{"net/ipv6/conf/all/disable_ipv6", "0"}, sysctl{"net/ipv6/conf/default/disable_ipv6", "0"},
			sysctl{"net/ipv6/conf/lo/disable_ipv6", "0"}, sysctl{"net/ipv6/conf/" + string(c.ContainerIf) + "/accept_dad", "0"},
			sysctl{"net/ipv6/conf/all/forwarding", fwd})
	}
	return s
}

// hostGatewayV6 gives the host side its link-local address gatewayV6 (no duplicate address
// detection) when the container has IPv6.
func hostGatewayV6(host *netlink.Handle, hostLink netlink.Link, c VethConfig) error {
	if !c.has(6) {
		return nil
	}
	a := &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(gatewayV6, 64)), Flags: unix.IFA_F_NODAD, Scope: unix.RT_SCOPE_LINK}
	if err := host.AddrAdd(hostLink, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding %s to %s: %w", gatewayV6, c.HostIf, err)
	}
	return nil
}

// containerRoutes adds the container's addresses and default routes: IPv4 via 169.254.1.1 (a
// link-scope route makes it reachable), IPv6 via the host side's link-local address.
func containerRoutes(cont *netNS, contLink netlink.Link, c VethConfig) error {
	idx := contLink.Attrs().Index
	if c.has(4) {
		gw := &net.IPNet{IP: gatewayV4.AsSlice(), Mask: net.CIDRMask(32, 32)}
		if err := cont.nl.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: gw, Scope: netlink.SCOPE_LINK}); err != nil {
			return fmt.Errorf("adding route to %s in the container: %w", gatewayV4, err)
		}
		if err := cont.nl.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: gatewayV4.AsSlice(), Dst: defaultDst(4)}); err != nil {
			return fmt.Errorf("adding the IPv4 default route in the container: %w", err)
		}
	}
	for _, p := range c.IPs {
		a := &netlink.Addr{IPNet: prefixNet(p)}
		if p.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		}
		if err := cont.nl.AddrAdd(contLink, a); err != nil {
			return fmt.Errorf("adding %s to %s: %w", p, c.ContainerIf, err)
		}
	}
	if c.has(6) {
		if err := cont.nl.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: gatewayV6.AsSlice(), Dst: defaultDst(6)}); err != nil {
			return fmt.Errorf("adding the IPv6 default route via %s in the container: %w", gatewayV6, err)
		}
	}
	return nil
}

func defaultDst(fam int) *net.IPNet {
	if fam == 6 {
		return &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	}
	return &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// hostRoutes adds "<ip> dev <host veth> scope link" for every address. A route that already
// exists through the same interface is fine; through another interface it is an error.
func hostRoutes(host *netlink.Handle, link netlink.Link, ips []netip.Prefix) error {
	idx := link.Attrs().Index
	for _, p := range ips {
		r := &netlink.Route{LinkIndex: idx, Dst: prefixNet(p), Scope: netlink.SCOPE_LINK}
		err := host.RouteAdd(r)
		if err == nil {
			continue
		}
		if !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("adding host route to %s: %w", p, err)
		}
		if !routeVia(host, p, idx) {
			return fmt.Errorf("a host route to %s already exists through another interface", p)
		}
	}
	return nil
}

// routeVia reports whether the host has a route to exactly p through interface idx.
func routeVia(host *netlink.Handle, p netip.Prefix, idx int) bool {
	fam := netlink.FAMILY_V4
	if p.Addr().Is6() {
		fam = netlink.FAMILY_V6
	}
	routes, err := nlhandle.RetryDump(context.Background(), func() ([]netlink.Route, error) {
		return host.RouteListFiltered(fam, &netlink.Route{Dst: prefixNet(p)}, netlink.RT_FILTER_DST)
	})
	if err != nil {
		return false
	}
	for _, r := range routes {
		if r.LinkIndex == idx {
			return true
		}
	}
	return false
}

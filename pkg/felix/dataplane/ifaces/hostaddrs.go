package ifaces

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// SetHostAddrs makes the addresses of a workload interface's host side equal to want, each as a
// single-address prefix (/32, /128) of link scope: Project Calico's felix gives the interface of
// a workload that is a local BGP peer the BGP peering address of each IP version this way, and
// takes every other address of those versions off workload interfaces. Only IPv4 is managed
// unless v6; the kernel's IPv6 link-local fe80::/64 addresses are left alone.
func (i *Interfaces) SetHostAddrs(name string, want []netip.Addr, v6 bool) error {
	have, err := i.h.InterfaceAddrs(name)
	if err != nil {
		return err
	}
	add, del := hostAddrChanges(have, want, v6)
	var errs []error
	for _, p := range del {
		if err := i.h.DelInterfaceAddr(name, p); err != nil {
			errs = append(errs, fmt.Errorf("removing %s from %s: %w", p, name, err))
		}
	}
	for _, p := range add {
		if err := i.h.AddInterfaceAddr(name, p); err != nil {
			errs = append(errs, fmt.Errorf("adding %s to %s: %w", p, name, err))
		}
	}
	return errors.Join(errs...)
}

// hostAddrChanges compares an interface's addresses with the wanted ones: what to add and what
// to delete (see SetHostAddrs).
func hostAddrChanges(have []netip.Prefix, want []netip.Addr, v6 bool) (add, del []netip.Prefix) {
	managed := func(a netip.Addr) bool { return a.Is4() || v6 }
	var wanted []netip.Prefix
	for _, a := range want {
		if a = a.Unmap(); a.IsValid() && managed(a) {
			wanted = append(wanted, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	for _, p := range have {
		if !managed(p.Addr()) || kernelLinkLocal(p) || slices.Contains(wanted, p) {
			continue
		}
		del = append(del, p)
	}
	for _, p := range wanted {
		if !slices.Contains(have, p) {
			add = append(add, p)
		}
	}
	return add, del
}

// HostAddrsMatch reports whether an interface holding the addresses have (the monitor's
// view) holds exactly the wanted host addresses, as SetHostAddrs would leave it: then there is
// nothing to change, and nothing to read from the kernel.
func HostAddrsMatch(have []netip.Prefix, want []netip.Addr, v6 bool) bool {
	add, del := hostAddrChanges(have, want, v6)
	return len(add)+len(del) == 0
}

// kernelLinkLocal reports the fe80::/64 addresses that the kernel gives every IPv6 interface.
func kernelLinkLocal(p netip.Prefix) bool {
	return p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() && p.Bits() == 64
}

// InterfaceAddrs implements Handle.
func (n *Netlink) InterfaceAddrs(iface string) ([]netip.Prefix, error) {
	link, err := n.LinkByName(iface)
	if err != nil {
		return nil, fmt.Errorf("finding interface %s: %w", iface, err)
	}
	addrs, err := n.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing addresses of %s: %w", iface, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, ok := nlhandle.Prefix(a.IPNet); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// AddInterfaceAddr implements Handle: the address gets link scope.
func (n *Netlink) AddInterfaceAddr(iface string, p netip.Prefix) error {
	return n.changeAddr(iface, p, n.AddrAdd)
}

// DelInterfaceAddr implements Handle.
func (n *Netlink) DelInterfaceAddr(iface string, p netip.Prefix) error {
	return n.changeAddr(iface, p, n.AddrDel)
}

func (n *Netlink) changeAddr(iface string, p netip.Prefix, op func(netlink.Link, *netlink.Addr) error) error {
	link, err := n.LinkByName(iface)
	if err != nil {
		return fmt.Errorf("finding interface %s: %w", iface, err)
	}
	return op(link, &netlink.Addr{IPNet: nlhandle.IPNet(p), Scope: unix.RT_SCOPE_LINK})
}

// InterfaceAddrs implements Handle.
func (f *Fake) InterfaceAddrs(iface string) ([]netip.Prefix, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.find(iface)
	if s == nil {
		return nil, fmt.Errorf("finding interface %s: link not found", iface)
	}
	return slices.Clone(s.Addrs), nil
}

// AddInterfaceAddr implements Handle.
func (f *Fake) AddInterfaceAddr(iface string, p netip.Prefix) error {
	if _, err := f.InterfaceAddrs(iface); err != nil {
		return err
	}
	f.AddAddr(iface, p)
	return nil
}

// DelInterfaceAddr implements Handle.
func (f *Fake) DelInterfaceAddr(iface string, p netip.Prefix) error {
	if _, err := f.InterfaceAddrs(iface); err != nil {
		return err
	}
	f.DelAddr(iface, p)
	return nil
}

func (f *Fake) find(name string) *State {
	for _, s := range f.links {
		if s.Name == name {
			return s
		}
	}
	return nil
}

package nlhandle

import (
	"net"
	"net/netip"
)

// Prefix converts an address or route of a netlink message to a netip.Prefix: IPv4 in the
// 16-byte form becomes plain IPv4 (when its mask is 32 bits long). It reports false for nil or a
// malformed address.
func Prefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	if bits == 32 {
		a = a.Unmap()
	}
	return netip.PrefixFrom(a, ones), true
}

// IPNet converts a prefix for a netlink message (the address keeps its host bits).
func IPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Addr converts an address of a netlink message (IPv4-mapped becomes plain IPv4); the zero Addr
// when it is missing or malformed.
func Addr(ip net.IP) netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	return a.Unmap()
}

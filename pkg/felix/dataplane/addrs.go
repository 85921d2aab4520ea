package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// hostPrefix is the single-address prefix of a.
func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// versionOf is the IP version of an address (IPv4-mapped addresses are IPv4).
func versionOf(a netip.Addr) nft.IPVersion {
	if a.Is4() || a.Is4In6() {
		return nft.IPv4
	}
	return nft.IPv6
}

package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// hostPrefix is the single-address prefix of a.
func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// familyOf is the nft family of an address (IPv4-mapped addresses are IPv4).
func familyOf(a netip.Addr) nft.Family {
	if a.Is4() || a.Is4In6() {
		return nft.IPv4
	}
	return nft.IPv6
}

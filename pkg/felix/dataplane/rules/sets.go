package rules

import (
	"net/netip"
	"slices"
	"strconv"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// SetType is the nft key type of a calc IP set in family f and whether it is an interval set:
// addresses and CIDRs make an interval set of addresses; named ports a plain set of
// address . protocol . port.
func SetType(f nft.Family, t calc.IPSetType) (string, bool) {
	addr := nft.TypeIPv4Addr
	if f == nft.IPv6 {
		addr = nft.TypeIPv6Addr
	}
	if t == calc.IPSetNamedPort {
		return nft.Concat(addr, nft.TypeInetProto, nft.TypeInetService), false
	}
	return addr, true
}

// Element is the nft text of an IP set member in the set of family f; ok is false when the
// member belongs to the other family or cannot be a member of this kind of set.
func Element(f nft.Family, t calc.IPSetType, m calc.IPSetMember) (string, bool) {
	p := m.Prefix
	if !p.IsValid() || familyOf(p.Addr()) != f {
		return "", false
	}
	p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p.Addr())).Masked()
	if t != calc.IPSetNamedPort {
		return prefixText(p), true
	}
	if !p.IsSingleIP() || m.Protocol == 0 {
		return "", false
	}
	return p.Addr().String() + " . " + strconv.Itoa(int(m.Protocol)) + " . " + strconv.Itoa(int(m.Port)), true
}

// unmapBits is how many prefix bits an IPv4-mapped IPv6 address loses when unmapped.
func unmapBits(a netip.Addr) int {
	if a.Is4In6() {
		return 96
	}
	return 0
}

// prefixText prints a single address without its length, a network as a CIDR.
func prefixText(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// NetSet renders an interval set of prefixes of family f (prefixes of the other family are
// left out), with sorted, de-duplicated elements.
func NetSet(f nft.Family, id string, prefixes []netip.Prefix) *nft.Set {
	typ, interval := SetType(f, calc.IPSetNet)
	s := &nft.Set{Name: SetName(f, id), Type: typ, Interval: interval}
	for _, p := range prefixes {
		if e, ok := Element(f, calc.IPSetNet, calc.IPSetMember{Prefix: p}); ok {
			s.Elements = append(s.Elements, e)
		}
	}
	slices.Sort(s.Elements)
	s.Elements = slices.Compact(s.Elements)
	return s
}

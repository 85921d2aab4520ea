package rules

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// SetType is the key type of a calc IP set in the table of version v and whether it is an
// interval set: addresses and CIDRs make an interval set of addresses; named ports a plain set
// of address . protocol . port.
func SetType(v nft.IPVersion, t calc.IPSetType) (nft.DataType, bool) {
	addr := addrType(v)
	if t == calc.IPSetNamedPort {
		return nft.Concat(addr, nft.TypeInetProto, nft.TypeInetService), false
	}
	return addr, true
}

func addrType(v nft.IPVersion) nft.DataType {
	if v == nft.IPv6 {
		return nft.TypeIPv6Addr
	}
	return nft.TypeIPv4Addr
}

// Element is the set element of an IP set member in the set of version v, built from the typed
// address (no text in between); ok is false when the member belongs to the other version or
// cannot be a member of this kind of set (a named port needs one address and a protocol).
func Element(v nft.IPVersion, t calc.IPSetType, m calc.IPSetMember) (nft.Element, bool) {
	fam, p := prefixFamily(m.Prefix)
	if !p.IsValid() || fam != v {
		return nft.Element{}, false
	}
	p = p.Masked()
	if t != calc.IPSetNamedPort {
		return nft.PrefixElem(p), true
	}
	if !p.IsSingleIP() || m.Protocol == 0 {
		return nft.Element{}, false
	}
	return nft.ConcatElem(nft.AddrElem(p.Addr()), nft.ProtoKey(m.Protocol).Elem(), nft.PortElem(m.Port)), true
}

// unmapBits is how many prefix bits an IPv4-mapped IPv6 address loses when unmapped.
// prefixFamily is the version of p and p in that version's terms: an IPv4-mapped prefix of
// /96 or longer is the IPv4 prefix it maps; one shorter covers more than IPv4 and stays IPv6
// (as calc's unmapPrefix). An invalid prefix is returned as it is (callers leave it out or
// fail closed).
func prefixFamily(p netip.Prefix) (nft.IPVersion, netip.Prefix) {
	switch a := p.Addr(); {
	case a.Is4():
		return nft.IPv4, p
	case a.Is4In6() && p.Bits() >= 96:
		return nft.IPv4, netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return nft.IPv6, p
}

// NetSet renders an interval set of prefixes of version v (prefixes of the other version are
// left out); the table sorts and merges the elements.
func NetSet(v nft.IPVersion, id string, prefixes []netip.Prefix) *nft.Set {
	typ, interval := SetType(v, calc.IPSetNet)
	s := &nft.Set{Name: SetName(v, id), Type: typ, Interval: interval}
	for _, p := range prefixes {
		if e, ok := Element(v, calc.IPSetNet, calc.IPSetMember{Prefix: p}); ok {
			s.Elements = append(s.Elements, e)
		}
	}
	return s
}

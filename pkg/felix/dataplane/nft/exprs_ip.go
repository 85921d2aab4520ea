package nft

import (
	"net"
	"net/netip"
	"strconv"

	"github.com/google/nftables/expr"
)

// addrMatch is `ip saddr 10.65.0.0/16` (ip6 for IPv6 prefixes).
type addrMatch struct {
	noRefs
	dst    bool
	prefix netip.Prefix
	neg    bool
}

// SAddr matches the source address against an address or CIDR; the family
// follows the prefix. A single address is a full-length prefix, e.g.
// netip.PrefixFrom(addr, addr.BitLen()).
func SAddr(p netip.Prefix) Match { return addrMatch{prefix: p.Masked()} }

// DAddr matches the destination address against an address or CIDR.
func DAddr(p netip.Prefix) Match { return addrMatch{dst: true, prefix: p.Masked()} }

func (m addrMatch) negate() Match { m.neg = !m.neg; return m }

func (m addrMatch) field() Field {
	f := familyOfLen(m.prefix.Addr().BitLen() / 8)
	if m.dst {
		return FieldDAddr(f)
	}
	return FieldSAddr(f)
}

func (m addrMatch) String() string {
	v := m.prefix.String()
	if m.prefix.IsSingleIP() {
		v = m.prefix.Addr().String()
	}
	return m.field().String() + " " + negOp(m.neg) + v
}

// encode matches as nft does: a byte-aligned prefix loads only its bytes;
// any other prefix loads the whole address and masks it.
func (m addrMatch) encode(e *encoder) {
	f := m.field()
	f.dep(e)
	bits := m.prefix.Bits()
	if bits == 0 {
		return // /0 matches every packet of the family
	}
	off, size := addrOffset(f.fam, m.dst)
	addr := m.prefix.Addr().AsSlice()
	if bits%8 == 0 {
		n := uint32(bits / 8)
		e.add(payload(expr.PayloadBaseNetworkHeader, off, n, reg1))
		e.cmp(cmpOp(m.neg), addr[:n])
		return
	}
	e.add(payload(expr.PayloadBaseNetworkHeader, off, size, reg1))
	mask := net.CIDRMask(bits, int(size)*8)
	e.add(&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: size, Mask: mask, Xor: make([]byte, size)})
	e.cmp(cmpOp(m.neg), addr)
}

// etherMatch is `ether saddr aa:bb:cc:dd:ee:ff`.
type etherMatch struct {
	noRefs
	mac [6]byte
	neg bool
}

// EtherSAddr matches the source MAC address (input-side hooks only).
// It needs a 6-byte address.
func EtherSAddr(mac net.HardwareAddr) Match {
	var m etherMatch
	copy(m.mac[:], mac)
	return m
}

func (m etherMatch) negate() Match { m.neg = !m.neg; return m }

func (m etherMatch) String() string {
	return "ether saddr " + negOp(m.neg) + net.HardwareAddr(m.mac[:]).String()
}

func (m etherMatch) encode(e *encoder) {
	loadFields(e, []Field{FieldEtherSAddr})
	e.cmp(cmpOp(m.neg), m.mac[:])
}

// icmpMatch is `icmp type echo-request` or `icmpv6 code 4`.
type icmpMatch struct {
	noRefs
	fam   Family
	code  bool // match the code byte rather than the type byte
	value uint8
	neg   bool
}

// ICMPType matches the ICMP (IPv4) or ICMPv6 (IPv6) type.
func ICMPType(f Family, typ uint8) Match { return icmpMatch{fam: f, value: typ} }

// ICMPCode matches the ICMP or ICMPv6 code. Combine it with ICMPType in the
// same rule to match a type and code.
func ICMPCode(f Family, code uint8) Match { return icmpMatch{fam: f, code: true, value: code} }

func (m icmpMatch) negate() Match { m.neg = !m.neg; return m }

func (m icmpMatch) keyword() string {
	if m.fam == IPv6 {
		return "icmpv6"
	}
	return "icmp"
}

func (m icmpMatch) String() string {
	what, names := "type", icmpTypeNames
	switch {
	case m.fam == IPv6 && m.code:
		what, names = "code", icmpv6CodeNames
	case m.fam == IPv6:
		names = icmpv6TypeNames
	case m.code:
		what, names = "code", icmpCodeNames
	}
	v, ok := names[m.value]
	if !ok {
		v = strconv.Itoa(int(m.value))
	}
	return m.keyword() + " " + what + " " + negOp(m.neg) + v
}

func (m icmpMatch) encode(e *encoder) {
	e.needNFProto(m.fam)
	proto := ProtoICMP
	if m.fam == IPv6 {
		proto = ProtoICMPv6
	}
	e.needL4Proto(proto)
	off := uint32(0)
	if m.code {
		off = 1
	}
	e.add(payload(expr.PayloadBaseTransportHeader, off, 1, reg1))
	e.cmp(cmpOp(m.neg), []byte{m.value})
}

// Names nft prints for ICMP and ICMPv6 types and codes.
var (
	icmpTypeNames = map[uint8]string{
		0: "echo-reply", 3: "destination-unreachable", 4: "source-quench", 5: "redirect",
		8: "echo-request", 9: "router-advertisement", 10: "router-solicitation",
		11: "time-exceeded", 12: "parameter-problem", 13: "timestamp-request",
		14: "timestamp-reply", 15: "info-request", 16: "info-reply",
		17: "address-mask-request", 18: "address-mask-reply",
	}
	icmpCodeNames = map[uint8]string{
		0: "net-unreachable", 1: "host-unreachable", 2: "prot-unreachable", 3: "port-unreachable",
		4: "frag-needed", 9: "net-prohibited", 10: "host-prohibited", 13: "admin-prohibited",
	}
	icmpv6TypeNames = map[uint8]string{
		1: "destination-unreachable", 2: "packet-too-big", 3: "time-exceeded",
		4: "parameter-problem", 128: "echo-request", 129: "echo-reply",
		130: "mld-listener-query", 131: "mld-listener-report", 132: "mld-listener-done",
		133: "nd-router-solicit", 134: "nd-router-advert", 135: "nd-neighbor-solicit",
		136: "nd-neighbor-advert", 137: "nd-redirect", 138: "router-renumbering",
		141: "ind-neighbor-solicit", 142: "ind-neighbor-advert", 143: "mld2-listener-report",
	}
	icmpv6CodeNames = map[uint8]string{
		0: "no-route", 1: "admin-prohibited", 3: "addr-unreachable", 4: "port-unreachable",
		5: "policy-fail", 6: "reject-route",
	}
)

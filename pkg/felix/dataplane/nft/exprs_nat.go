package nft

import (
	"net/netip"

	"github.com/google/nftables/expr"
)

// masqStmt is `masquerade [to :PORTS] [fully-random]`.
type masqStmt struct {
	noRefs
	ports       PortRange
	hasPorts    bool
	fullyRandom bool
}

// Masquerade source-NATs to the address of the output interface
// (nat postrouting chains only).
func Masquerade() Expr { return masqStmt{} }

// MasqueradeFullyRandom is `masquerade fully-random`.
func MasqueradeFullyRandom() Expr { return masqStmt{fullyRandom: true} }

// MasqueradeToPorts is `masquerade to :FIRST-LAST`, with `fully-random` when fullyRandom: the
// source port is taken from the range (a port already inside it is kept unless fullyRandom).
// google/nftables cannot encode it (see splice); the netlink Kernel sends nft's own encoding,
// with the lean sender only (NetlinkConfig.PerMessageAcks refuses it).
func MasqueradeToPorts(r PortRange, fullyRandom bool) Expr {
	return masqStmt{ports: r, hasPorts: true, fullyRandom: fullyRandom}
}

func (s masqStmt) String() string {
	out := "masquerade"
	if s.hasPorts {
		out += " to :" + s.ports.String()
	}
	if s.fullyRandom {
		out += " fully-random"
	}
	return out
}

func (s masqStmt) encode(e *encoder) {
	if !s.hasPorts {
		e.add(&expr.Masq{FullyRandom: s.fullyRandom})
		return
	}
	e.add(
		&expr.Immediate{Register: reg1, Data: be16(s.ports.First)},
		&expr.Immediate{Register: reg2, Data: be16(s.ports.Last)},
	)
	e.addSplice(masqRangeElem(reg1, reg2, s.fullyRandom))
}

// natStmt is `snat ip to ADDR[:PORTS]` or `dnat ip to ADDR[:PORT]`.
type natStmt struct {
	noRefs
	dnat  bool
	addr  netip.Addr
	ports PortRange // zero: keep the port
}

// SNAT rewrites the source address to addr (nat postrouting/input chains).
func SNAT(addr netip.Addr) Expr { return natStmt{addr: addr} }

// SNATToPorts is `snat ip to ADDR:FIRST-LAST`: the source address becomes addr and the source
// port one of the range (a port already inside it is kept). It needs a preceding protocol
// match.
func SNATToPorts(addr netip.Addr, r PortRange) Expr { return natStmt{addr: addr, ports: r} }

// DNAT rewrites the destination to addr and, when port is not 0, port
// (nat prerouting/output chains). A port needs a preceding protocol match.
func DNAT(addr netip.Addr, port uint16) Expr {
	return natStmt{dnat: true, addr: addr, ports: Port(port)}
}

func (s natStmt) family() Family { return familyOfLen(s.addr.BitLen() / 8) }

func (s natStmt) String() string {
	verb := "snat "
	if s.dnat {
		verb = "dnat "
	}
	to := s.addr.String()
	if s.ports.First != 0 {
		if s.family() == IPv6 {
			to = "[" + to + "]"
		}
		to += ":" + s.ports.String()
	}
	return verb + s.family().ip() + " to " + to
}

// encode is nft's encoding: the address in register 1, the ports in registers 2 (and 3 for a
// range), NF_NAT_RANGE_PROTO_SPECIFIED when there are ports.
func (s natStmt) encode(e *encoder) {
	n := &expr.NAT{
		Type:       expr.NATTypeSourceNAT,
		Family:     uint32(s.family().nfproto()),
		RegAddrMin: reg1,
		RegAddrMax: reg1,
	}
	if s.dnat {
		n.Type = expr.NATTypeDestNAT
	}
	e.add(&expr.Immediate{Register: reg1, Data: s.addr.AsSlice()})
	if s.ports.First != 0 {
		e.add(&expr.Immediate{Register: reg2, Data: be16(s.ports.First)})
		n.RegProtoMin, n.RegProtoMax, n.Specified = reg2, reg2, true
		if s.ports.Last != s.ports.First {
			e.add(&expr.Immediate{Register: reg3, Data: be16(s.ports.Last)})
			n.RegProtoMax = reg3
		}
	}
	e.add(n)
}

// notrackStmt is `notrack` (raw-priority prerouting/output chains only).
type notrackStmt struct{ noRefs }

// Notrack exempts the packet from connection tracking.
func Notrack() Expr { return notrackStmt{} }

func (notrackStmt) String() string    { return "notrack" }
func (notrackStmt) encode(e *encoder) { e.add(&expr.Notrack{}) }

package nft

import (
	"net/netip"
	"strconv"

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

// MasqueradeToPorts is `masquerade to :FIRST-LAST`. It is NOT SUPPORTED yet:
// validation rejects it, because google/nftables v0.3.0 cannot send the
// flag that makes the kernel honour the range.
func MasqueradeToPorts(r PortRange) Expr { return masqStmt{ports: r, hasPorts: true} }

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
		&expr.Masq{ToPorts: true, RegProtoMin: reg1, RegProtoMax: reg2},
	)
}

// natStmt is `snat ip to ADDR` or `dnat ip to ADDR[:PORT]`.
type natStmt struct {
	noRefs
	dnat bool
	addr netip.Addr
	port uint16
}

// SNAT rewrites the source address to addr (nat postrouting/input chains).
func SNAT(addr netip.Addr) Expr { return natStmt{addr: addr} }

// DNAT rewrites the destination to addr and, when port is not 0, port
// (nat prerouting/output chains). A port needs a preceding protocol match.
func DNAT(addr netip.Addr, port uint16) Expr { return natStmt{dnat: true, addr: addr, port: port} }

func (s natStmt) family() Family { return familyOfLen(s.addr.BitLen() / 8) }

func (s natStmt) String() string {
	verb := "snat "
	if s.dnat {
		verb = "dnat "
	}
	to := s.addr.String()
	if s.port != 0 {
		if s.family() == IPv6 {
			to = "[" + to + "]"
		}
		to += ":" + strconv.Itoa(int(s.port))
	}
	return verb + s.family().ip() + " to " + to
}

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
	if s.port != 0 {
		e.add(&expr.Immediate{Register: reg2, Data: be16(s.port)})
		n.RegProtoMin, n.RegProtoMax, n.Specified = reg2, reg2, true
	}
	e.add(n)
}

// notrackStmt is `notrack` (raw-priority prerouting/output chains only).
type notrackStmt struct{ noRefs }

// Notrack exempts the packet from connection tracking.
func Notrack() Expr { return notrackStmt{} }

func (notrackStmt) String() string    { return "notrack" }
func (notrackStmt) encode(e *encoder) { e.add(&expr.Notrack{}) }

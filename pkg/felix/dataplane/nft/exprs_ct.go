package nft

import (
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// CTState is a bitmask of conntrack states.
type CTState uint32

// Conntrack states.
const (
	CTStateInvalid     CTState = 1
	CTStateEstablished CTState = 2
	CTStateRelated     CTState = 4
	CTStateNew         CTState = 8
	CTStateUntracked   CTState = 64
)

var ctStateNames = []struct {
	bit  CTState
	name string
}{
	{CTStateInvalid, "invalid"}, {CTStateEstablished, "established"},
	{CTStateRelated, "related"}, {CTStateNew, "new"}, {CTStateUntracked, "untracked"},
}

// ctMatch is `ct state established,related` or `ct status dnat`: true when
// any of the bits is set (negated: when none is).
type ctMatch struct {
	noRefs
	status bool
	bits   uint32
	neg    bool
}

// CTStateIn matches packets whose conntrack state is any of states, e.g.
// CTStateIn(CTStateEstablished|CTStateRelated).
func CTStateIn(states CTState) Match { return ctMatch{bits: uint32(states)} }

// CTStatusDNAT matches connections that were destination-NATed
// (`ct status dnat`); Not(CTStatusDNAT()) is `ct status ! dnat`.
func CTStatusDNAT() Match { return ctMatch{status: true, bits: ctStatusDNAT} }

const ctStatusDNAT = 1 << 5 // IPS_DST_NAT

func (m ctMatch) negate() Match { m.neg = !m.neg; return m }

func (m ctMatch) String() string {
	key, names := "ct state ", []string{}
	if m.status {
		key, names = "ct status ", []string{"dnat"}
	} else {
		for _, n := range ctStateNames {
			if CTState(m.bits)&n.bit != 0 {
				names = append(names, n.name)
			}
		}
	}
	if m.neg {
		key += "! "
	}
	return key + strings.Join(names, ",")
}

func (m ctMatch) encode(e *encoder) {
	key := expr.CtKeySTATE
	if m.status {
		key = expr.CtKeySTATUS
	}
	e.add(&expr.Ct{Key: key, Register: reg1}, bitwise(m.bits, 0))
	op := expr.CmpOpNeq
	if m.neg {
		op = expr.CmpOpEq
	}
	e.cmp(op, le32(0))
}

// FibFlags selects the inputs of a fib lookup.
type FibFlags uint8

// Fib lookup inputs.
const (
	FibSAddr FibFlags = 1 << iota
	FibDAddr
	FibMark
	FibIIF
	FibOIF
)

func (f FibFlags) String() string {
	var parts []string
	for _, p := range []struct {
		bit  FibFlags
		name string
	}{{FibSAddr, "saddr"}, {FibDAddr, "daddr"}, {FibMark, "mark"}, {FibIIF, "iif"}, {FibOIF, "oif"}} {
		if f&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, " . ")
}

// AddrType is a route type as the fib expression reports it.
type AddrType uint32

// Route types (RTN_*).
const (
	AddrTypeUnicast   AddrType = unix.RTN_UNICAST
	AddrTypeLocal     AddrType = unix.RTN_LOCAL
	AddrTypeBroadcast AddrType = unix.RTN_BROADCAST
	AddrTypeAnycast   AddrType = unix.RTN_ANYCAST
	AddrTypeMulticast AddrType = unix.RTN_MULTICAST
	AddrTypeBlackhole AddrType = unix.RTN_BLACKHOLE
	AddrTypeUnreach   AddrType = unix.RTN_UNREACHABLE
	AddrTypeProhibit  AddrType = unix.RTN_PROHIBIT
)

var addrTypeNames = map[AddrType]string{
	AddrTypeUnicast: "unicast", AddrTypeLocal: "local", AddrTypeBroadcast: "broadcast",
	AddrTypeAnycast: "anycast", AddrTypeMulticast: "multicast", AddrTypeBlackhole: "blackhole",
	AddrTypeUnreach: "unreachable", AddrTypeProhibit: "prohibit",
}

// fibMatch is `fib daddr type local` or `fib saddr . mark . iif oif 0`.
type fibMatch struct {
	noRefs
	flags    FibFlags
	addrType bool // result is the address type, else the output interface
	value    AddrType
	neg      bool
}

// FibAddrType matches the route type of a fib lookup:
// FibAddrType(FibDAddr, AddrTypeLocal) is `fib daddr type local`,
// FibAddrType(FibSAddr|FibOIF, AddrTypeLocal) is `fib saddr . oif type local`.
func FibAddrType(flags FibFlags, t AddrType) Match {
	return fibMatch{flags: flags, addrType: true, value: t}
}

// FibNoRoute matches when a fib lookup finds no output interface: the strict
// reverse-path check FibNoRoute(FibSAddr|FibMark|FibIIF) is
// `fib saddr . mark . iif oif 0`.
func FibNoRoute(flags FibFlags) Match { return fibMatch{flags: flags} }

func (m fibMatch) negate() Match { m.neg = !m.neg; return m }

func (m fibMatch) String() string {
	if m.addrType {
		name, ok := addrTypeNames[m.value]
		if !ok {
			name = formatMark(uint32(m.value))
		}
		return "fib " + m.flags.String() + " type " + negOp(m.neg) + name
	}
	return "fib " + m.flags.String() + " oif " + negOp(m.neg) + "0"
}

func (m fibMatch) encode(e *encoder) {
	e.add(&expr.Fib{
		Register:       reg1,
		ResultOIF:      !m.addrType,
		ResultADDRTYPE: m.addrType,
		FlagSADDR:      m.flags&FibSAddr != 0,
		FlagDADDR:      m.flags&FibDAddr != 0,
		FlagMARK:       m.flags&FibMark != 0,
		FlagIIF:        m.flags&FibIIF != 0,
		FlagOIF:        m.flags&FibOIF != 0,
	})
	e.cmp(cmpOp(m.neg), le32(uint32(m.value)))
}

package vm

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// Counter counts packets and bytes. Values read back are the kernel's
// counts; values sent set the initial counts (nft sends zeros).
type Counter struct {
	Packets, Bytes uint64
}

func (Counter) Name() string { return "counter" }

func (x Counter) String() string {
	return fmt.Sprintf("[ counter pkts %d bytes %d ]", x.Packets, x.Bytes)
}

func (x Counter) marshal(b *nla.Builder) {
	b.U64(unix.NFTA_COUNTER_BYTES, x.Bytes)
	b.U64(unix.NFTA_COUNTER_PACKETS, x.Packets)
}

func parseCounter(data []byte) (Expr, error) {
	var x Counter
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_COUNTER_BYTES:
			x.Bytes = it.U64()
		case unix.NFTA_COUNTER_PACKETS:
			x.Packets = it.U64()
		}
	}
	return x, it.Err()
}

// Log logs the packet. Only the attributes flagged in Has are sent.
type Log struct {
	Has    LogAttrs
	Prefix string
	Level  uint32
	Group  uint16
	Flags  uint32
	// Snaplen is how many bytes of the packet an NFLOG group message
	// copies (with Group only).
	Snaplen uint32
}

// LogAttrs says which optional attributes of a Log are present.
type LogAttrs uint8

// Log attributes.
const (
	LogPrefix LogAttrs = 1 << iota
	LogLevel
	LogGroup
	LogFlags
	LogSnaplen
)

func (Log) Name() string { return "log" }

func (x Log) String() string {
	s := "[ log"
	if x.Has&LogPrefix != 0 {
		s += " prefix " + x.Prefix
	}
	if x.Has&LogLevel != 0 {
		s += fmt.Sprintf(" level %d", x.Level)
	}
	if x.Has&LogGroup != 0 {
		s += fmt.Sprintf(" group %d", x.Group)
	}
	if x.Has&LogFlags != 0 {
		s += fmt.Sprintf(" flags %d", x.Flags)
	}
	if x.Has&LogSnaplen != 0 {
		s += fmt.Sprintf(" snaplen %d", x.Snaplen)
	}
	return s + " ]"
}

func (x Log) marshal(b *nla.Builder) {
	if x.Has&LogGroup != 0 {
		b.Bytes(unix.NFTA_LOG_GROUP, []byte{byte(x.Group >> 8), byte(x.Group)})
	}
	if x.Has&LogPrefix != 0 {
		b.String(unix.NFTA_LOG_PREFIX, x.Prefix)
	}
	if x.Has&LogLevel != 0 {
		b.U32(unix.NFTA_LOG_LEVEL, x.Level)
	}
	if x.Has&LogFlags != 0 {
		b.U32(unix.NFTA_LOG_FLAGS, x.Flags)
	}
	if x.Has&LogSnaplen != 0 {
		b.U32(unix.NFTA_LOG_SNAPLEN, x.Snaplen)
	}
}

func parseLog(data []byte) (Expr, error) {
	var x Log
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_LOG_GROUP:
			if d := it.Data(); len(d) >= 2 {
				x.Has, x.Group = x.Has|LogGroup, uint16(d[0])<<8|uint16(d[1])
			}
		case unix.NFTA_LOG_PREFIX:
			x.Has, x.Prefix = x.Has|LogPrefix, it.String()
		case unix.NFTA_LOG_LEVEL:
			x.Has, x.Level = x.Has|LogLevel, it.U32()
		case unix.NFTA_LOG_FLAGS:
			x.Has, x.Flags = x.Has|LogFlags, it.U32()
		case unix.NFTA_LOG_SNAPLEN:
			x.Has, x.Snaplen = x.Has|LogSnaplen, it.U32()
		case unix.NFTA_LOG_QTHRESHOLD:
			return Unknown{Kind: "log", Data: append([]byte(nil), data...)}, nil
		}
	}
	return x, it.Err()
}

// Reject rejects the packet: Type is NFT_REJECT_ICMP_UNREACH,
// NFT_REJECT_TCP_RST or NFT_REJECT_ICMPX_UNREACH.
type Reject struct {
	Type uint32
	Code uint8
}

func (Reject) Name() string { return "reject" }

func (x Reject) String() string { return fmt.Sprintf("[ reject type %d code %d ]", x.Type, x.Code) }

func (x Reject) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_REJECT_TYPE, x.Type)
	b.Bytes(unix.NFTA_REJECT_ICMP_CODE, []byte{x.Code})
}

func parseReject(data []byte) (Expr, error) {
	var x Reject
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_REJECT_TYPE:
			x.Type = it.U32()
		case unix.NFTA_REJECT_ICMP_CODE:
			if d := it.Data(); len(d) > 0 {
				x.Code = d[0]
			}
		}
	}
	return x, it.Err()
}

// NAT types.
const (
	NATSource      uint32 = unix.NFT_NAT_SNAT
	NATDestination uint32 = unix.NFT_NAT_DNAT
)

// NAT flags (NF_NAT_RANGE_*).
const (
	NATProtoSpecified uint32 = unix.NF_NAT_RANGE_PROTO_SPECIFIED
	NATRandomFully    uint32 = unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY
)

// NAT rewrites source or destination to the address (and port) in the
// registers. A zero register is not sent.
type NAT struct {
	Type                     uint32
	Family                   uint32 // NFPROTO_IPV4 or NFPROTO_IPV6
	RegAddrMin, RegAddrMax   Register
	RegProtoMin, RegProtoMax Register
	Flags                    uint32
}

func (NAT) Name() string { return "nat" }

func (x NAT) String() string {
	kind, fam := "snat", "ip"
	if x.Type == NATDestination {
		kind = "dnat"
	}
	if x.Family == unix.NFPROTO_IPV6 {
		fam = "ip6"
	}
	s := "[ nat " + kind + " " + fam + regs("addr", x.RegAddrMin, x.RegAddrMax) + regs("proto", x.RegProtoMin, x.RegProtoMax)
	if x.Flags != 0 {
		s += fmt.Sprintf(" flags 0x%x", x.Flags)
	}
	return s + " ]"
}

func regs(what string, lo, hi Register) string {
	s := ""
	if lo != 0 {
		s += fmt.Sprintf(" %s_min reg %d", what, lo)
	}
	if hi != 0 {
		s += fmt.Sprintf(" %s_max reg %d", what, hi)
	}
	return s
}

func putReg(b *nla.Builder, typ uint16, r Register) {
	if r != 0 {
		b.U32(typ, uint32(r))
	}
}

func (x NAT) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_NAT_TYPE, x.Type)
	b.U32(unix.NFTA_NAT_FAMILY, x.Family)
	putReg(b, unix.NFTA_NAT_REG_ADDR_MIN, x.RegAddrMin)
	putReg(b, unix.NFTA_NAT_REG_ADDR_MAX, x.RegAddrMax)
	putReg(b, unix.NFTA_NAT_REG_PROTO_MIN, x.RegProtoMin)
	putReg(b, unix.NFTA_NAT_REG_PROTO_MAX, x.RegProtoMax)
	if x.Flags != 0 {
		b.U32(unix.NFTA_NAT_FLAGS, x.Flags)
	}
}

func parseNAT(data []byte) (Expr, error) {
	var x NAT
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_NAT_TYPE:
			x.Type = it.U32()
		case unix.NFTA_NAT_FAMILY:
			x.Family = it.U32()
		case unix.NFTA_NAT_REG_ADDR_MIN:
			x.RegAddrMin = Register(it.U32())
		case unix.NFTA_NAT_REG_ADDR_MAX:
			x.RegAddrMax = Register(it.U32())
		case unix.NFTA_NAT_REG_PROTO_MIN:
			x.RegProtoMin = Register(it.U32())
		case unix.NFTA_NAT_REG_PROTO_MAX:
			x.RegProtoMax = Register(it.U32())
		case unix.NFTA_NAT_FLAGS:
			x.Flags = it.U32()
		}
	}
	return x, it.Err()
}

// Masq masquerades; with NATProtoSpecified in Flags the source port comes
// from the registers RegProtoMin..RegProtoMax.
type Masq struct {
	Flags                    uint32
	RegProtoMin, RegProtoMax Register
}

func (Masq) Name() string { return "masq" }

func (x Masq) String() string {
	s := "[ masq" + regs("proto", x.RegProtoMin, x.RegProtoMax)
	if x.Flags != 0 {
		s += fmt.Sprintf(" flags 0x%x", x.Flags)
	}
	return s + " ]"
}

// marshal sends the flags whenever they are set, port registers or not:
// without NF_NAT_RANGE_PROTO_SPECIFIED the kernel ignores the port range.
func (x Masq) marshal(b *nla.Builder) {
	if x.Flags != 0 {
		b.U32(unix.NFTA_MASQ_FLAGS, x.Flags)
	}
	putReg(b, unix.NFTA_MASQ_REG_PROTO_MIN, x.RegProtoMin)
	putReg(b, unix.NFTA_MASQ_REG_PROTO_MAX, x.RegProtoMax)
}

func parseMasq(data []byte) (Expr, error) {
	var x Masq
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_MASQ_FLAGS:
			x.Flags = it.U32()
		case unix.NFTA_MASQ_REG_PROTO_MIN:
			x.RegProtoMin = Register(it.U32())
		case unix.NFTA_MASQ_REG_PROTO_MAX:
			x.RegProtoMax = Register(it.U32())
		}
	}
	return x, it.Err()
}

// Notrack exempts the packet from connection tracking.
type Notrack struct{}

func (Notrack) Name() string            { return "notrack" }
func (Notrack) String() string          { return "[ notrack ]" }
func (Notrack) marshal(*nla.Builder)    {}
func parseNotrack([]byte) (Expr, error) { return Notrack{}, nil }

// CtKey selects a conntrack value.
type CtKey uint32

// Conntrack keys.
const (
	CtState  CtKey = unix.NFT_CT_STATE
	CtStatus CtKey = unix.NFT_CT_STATUS
)

// Ct loads a conntrack value (no direction) into DReg.
type Ct struct {
	Key  CtKey
	DReg Register
}

func (Ct) Name() string { return "ct" }

func (x Ct) String() string {
	name := map[CtKey]string{CtState: "state", CtStatus: "status"}[x.Key]
	if name == "" {
		name = fmt.Sprintf("key %d", x.Key)
	}
	return fmt.Sprintf("[ ct load %s => reg %d ]", name, x.DReg)
}

func (x Ct) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_CT_KEY, uint32(x.Key))
	b.U32(unix.NFTA_CT_DREG, uint32(x.DReg))
}

func parseCt(data []byte) (Expr, error) {
	var x Ct
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_CT_KEY:
			x.Key = CtKey(it.U32())
		case unix.NFTA_CT_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_CT_DIRECTION, unix.NFTA_CT_SREG:
			return Unknown{Kind: "ct", Data: append([]byte(nil), data...)}, nil
		}
	}
	return x, it.Err()
}

// Fib results and flags.
const (
	FibResultOIF      uint32 = unix.NFT_FIB_RESULT_OIF
	FibResultAddrType uint32 = unix.NFT_FIB_RESULT_ADDRTYPE
	FibSAddr          uint32 = unix.NFTA_FIB_F_SADDR
	FibDAddr          uint32 = unix.NFTA_FIB_F_DADDR
	FibMark           uint32 = unix.NFTA_FIB_F_MARK
	FibIIF            uint32 = unix.NFTA_FIB_F_IIF
	FibOIF            uint32 = unix.NFTA_FIB_F_OIF
)

// Fib looks the packet up in the routing table and loads Result into DReg.
type Fib struct {
	DReg   Register
	Result uint32
	Flags  uint32
}

func (Fib) Name() string { return "fib" }

func (x Fib) String() string {
	var in []string
	for _, f := range []struct {
		bit  uint32
		name string
	}{{FibSAddr, "saddr"}, {FibDAddr, "daddr"}, {FibMark, "mark"}, {FibIIF, "iif"}, {FibOIF, "oif"}} {
		if x.Flags&f.bit != 0 {
			in = append(in, f.name)
		}
	}
	res := map[uint32]string{FibResultOIF: "oif", FibResultAddrType: "type", unix.NFT_FIB_RESULT_OIFNAME: "oifname"}[x.Result]
	return fmt.Sprintf("[ fib %s %s => reg %d ]", strings.Join(in, " . "), res, x.DReg)
}

func (x Fib) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_FIB_DREG, uint32(x.DReg))
	b.U32(unix.NFTA_FIB_RESULT, x.Result)
	b.U32(unix.NFTA_FIB_FLAGS, x.Flags)
}

func parseFib(data []byte) (Expr, error) {
	var x Fib
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_FIB_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_FIB_RESULT:
			x.Result = it.U32()
		case unix.NFTA_FIB_FLAGS:
			x.Flags = it.U32()
		}
	}
	return x, it.Err()
}

func init() {
	register("counter", parseCounter)
	register("log", parseLog)
	register("reject", parseReject)
	register("nat", parseNAT)
	register("masq", parseMasq)
	register("notrack", parseNotrack)
	register("ct", parseCt)
	register("fib", parseFib)
}

package vm

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// Verdict codes (NF_DROP, NF_ACCEPT and the NFT_* pseudo-verdicts).
const (
	VerdictDrop     int32 = 0
	VerdictAccept   int32 = 1
	VerdictContinue int32 = unix.NFT_CONTINUE
	VerdictJump     int32 = unix.NFT_JUMP
	VerdictGoto     int32 = unix.NFT_GOTO
	VerdictReturn   int32 = unix.NFT_RETURN
)

// Verdict is a verdict as data: the value of an immediate loading the
// verdict register, or of a verdict map element.
type Verdict struct {
	Code  int32
	Chain string // jump and goto
}

func (v Verdict) String() string {
	switch v.Code {
	case VerdictDrop:
		return "drop"
	case VerdictAccept:
		return "accept"
	case VerdictContinue:
		return "continue"
	case VerdictReturn:
		return "return"
	case VerdictJump:
		return "jump -> " + v.Chain
	case VerdictGoto:
		return "goto -> " + v.Chain
	}
	return fmt.Sprintf("verdict %d", v.Code)
}

// MarshalVerdict appends an NFTA_DATA_VERDICT nest.
func MarshalVerdict(b *nla.Builder, v Verdict) {
	n := b.Begin(unix.NFTA_DATA_VERDICT)
	b.U32(unix.NFTA_VERDICT_CODE, uint32(v.Code))
	if v.Code == VerdictJump || v.Code == VerdictGoto {
		b.String(unix.NFTA_VERDICT_CHAIN, v.Chain)
	}
	b.End(n)
}

func parseVerdict(data []byte) (Verdict, error) {
	var v Verdict
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_VERDICT_CODE:
			v.Code = int32(it.U32())
		case unix.NFTA_VERDICT_CHAIN:
			v.Chain = it.String()
		}
	}
	return v, it.Err()
}

// ParseData reads an NFTA_DATA_* nest (a set element's key or data).
func ParseData(b []byte) (value []byte, v *Verdict, err error) { return parseData(b) }

// PayloadBase is where a payload offset counts from.
type PayloadBase uint32

// Payload bases.
const (
	BaseLL        PayloadBase = unix.NFT_PAYLOAD_LL_HEADER
	BaseNetwork   PayloadBase = unix.NFT_PAYLOAD_NETWORK_HEADER
	BaseTransport PayloadBase = unix.NFT_PAYLOAD_TRANSPORT_HEADER
)

var baseNames = map[PayloadBase]string{BaseLL: "link", BaseNetwork: "network", BaseTransport: "transport"}

// Payload loads Len bytes at Offset from Base into DReg.
type Payload struct {
	Base   PayloadBase
	Offset uint32
	Len    uint32
	DReg   Register
}

func (Payload) Name() string { return "payload" }

func (x Payload) String() string {
	return fmt.Sprintf("[ payload load %db @ %s header + %d => reg %d ]", x.Len, baseNames[x.Base], x.Offset, x.DReg)
}

func (x Payload) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_PAYLOAD_DREG, uint32(x.DReg))
	b.U32(unix.NFTA_PAYLOAD_BASE, uint32(x.Base))
	b.U32(unix.NFTA_PAYLOAD_OFFSET, x.Offset)
	b.U32(unix.NFTA_PAYLOAD_LEN, x.Len)
}

func parsePayload(data []byte) (Expr, error) {
	var x Payload
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_PAYLOAD_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_PAYLOAD_BASE:
			x.Base = PayloadBase(it.U32())
		case unix.NFTA_PAYLOAD_OFFSET:
			x.Offset = it.U32()
		case unix.NFTA_PAYLOAD_LEN:
			x.Len = it.U32()
		case unix.NFTA_PAYLOAD_SREG:
			return Unknown{Kind: "payload", Data: append([]byte(nil), data...)}, nil // a payload write
		}
	}
	return x, it.Err()
}

// MetaKey selects a meta value (NFT_META_*).
type MetaKey uint32

// Meta keys.
const (
	MetaProtocol MetaKey = unix.NFT_META_PROTOCOL
	MetaMark     MetaKey = unix.NFT_META_MARK
	MetaIIFName  MetaKey = unix.NFT_META_IIFNAME
	MetaOIFName  MetaKey = unix.NFT_META_OIFNAME
	MetaIIFType  MetaKey = unix.NFT_META_IIFTYPE
	MetaNFProto  MetaKey = unix.NFT_META_NFPROTO
	MetaL4Proto  MetaKey = unix.NFT_META_L4PROTO
)

var metaNames = map[MetaKey]string{
	MetaProtocol: "protocol", MetaMark: "mark", MetaIIFName: "iifname", MetaOIFName: "oifname",
	MetaIIFType: "iiftype", MetaNFProto: "nfproto", MetaL4Proto: "l4proto",
}

func metaName(k MetaKey) string {
	if n, ok := metaNames[k]; ok {
		return n
	}
	return fmt.Sprintf("key %d", k)
}

// Meta loads a meta value into Reg, or with Set stores Reg into it.
type Meta struct {
	Key MetaKey
	Reg Register
	Set bool
}

func (Meta) Name() string { return "meta" }

func (x Meta) String() string {
	if x.Set {
		return fmt.Sprintf("[ meta set %s with reg %d ]", metaName(x.Key), x.Reg)
	}
	return fmt.Sprintf("[ meta load %s => reg %d ]", metaName(x.Key), x.Reg)
}

func (x Meta) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_META_KEY, uint32(x.Key))
	if x.Set {
		b.U32(unix.NFTA_META_SREG, uint32(x.Reg))
	} else {
		b.U32(unix.NFTA_META_DREG, uint32(x.Reg))
	}
}

func parseMeta(data []byte) (Expr, error) {
	var x Meta
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_META_KEY:
			x.Key = MetaKey(it.U32())
		case unix.NFTA_META_DREG:
			x.Reg = Register(it.U32())
		case unix.NFTA_META_SREG:
			x.Reg, x.Set = Register(it.U32()), true
		}
	}
	return x, it.Err()
}

// CmpOp is a comparison operator.
type CmpOp uint32

// Comparison operators.
const (
	CmpEq  CmpOp = unix.NFT_CMP_EQ
	CmpNeq CmpOp = unix.NFT_CMP_NEQ
	CmpLt  CmpOp = unix.NFT_CMP_LT
	CmpLte CmpOp = unix.NFT_CMP_LTE
	CmpGt  CmpOp = unix.NFT_CMP_GT
	CmpGte CmpOp = unix.NFT_CMP_GTE
)

var cmpNames = []string{"eq", "neq", "lt", "lte", "gt", "gte"}

func (op CmpOp) String() string {
	if int(op) < len(cmpNames) {
		return cmpNames[op]
	}
	return fmt.Sprintf("op%d", uint32(op))
}

// Cmp compares SReg with Data.
type Cmp struct {
	Op   CmpOp
	SReg Register
	Data []byte
}

func (Cmp) Name() string { return "cmp" }

func (x Cmp) String() string {
	return fmt.Sprintf("[ cmp %s reg %d %s ]", x.Op, x.SReg, formatWords(x.Data))
}

func (x Cmp) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_CMP_SREG, uint32(x.SReg))
	b.U32(unix.NFTA_CMP_OP, uint32(x.Op))
	dataValue(b, unix.NFTA_CMP_DATA, x.Data)
}

func parseCmp(data []byte) (Expr, error) {
	var x Cmp
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_CMP_SREG:
			x.SReg = Register(it.U32())
		case unix.NFTA_CMP_OP:
			x.Op = CmpOp(it.U32())
		case unix.NFTA_CMP_DATA:
			v, _, err := parseData(it.Data())
			if err != nil {
				return nil, err
			}
			x.Data = v
		}
	}
	return x, it.Err()
}

// Bitwise is DReg = (SReg & Mask) ^ Xor over Len bytes.
type Bitwise struct {
	SReg, DReg Register
	Len        uint32
	Mask, Xor  []byte
}

func (Bitwise) Name() string { return "bitwise" }

func (x Bitwise) String() string {
	return fmt.Sprintf("[ bitwise reg %d = ( reg %d & %s ) ^ %s ]", x.DReg, x.SReg, formatWords(x.Mask), formatWords(x.Xor))
}

func (x Bitwise) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_BITWISE_SREG, uint32(x.SReg))
	b.U32(unix.NFTA_BITWISE_DREG, uint32(x.DReg))
	b.U32(unix.NFTA_BITWISE_LEN, x.Len)
	dataValue(b, unix.NFTA_BITWISE_MASK, x.Mask)
	dataValue(b, unix.NFTA_BITWISE_XOR, x.Xor)
}

func parseBitwise(data []byte) (Expr, error) {
	var x Bitwise
	it := nla.NewIter(data)
	for it.Next() {
		var err error
		switch it.Type() {
		case unix.NFTA_BITWISE_SREG:
			x.SReg = Register(it.U32())
		case unix.NFTA_BITWISE_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_BITWISE_LEN:
			x.Len = it.U32()
		case unix.NFTA_BITWISE_MASK:
			x.Mask, _, err = parseData(it.Data())
		case unix.NFTA_BITWISE_XOR:
			x.Xor, _, err = parseData(it.Data())
		case attrBitwiseOp:
			if it.U32() != 0 { // NFT_BITWISE_BOOL (mask and xor) is 0
				return Unknown{Kind: "bitwise", Data: append([]byte(nil), data...)}, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return x, it.Err()
}

// Range is true when SReg is (Op eq) or is not (Op neq) within [From, To].
type Range struct {
	Op       CmpOp
	SReg     Register
	From, To []byte
}

func (Range) Name() string { return "range" }

func (x Range) String() string {
	return fmt.Sprintf("[ range %s reg %d %s %s ]", x.Op, x.SReg, formatWords(x.From), formatWords(x.To))
}

func (x Range) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_RANGE_SREG, uint32(x.SReg))
	b.U32(unix.NFTA_RANGE_OP, uint32(x.Op))
	dataValue(b, unix.NFTA_RANGE_FROM_DATA, x.From)
	dataValue(b, unix.NFTA_RANGE_TO_DATA, x.To)
}

func parseRange(data []byte) (Expr, error) {
	var x Range
	it := nla.NewIter(data)
	for it.Next() {
		var err error
		switch it.Type() {
		case unix.NFTA_RANGE_SREG:
			x.SReg = Register(it.U32())
		case unix.NFTA_RANGE_OP:
			x.Op = CmpOp(it.U32())
		case unix.NFTA_RANGE_FROM_DATA:
			x.From, _, err = parseData(it.Data())
		case unix.NFTA_RANGE_TO_DATA:
			x.To, _, err = parseData(it.Data())
		}
		if err != nil {
			return nil, err
		}
	}
	return x, it.Err()
}

// Lookup looks SReg up in a set (named, or created in the same batch and
// referred to by SetID). With HasDReg it is a map lookup whose data goes to
// DReg (RegVerdict for a verdict map).
type Lookup struct {
	SReg    Register
	DReg    Register
	HasDReg bool
	Set     string
	SetID   uint32
	Invert  bool
}

func (Lookup) Name() string { return "lookup" }

func (x Lookup) String() string {
	s := fmt.Sprintf("[ lookup reg %d set %s", x.SReg, x.Set)
	if x.HasDReg {
		s += fmt.Sprintf(" dreg %d", x.DReg)
	}
	if x.Invert {
		s += " 0x1"
	}
	return s + " ]"
}

func (x Lookup) marshal(b *nla.Builder) {
	b.String(unix.NFTA_LOOKUP_SET, x.Set)
	if x.SetID != 0 {
		b.U32(unix.NFTA_LOOKUP_SET_ID, x.SetID)
	}
	b.U32(unix.NFTA_LOOKUP_SREG, uint32(x.SReg))
	if x.HasDReg {
		b.U32(unix.NFTA_LOOKUP_DREG, uint32(x.DReg))
	}
	if x.Invert {
		b.U32(unix.NFTA_LOOKUP_FLAGS, unix.NFT_LOOKUP_F_INV)
	}
}

func parseLookup(data []byte) (Expr, error) {
	var x Lookup
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_LOOKUP_SET:
			x.Set = it.String()
		case unix.NFTA_LOOKUP_SET_ID:
			x.SetID = it.U32()
		case unix.NFTA_LOOKUP_SREG:
			x.SReg = Register(it.U32())
		case unix.NFTA_LOOKUP_DREG:
			x.DReg, x.HasDReg = Register(it.U32()), true
		case unix.NFTA_LOOKUP_FLAGS:
			x.Invert = it.U32()&unix.NFT_LOOKUP_F_INV != 0
		}
	}
	return x, it.Err()
}

// Immediate loads Data into DReg, or Verdict into the verdict register.
type Immediate struct {
	DReg    Register
	Data    []byte
	Verdict Verdict // when DReg is RegVerdict
}

func (Immediate) Name() string { return "immediate" }

func (x Immediate) String() string {
	if x.DReg == RegVerdict {
		return fmt.Sprintf("[ immediate reg 0 %s ]", x.Verdict)
	}
	return fmt.Sprintf("[ immediate reg %d %s ]", x.DReg, formatWords(x.Data))
}

func (x Immediate) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_IMMEDIATE_DREG, uint32(x.DReg))
	n := b.Begin(unix.NFTA_IMMEDIATE_DATA)
	if x.DReg == RegVerdict {
		MarshalVerdict(b, x.Verdict)
	} else {
		b.Bytes(unix.NFTA_DATA_VALUE, x.Data)
	}
	b.End(n)
}

func parseImmediate(data []byte) (Expr, error) {
	var x Immediate
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_IMMEDIATE_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_IMMEDIATE_DATA:
			v, vd, err := parseData(it.Data())
			if err != nil {
				return nil, err
			}
			x.Data = v
			if vd != nil {
				x.Verdict = *vd
			}
		}
	}
	return x, it.Err()
}

// Byteorder converts Len bytes of SReg in Size-byte words into DReg.
type Byteorder struct {
	SReg, DReg Register
	Op         uint32 // unix.NFT_BYTEORDER_NTOH or _HTON
	Len, Size  uint32
}

func (Byteorder) Name() string { return "byteorder" }

func (x Byteorder) String() string {
	op := "ntoh"
	if x.Op == unix.NFT_BYTEORDER_HTON {
		op = "hton"
	}
	return fmt.Sprintf("[ byteorder reg %d = %s(reg %d, %d, %d) ]", x.DReg, op, x.SReg, x.Size, x.Len)
}

func (x Byteorder) marshal(b *nla.Builder) {
	b.U32(unix.NFTA_BYTEORDER_SREG, uint32(x.SReg))
	b.U32(unix.NFTA_BYTEORDER_DREG, uint32(x.DReg))
	b.U32(unix.NFTA_BYTEORDER_OP, x.Op)
	b.U32(unix.NFTA_BYTEORDER_LEN, x.Len)
	b.U32(unix.NFTA_BYTEORDER_SIZE, x.Size)
}

func parseByteorder(data []byte) (Expr, error) {
	var x Byteorder
	it := nla.NewIter(data)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_BYTEORDER_SREG:
			x.SReg = Register(it.U32())
		case unix.NFTA_BYTEORDER_DREG:
			x.DReg = Register(it.U32())
		case unix.NFTA_BYTEORDER_OP:
			x.Op = it.U32()
		case unix.NFTA_BYTEORDER_LEN:
			x.Len = it.U32()
		case unix.NFTA_BYTEORDER_SIZE:
			x.Size = it.U32()
		}
	}
	return x, it.Err()
}

func init() {
	register("payload", parsePayload)
	register("meta", parseMeta)
	register("cmp", parseCmp)
	register("bitwise", parseBitwise)
	register("range", parseRange)
	register("lookup", parseLookup)
	register("immediate", parseImmediate)
	register("byteorder", parseByteorder)
}

// Dump renders a rule's instructions one per line, as nft --debug=netlink.
func Dump(exprs []Expr) string {
	var b strings.Builder
	for _, x := range exprs {
		b.WriteString("  ")
		b.WriteString(x.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// attrBitwiseOp is NFTA_BITWISE_OP (Linux 5.6), which golang.org/x/sys lacks.
const attrBitwiseOp = 6

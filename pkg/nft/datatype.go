package nft

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DataType is the type of a set's or map's key: one of the Type* values or
// a concatenation of them (Concat). It is a small comparable value.
type DataType struct {
	n uint8
	f [maxConcat]baseType
}

// maxConcat is the most fields a concatenation may have.
const maxConcat = 5

type baseType uint8

const (
	btIPv4Addr baseType = iota + 1
	btIPv6Addr
	btEtherAddr
	btInetProto
	btInetService
	btMark
	btIfname
	btARPOp
	btICMPType
	btICMPv6Type
	btNFProto
	btVerdict
)

// baseInfo describes a basic datatype: nft's name and number for it, its
// size in a register and how nft prints its values.
type baseInfo struct {
	name    string
	magic   uint32 // nft's datatype number (NFTA_SET_KEY_TYPE)
	size    int
	host    bool // host byte order (nft records it in the set's userdata)
	ordered bool // ranges and intervals make sense
	format  func([]byte) string
}

var baseInfos = [...]baseInfo{
	btIPv4Addr:    {name: "ipv4_addr", magic: 7, size: 4, ordered: true, format: formatAddr},
	btIPv6Addr:    {name: "ipv6_addr", magic: 8, size: 16, ordered: true, format: formatAddr},
	btEtherAddr:   {name: "ether_addr", magic: 9, size: 6, ordered: true, format: formatEther},
	btInetProto:   {name: "inet_proto", magic: 12, size: 1, ordered: true, format: formatProto},
	btInetService: {name: "inet_service", magic: 13, size: 2, ordered: true, format: formatDecimal},
	btMark:        {name: "mark", magic: 19, size: 4, host: true, format: formatMark},
	btIfname:      {name: "ifname", magic: 41, size: ifnameSize, host: true, format: formatIfname},
	btARPOp:       {name: "arp_op", magic: 11, size: 2, format: formatARPOp},
	btICMPType:    {name: "icmp_type", magic: 14, size: 1, format: formatICMPType},
	btICMPv6Type:  {name: "icmpv6_type", magic: 29, size: 1, format: formatICMPv6Type},
	btNFProto:     {name: "nf_proto", magic: 2, size: 1, host: true, format: formatNFProto},
	btVerdict:     {name: "verdict", magic: 1, size: 0},
}

const ifnameSize = 16

func single(b baseType) DataType { return DataType{n: 1, f: [maxConcat]baseType{b}} }

// Key datatypes.
var (
	TypeIPv4Addr    = single(btIPv4Addr)
	TypeIPv6Addr    = single(btIPv6Addr)
	TypeEtherAddr   = single(btEtherAddr)
	TypeInetProto   = single(btInetProto)
	TypeInetService = single(btInetService)
	TypeMark        = single(btMark)
	TypeIfname      = single(btIfname)
)

// Concat returns the concatenation of types, e.g.
// Concat(TypeIPv4Addr, TypeInetProto, TypeInetService). Concatenations of
// concatenations are flattened; more than 5 fields give an invalid type.
func Concat(types ...DataType) DataType {
	var t DataType
	for _, x := range types {
		for _, b := range x.fields() {
			if int(t.n) == maxConcat || b == 0 {
				return DataType{}
			}
			t.f[t.n] = b
			t.n++
		}
	}
	return t
}

func (t DataType) fields() []baseType { return t.f[:t.n] }

// Valid reports whether t is a usable key type.
func (t DataType) Valid() bool {
	if t.n == 0 {
		return false
	}
	for _, b := range t.fields() {
		if b == 0 || int(b) >= len(baseInfos) || b == btVerdict {
			return false
		}
	}
	return true
}

// IsConcat reports whether t has more than one field.
func (t DataType) IsConcat() bool { return t.n > 1 }

// NumFields is the number of fields of the concatenation (1 if not one).
func (t DataType) NumFields() int { return int(t.n) }

// String is the nft spelling: "ipv4_addr . inet_proto . inet_service".
func (t DataType) String() string {
	if !t.Valid() {
		return "invalid"
	}
	names := make([]string, t.n)
	for i, b := range t.fields() {
		names[i] = baseInfos[b].name
	}
	return strings.Join(names, " . ")
}

// FieldLens lists the size of each field's value (unpadded).
func (t DataType) FieldLens() []int {
	out := make([]int, t.n)
	for i, b := range t.fields() {
		out[i] = baseInfos[b].size
	}
	return out
}

// fieldSize is the room field i takes in a key: its size, padded to 4
// bytes in a concatenation.
func (t DataType) fieldSize(i int) int {
	s := baseInfos[t.f[i]].size
	if t.n > 1 {
		return (s + 3) &^ 3
	}
	return s
}

// KeyLen is the length of a key of type t in bytes.
func (t DataType) KeyLen() int {
	n := 0
	for i := range t.fields() {
		n += t.fieldSize(i)
	}
	return n
}

// Magic is nft's number for the type (NFTA_SET_KEY_TYPE): 6 bits per field,
// the first field in the highest bits.
func (t DataType) Magic() uint32 {
	var m uint32
	for _, b := range t.fields() {
		m = m<<6 | baseInfos[b].magic
	}
	return m
}

// HostOrder reports whether nft keeps the type's values in host byte order
// (marks, interface names); it records that in a set's userdata.
func (t DataType) HostOrder() bool { return t.n == 1 && baseInfos[t.f[0]].host }

// Ordered reports whether ranges of the type make sense (interval sets).
func (t DataType) Ordered() bool {
	for _, b := range t.fields() {
		if !baseInfos[b].ordered {
			return false
		}
	}
	return t.n > 0
}

// DataTypeFromMagic decodes NFTA_SET_KEY_TYPE; keyLen (NFTA_SET_KEY_LEN)
// must agree with it.
func DataTypeFromMagic(m uint32, keyLen int) (DataType, error) {
	var rev []baseType
	for ; m != 0; m >>= 6 {
		b := baseByMagic(m & 0x3f)
		if b == 0 {
			return DataType{}, fmt.Errorf("unsupported datatype %d", m&0x3f)
		}
		rev = append(rev, b)
	}
	if len(rev) == 0 || len(rev) > maxConcat {
		return DataType{}, fmt.Errorf("datatype with %d fields", len(rev))
	}
	var t DataType
	for i := len(rev) - 1; i >= 0; i-- {
		t.f[t.n] = rev[i]
		t.n++
	}
	if t.KeyLen() != keyLen {
		return DataType{}, fmt.Errorf("key length %d for type %s", keyLen, t)
	}
	return t, nil
}

func baseByMagic(m uint32) baseType {
	for b := btIPv4Addr; int(b) < len(baseInfos); b++ {
		if baseInfos[b].magic == m && b != btVerdict {
			return b
		}
	}
	return 0
}

// format prints one key of type t (len(key) == t.KeyLen()).
func (t DataType) format(key []byte) string {
	if !t.Valid() || len(key) != t.KeyLen() {
		return fmt.Sprintf("0x%x", key)
	}
	parts := make([]string, t.n)
	off := 0
	for i, b := range t.fields() {
		size := baseInfos[b].size
		parts[i] = baseInfos[b].format(key[off : off+size])
		off += t.fieldSize(i)
	}
	return strings.Join(parts, " . ")
}

func formatAddr(b []byte) string {
	a, _ := netip.AddrFromSlice(b)
	return a.String()
}

func formatEther(b []byte) string { return net.HardwareAddr(b).String() }

func formatDecimal(b []byte) string {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return strconv.FormatUint(v, 10)
}

func formatMark(b []byte) string { return fmt.Sprintf("0x%08x", binary.NativeEndian.Uint32(b)) }

func formatIfname(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		return strconv.Quote(s[:i])
	}
	return strconv.Quote(s + "*") // no NUL: a prefix
}

func formatProto(b []byte) string { return protoName(b[0]) }

func formatNFProto(b []byte) string {
	switch b[0] {
	case IPv4.nfproto():
		return "ipv4"
	case IPv6.nfproto():
		return "ipv6"
	}
	return strconv.Itoa(int(b[0]))
}

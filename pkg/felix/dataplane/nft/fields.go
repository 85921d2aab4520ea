package nft

import (
	"github.com/google/nftables/expr"
)

// Field is a packet field that can be looked up in a set or verdict map,
// alone or as part of a concatenation: `ip daddr . meta l4proto . th dport`.
type Field struct {
	kind  fieldKind
	fam   Family
	proto uint8 // port fields: the protocol (0 = th, any protocol)
}

type fieldKind uint8

const (
	fieldIIFName fieldKind = iota + 1
	fieldOIFName
	fieldL4Proto
	fieldMark
	fieldSAddr
	fieldDAddr
	fieldSPort
	fieldDPort
	fieldEtherSAddr
)

// Fields for set lookups, concatenations and verdict maps.
var (
	FieldIIFName    = Field{kind: fieldIIFName}
	FieldOIFName    = Field{kind: fieldOIFName}
	FieldL4Proto    = Field{kind: fieldL4Proto}
	FieldMark       = Field{kind: fieldMark}
	FieldEtherSAddr = Field{kind: fieldEtherSAddr}
)

// FieldSAddr is `ip saddr` or `ip6 saddr`.
func FieldSAddr(f Family) Field { return Field{kind: fieldSAddr, fam: f} }

// FieldDAddr is `ip daddr` or `ip6 daddr`.
func FieldDAddr(f Family) Field { return Field{kind: fieldDAddr, fam: f} }

// FieldSPort is `tcp sport` (etc.) for proto, or `th sport` for proto 0.
func FieldSPort(proto uint8) Field { return Field{kind: fieldSPort, proto: proto} }

// FieldDPort is `tcp dport` (etc.) for proto, or `th dport` for proto 0.
func FieldDPort(proto uint8) Field { return Field{kind: fieldDPort, proto: proto} }

func (f Field) String() string {
	switch f.kind {
	case fieldIIFName:
		return "iifname"
	case fieldOIFName:
		return "oifname"
	case fieldL4Proto:
		return "meta l4proto"
	case fieldMark:
		return "meta mark"
	case fieldSAddr:
		return f.fam.ip() + " saddr"
	case fieldDAddr:
		return f.fam.ip() + " daddr"
	case fieldSPort:
		return l4Keyword(f.proto) + " sport"
	case fieldDPort:
		return l4Keyword(f.proto) + " dport"
	case fieldEtherSAddr:
		return "ether saddr"
	}
	return "?"
}

// typeName is the nft datatype of the field's value.
func (f Field) typeName() string {
	switch f.kind {
	case fieldIIFName, fieldOIFName:
		return TypeIfname
	case fieldL4Proto:
		return TypeInetProto
	case fieldMark:
		return TypeMark
	case fieldSAddr, fieldDAddr:
		return f.fam.addrType()
	case fieldSPort, fieldDPort:
		return TypeInetService
	case fieldEtherSAddr:
		return TypeEtherAddr
	}
	return ""
}

func (f Field) size() int { return baseTypes[f.typeName()].size }

// dep emits the protocol dependency the field needs, if any.
func (f Field) dep(e *encoder) {
	switch f.kind {
	case fieldSAddr, fieldDAddr:
		e.needNFProto(f.fam)
	case fieldSPort, fieldDPort:
		if f.proto != 0 {
			e.needL4Proto(f.proto)
		}
	case fieldEtherSAddr:
		e.needEther()
	}
}

// load emits the expression that loads the field into register reg.
func (f Field) load(e *encoder, reg uint32) {
	switch f.kind {
	case fieldIIFName:
		e.add(&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: reg})
	case fieldOIFName:
		e.add(&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: reg})
	case fieldL4Proto:
		e.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg})
	case fieldMark:
		e.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: reg})
	case fieldSAddr, fieldDAddr:
		off, n := addrOffset(f.fam, f.kind == fieldDAddr)
		e.add(payload(expr.PayloadBaseNetworkHeader, off, n, reg))
	case fieldSPort:
		e.add(payload(expr.PayloadBaseTransportHeader, 0, 2, reg))
	case fieldDPort:
		e.add(payload(expr.PayloadBaseTransportHeader, 2, 2, reg))
	case fieldEtherSAddr:
		e.add(payload(expr.PayloadBaseLLHeader, 6, 6, reg))
	}
}

// loadFields emits the dependencies of all fields first (they use register
// 1), then loads the fields into consecutive registers as nft lays out a
// concatenation: the first in register 1, the next ones in 32-bit registers,
// each field rounded up to 4 bytes.
func loadFields(e *encoder, fields []Field) {
	for _, f := range fields {
		f.dep(e)
	}
	off := 0
	for i, f := range fields {
		reg := uint32(reg1)
		if i > 0 {
			reg = uint32(reg32Base + off/4)
		}
		f.load(e, reg)
		off += (f.size() + 3) &^ 3
	}
}

func payload(base expr.PayloadBase, off, n uint32, reg uint32) *expr.Payload {
	return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: base, Offset: off, Len: n}
}

// addrOffset is where an address sits in the network header.
func addrOffset(f Family, dst bool) (off, n uint32) {
	switch {
	case f == IPv6 && dst:
		return 24, 16
	case f == IPv6:
		return 8, 16
	case dst:
		return 16, 4
	}
	return 12, 4
}

// l4Keyword is the nft payload keyword for a protocol's ports.
func l4Keyword(p uint8) string {
	switch p {
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case ProtoSCTP:
		return "sctp"
	case ProtoUDPLite:
		return "udplite"
	}
	return "th"
}

// fieldList is a comparable list of up to maxConcat fields.
type fieldList struct {
	n      uint8
	fields [maxConcat]Field
}

const maxConcat = 5

func newFieldList(fields []Field) (fieldList, bool) {
	var l fieldList
	if len(fields) == 0 || len(fields) > maxConcat {
		return l, false
	}
	l.n = uint8(len(fields))
	copy(l.fields[:], fields)
	return l, true
}

func (l fieldList) slice() []Field { return l.fields[:l.n] }

func (l fieldList) String() string {
	s := ""
	for i, f := range l.slice() {
		if i > 0 {
			s += " . "
		}
		s += f.String()
	}
	return s
}

// typeName is the set type a lookup of these fields needs.
func (l fieldList) typeName() string {
	names := make([]string, l.n)
	for i, f := range l.slice() {
		names[i] = f.typeName()
	}
	return Concat(names...)
}

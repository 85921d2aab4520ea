package nft

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// ifnameMatch is `iifname "cali1"`, or a prefix match `iifname "cali*"`.
type ifnameMatch struct {
	noRefs
	out  bool
	name string
	neg  bool
}

// IIFName matches the input interface by name. A trailing "*" makes it a
// prefix match: IIFName("cali*").
func IIFName(name string) Match { return ifnameMatch{name: name} }

// OIFName matches the output interface by name (trailing "*" = prefix).
func OIFName(name string) Match { return ifnameMatch{out: true, name: name} }

func (m ifnameMatch) negate() Match { m.neg = !m.neg; return m }

func (m ifnameMatch) field() Field {
	if m.out {
		return FieldOIFName
	}
	return FieldIIFName
}

func (m ifnameMatch) String() string {
	return m.field().String() + " " + negOp(m.neg) + strconv.Quote(m.name)
}

func (m ifnameMatch) encode(e *encoder) {
	m.field().load(e, reg1)
	if prefix, ok := strings.CutSuffix(m.name, "*"); ok {
		e.cmp(cmpOp(m.neg), []byte(prefix))
		return
	}
	e.cmp(cmpOp(m.neg), ifnameKey(m.name))
}

// negOp is the text of a negated comparison.
func negOp(neg bool) string {
	if neg {
		return "!= "
	}
	return ""
}

// lookupMatch is `FIELD [. FIELD...] [!=] @set`.
type lookupMatch struct {
	set    string
	fields fieldList
	neg    bool
	bad    bool // more than maxConcat or no fields: rejected by validation
}

// InSet matches when the fields, concatenated, are an element of the named
// set: InSet("cali40n-x", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0))
// is `ip daddr . meta l4proto . th dport @cali40n-x`.
func InSet(set string, fields ...Field) Match {
	l, ok := newFieldList(fields)
	return lookupMatch{set: set, fields: l, bad: !ok}
}

// IIFNameInSet is `iifname @set`.
func IIFNameInSet(set string) Match { return InSet(set, FieldIIFName) }

// OIFNameInSet is `oifname @set`.
func OIFNameInSet(set string) Match { return InSet(set, FieldOIFName) }

// SAddrInSet is `ip saddr @set` (ip6 for IPv6).
func SAddrInSet(f Family, set string) Match { return InSet(set, FieldSAddr(f)) }

// DAddrInSet is `ip daddr @set` (ip6 for IPv6).
func DAddrInSet(f Family, set string) Match { return InSet(set, FieldDAddr(f)) }

func (m lookupMatch) negate() Match { m.neg = !m.neg; return m }

func (m lookupMatch) String() string {
	return m.fields.String() + " " + negOp(m.neg) + "@" + quoteName(m.set)
}

func (m lookupMatch) encode(e *encoder) {
	loadFields(e, m.fields.slice())
	e.add(&expr.Lookup{SourceRegister: reg1, SetName: m.set, Invert: m.neg})
}

func (m lookupMatch) refs(visit func(ref)) {
	visit(ref{kind: refSet, name: m.set, typ: m.fields.typeName()})
}

// l4protoMatch is `meta l4proto tcp`.
type l4protoMatch struct {
	noRefs
	proto uint8
	neg   bool
}

// L4Proto matches the transport protocol (meta l4proto), for either family.
func L4Proto(p uint8) Match { return l4protoMatch{proto: p} }

func (m l4protoMatch) negate() Match { m.neg = !m.neg; return m }

func (m l4protoMatch) String() string { return "meta l4proto " + negOp(m.neg) + protoName(m.proto) }

func (m l4protoMatch) encode(e *encoder) {
	if !m.neg && e.l4proto >= 0 && e.l4proto != int(m.proto) {
		e.fail(fmt.Errorf("conflicting protocols %s and %s in one rule", protoName(uint8(e.l4proto)), protoName(m.proto)))
	}
	e.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1})
	e.cmp(cmpOp(m.neg), []byte{m.proto})
	if !m.neg {
		e.l4proto = int(m.proto)
	}
}

// nfprotoMatch is `meta nfproto ipv4`.
type nfprotoMatch struct {
	noRefs
	fam Family
	neg bool
}

// NFProto matches the packet's family; in an inet table it is how a rule
// picks IPv4 or IPv6.
func NFProto(f Family) Match { return nfprotoMatch{fam: f} }

func (m nfprotoMatch) negate() Match { m.neg = !m.neg; return m }

func (m nfprotoMatch) String() string { return "meta nfproto " + negOp(m.neg) + m.fam.String() }

func (m nfprotoMatch) encode(e *encoder) {
	if !m.neg && e.nfproto != 0 && e.nfproto != m.fam.nfproto() {
		e.fail(errConflictingFamilies)
	}
	e.add(&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1})
	e.cmp(cmpOp(m.neg), []byte{m.fam.nfproto()})
	if !m.neg {
		e.nfproto = m.fam.nfproto()
	}
}

// markMatch is `meta mark & MASK == VALUE`.
type markMatch struct {
	noRefs
	mask, value uint32
	neg         bool
}

// MarkMatch matches `meta mark & mask == value`; with mask 0xffffffff it is
// `meta mark value`. Test a bit set with MarkMatch(bit, bit), clear with
// MarkMatch(bit, 0).
func MarkMatch(mask, value uint32) Match { return markMatch{mask: mask, value: value & mask} }

func (m markMatch) negate() Match { m.neg = !m.neg; return m }

func (m markMatch) String() string {
	if m.mask == ^uint32(0) {
		return "meta mark " + negOp(m.neg) + formatMark(m.value)
	}
	op := "== "
	if m.neg {
		op = "!= "
	}
	return "meta mark & " + formatMark(m.mask) + " " + op + formatMark(m.value)
}

func (m markMatch) encode(e *encoder) {
	e.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1})
	if m.mask != ^uint32(0) {
		e.add(bitwise(m.mask, 0))
	}
	e.cmp(cmpOp(m.neg), le32(m.value))
}

// bitwise is reg1 = (reg1 & mask) ^ xor on a 32-bit host-endian value.
func bitwise(mask, xor uint32) *expr.Bitwise {
	return &expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: le32(mask), Xor: le32(xor)}
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// setMarkStmt is `meta mark set meta mark & AND | OR`, kept as nft prints
// it: AND includes the OR bits.
type setMarkStmt struct {
	noRefs
	and, or uint32
}

// SetMark sets the packet mark to (mark & and) | or. Calico's "set bits X"
// is SetMark(^X, X) or OrMark(X); "clear bits X" is AndMark(^X).
func SetMark(and, or uint32) Expr { return setMarkStmt{and: and | or, or: or} }

// OrMark is `meta mark set meta mark | bits`.
func OrMark(bits uint32) Expr { return SetMark(^uint32(0), bits) }

// AndMark is `meta mark set meta mark & mask`.
func AndMark(mask uint32) Expr { return SetMark(mask, 0) }

func (s setMarkStmt) String() string {
	switch {
	case s.and == s.or:
		return "meta mark set " + formatMark(s.or)
	case s.or == 0:
		return "meta mark set meta mark & " + formatMark(s.and)
	case s.and == ^uint32(0):
		return "meta mark set meta mark | " + formatMark(s.or)
	}
	return fmt.Sprintf("meta mark set meta mark & %s | %s", formatMark(s.and), formatMark(s.or))
}

func (s setMarkStmt) encode(e *encoder) {
	if s.and == s.or {
		e.add(&expr.Immediate{Register: reg1, Data: le32(s.or)})
	} else {
		e.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1}, bitwise(s.and&^s.or, s.or))
	}
	e.add(&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1})
}

// vmapStmt is `iifname vmap @map`.
type vmapStmt struct {
	field   Field
	mapName string
}

// Vmap looks field up in the named verdict map and applies the verdict it
// finds; packets whose key is not in the map continue with the next rule.
func Vmap(field Field, mapName string) Expr { return vmapStmt{field: field, mapName: mapName} }

// IIFNameVmap is `iifname vmap @map`.
func IIFNameVmap(mapName string) Expr { return Vmap(FieldIIFName, mapName) }

// OIFNameVmap is `oifname vmap @map`.
func OIFNameVmap(mapName string) Expr { return Vmap(FieldOIFName, mapName) }

func (s vmapStmt) String() string { return s.field.String() + " vmap @" + quoteName(s.mapName) }

func (s vmapStmt) encode(e *encoder) {
	loadFields(e, []Field{s.field})
	e.add(&expr.Lookup{SourceRegister: reg1, DestRegister: regVerdict, IsDestRegSet: true, SetName: s.mapName})
}

func (s vmapStmt) refs(visit func(ref)) {
	visit(ref{kind: refMap, name: s.mapName, typ: s.field.typeName()})
}

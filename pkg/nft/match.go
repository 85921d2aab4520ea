package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// The match types. Constructors (match_ctor.go) build them in canonical
// form, and the raiser (raise.go) produces the same forms from kernel
// instructions, so a rule read back from the kernel equals the rule written.

// negText is the text of a negated comparison.
func negText(neg bool) string {
	if neg {
		return "!= "
	}
	return ""
}

// cmpMatch is `FIELD [!=] VALUE`: the field's bytes equal val (for an
// interface name prefix, its first len(val) bytes).
type cmpMatch struct {
	noRefs
	f   Field
	neg bool
	val string
}

func (m cmpMatch) negate() Match  { m.neg = !m.neg; return m }
func (m cmpMatch) String() string { return exprString(m) }

func (m cmpMatch) text(p *printer) {
	p.word(m.f.String() + " " + negText(m.neg) + m.f.formatValue([]byte(m.val)))
}

func (m cmpMatch) lower(l *lowerer) {
	if err := m.check(); err != nil {
		l.fail(err)
		return
	}
	l.loadFields([]Field{m.f})
	l.cmp(cmpOp(m.neg), []byte(m.val))
	switch {
	case m.neg:
	case m.f == FieldL4Proto:
		l.setL4(m.val[0])
	case m.f == FieldNFProto:
		l.setVersion(versionOfNFProto(m.val[0]))
	}
}

func (m cmpMatch) check() error {
	size := m.f.info().size
	prefix := (m.f == FieldIIFName || m.f == FieldOIFName) && len(m.val) > 0 && len(m.val) < size
	if len(m.val) != size && !prefix {
		return fmt.Errorf("%s: value of %d bytes, want %d", m.f, len(m.val), size)
	}
	return nil
}

func versionOfNFProto(p byte) IPVersion {
	if p == IPv6.nfproto() {
		return IPv6
	}
	return IPv4
}

// prefixMatch is `ip saddr [!=] 10.0.0.0/8`: an address field against a
// CIDR shorter than the address.
type prefixMatch struct {
	noRefs
	f    Field
	neg  bool
	addr string // masked, full length
	bits uint8
}

func (m prefixMatch) negate() Match  { m.neg = !m.neg; return m }
func (m prefixMatch) String() string { return exprString(m) }

func (m prefixMatch) text(p *printer) {
	p.word(fmt.Sprintf("%s %s%s/%d", m.f, negText(m.neg), formatAddr([]byte(m.addr)), m.bits))
}

// lower encodes as nft does: a byte-aligned prefix loads only its bytes,
// any other loads the address and masks it.
func (m prefixMatch) lower(l *lowerer) {
	fi := m.f.info()
	if m.bits == 0 || int(m.bits) >= fi.size*8 || len(m.addr) != fi.size {
		l.fail(fmt.Errorf("%s: invalid prefix length %d", m.f, m.bits))
		return
	}
	l.dep(m.f)
	if m.bits%8 == 0 {
		n := uint32(m.bits / 8)
		l.emit(vm.Payload{Base: fi.base, Offset: fi.off, Len: n, DReg: vm.Reg1})
		l.cmp(cmpOp(m.neg), []byte(m.addr[:n]))
		return
	}
	m.f.load(l, vm.Reg1)
	mask := net.CIDRMask(int(m.bits), fi.size*8)
	l.emit(vm.Bitwise{SReg: vm.Reg1, DReg: vm.Reg1, Len: uint32(fi.size), Mask: mask, Xor: make([]byte, fi.size)})
	l.cmp(cmpOp(m.neg), []byte(m.addr))
}

// rangeMatch is `tcp dport [!=] 1000-2000`.
type rangeMatch struct {
	noRefs
	f      Field
	neg    bool
	lo, hi string
}

func (m rangeMatch) negate() Match  { m.neg = !m.neg; return m }
func (m rangeMatch) String() string { return exprString(m) }

func (m rangeMatch) text(p *printer) {
	p.word(m.f.String() + " " + negText(m.neg) + m.f.formatValue([]byte(m.lo)) + "-" + m.f.formatValue([]byte(m.hi)))
}

func (m rangeMatch) lower(l *lowerer) {
	if size := m.f.info().size; len(m.lo) != size || len(m.hi) != size || m.lo >= m.hi {
		l.fail(fmt.Errorf("%s: invalid range", m.f))
		return
	}
	l.loadFields([]Field{m.f})
	l.emit(vm.Range{Op: cmpOp(m.neg), SReg: vm.Reg1, From: []byte(m.lo), To: []byte(m.hi)})
}

// maskMatch is `meta mark & MASK [!=|==] VALUE`.
type maskMatch struct {
	noRefs
	f         Field
	neg       bool
	mask, val uint32
}

func (m maskMatch) negate() Match  { m.neg = !m.neg; return m }
func (m maskMatch) String() string { return exprString(m) }

func (m maskMatch) text(p *printer) {
	op := "=="
	if m.neg {
		op = "!="
	}
	p.word(fmt.Sprintf("%s & 0x%08x %s 0x%08x", m.f, m.mask, op, m.val))
}

func (m maskMatch) lower(l *lowerer) {
	l.loadFields([]Field{m.f})
	l.emit(bitwise32(m.mask, 0))
	l.cmp(cmpOp(m.neg), le32(m.val))
}

func bitwise32(mask, xor uint32) vm.Bitwise {
	return vm.Bitwise{SReg: vm.Reg1, DReg: vm.Reg1, Len: 4, Mask: le32(mask), Xor: le32(xor)}
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// flagsMatch is `ct state established,related` (any of the bits is set) or
// `ct state ! established,related` (none is).
type flagsMatch struct {
	noRefs
	f    Field
	neg  bool
	bits uint32
}

func (m flagsMatch) negate() Match  { m.neg = !m.neg; return m }
func (m flagsMatch) String() string { return exprString(m) }

func (m flagsMatch) text(p *printer) {
	names := ctStateNames
	if m.f == fieldCtStatus {
		names = ctStatusNames
	}
	var parts []string
	for _, n := range names {
		if m.bits&n.bit != 0 {
			parts = append(parts, n.name)
		}
	}
	neg := ""
	if m.neg {
		neg = "! "
	}
	p.word(m.f.String() + " " + neg + strings.Join(parts, ","))
}

func (m flagsMatch) lower(l *lowerer) {
	if m.bits == 0 {
		l.fail(errors.New("conntrack match without flags"))
		return
	}
	m.f.load(l, vm.Reg1)
	l.emit(bitwise32(m.bits, 0))
	op := vm.CmpNeq
	if m.neg {
		op = vm.CmpEq
	}
	l.cmp(op, le32(0))
}

// lookupMatch is `FIELD [. FIELD...] [!=] @set`.
type lookupMatch struct {
	fields fieldList
	neg    bool
	set    string
}

func (m lookupMatch) negate() Match  { m.neg = !m.neg; return m }
func (m lookupMatch) String() string { return exprString(m) }

func (m lookupMatch) text(p *printer) {
	p.word(m.fields.String() + " " + negText(m.neg) + "@" + quoteName(m.set))
}

func (m lookupMatch) lower(l *lowerer) {
	if m.fields.n == 0 {
		l.fail(fmt.Errorf("lookup in set %q needs 1 to %d fields", m.set, maxConcat))
		return
	}
	l.loadFields(m.fields.slice())
	l.emit(vm.Lookup{SReg: vm.Reg1, Set: m.set, Invert: m.neg})
}

func (m lookupMatch) refs(visit func(Ref)) {
	visit(Ref{Kind: RefSet, Name: m.set, KeyType: m.fields.dataType()})
}

// listMatch is `FIELD [!=] { ELEMENT, ... }`: a lookup in an anonymous set
// created with the rule. The elements are kept packed in one string
// (canonical: sorted, merged) so the match stays comparable and compact.
type listMatch struct {
	noRefs
	fields   fieldList
	neg      bool
	interval bool
	elems    string
}

func (m listMatch) negate() Match  { m.neg = !m.neg; return m }
func (m listMatch) String() string { return exprString(m) }

func (m listMatch) text(p *printer) {
	t := m.fields.dataType()
	elems := unpackElements(m.elems, t.KeyLen())
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = t.formatElement(e)
	}
	p.word(m.fields.String() + " " + negText(m.neg) + "{ " + strings.Join(parts, ", ") + " }")
}

func (m listMatch) lower(l *lowerer) {
	t := m.fields.dataType()
	elems := unpackElements(m.elems, t.KeyLen())
	if m.fields.n == 0 || !t.Valid() || len(elems) == 0 {
		l.fail(errors.New("invalid anonymous set"))
		return
	}
	l.loadFields(m.fields.slice())
	l.emit(l.addAnon(AnonSet{Type: t, Interval: m.interval, Elements: elems}, m.neg))
}

// packElements joins elements into one string; unpackElements splits it.
func packElements(elems []Element) string {
	var b strings.Builder
	for _, e := range elems {
		b.WriteString(e.raw)
	}
	return b.String()
}

func unpackElements(s string, keyLen int) []Element {
	var out []Element
	for len(s) > 0 && keyLen > 0 {
		n := 1 + keyLen
		if s[0] == tagRange {
			n += keyLen
		}
		if n > len(s) {
			return nil
		}
		out = append(out, Element{raw: s[:n]})
		s = s[n:]
	}
	return out
}

// fibMatch is `fib daddr type local` or `fib saddr . mark . iif oif 0`.
type fibMatch struct {
	noRefs
	flags    FibFlags
	addrType bool // the result is the route type, else the output interface
	neg      bool
	value    uint32
}

func (m fibMatch) negate() Match  { m.neg = !m.neg; return m }
func (m fibMatch) String() string { return exprString(m) }

func (m fibMatch) text(p *printer) {
	if m.addrType {
		p.word("fib " + m.flags.String() + " type " + negText(m.neg) + AddrType(m.value).String())
		return
	}
	p.word(fmt.Sprintf("fib %s oif %s%d", m.flags, negText(m.neg), m.value))
}

func (m fibMatch) lower(l *lowerer) {
	if m.flags&(FibSAddr|FibDAddr) == 0 || m.flags&^fibAll != 0 {
		l.fail(fmt.Errorf("fib lookup needs saddr or daddr, got %v", m.flags))
		return
	}
	res := vm.FibResultOIF
	if m.addrType {
		res = vm.FibResultAddrType
	}
	l.emit(vm.Fib{DReg: vm.Reg1, Result: res, Flags: uint32(m.flags)})
	l.cmp(cmpOp(m.neg), le32(m.value))
}

// badMatch stands for a constructor given invalid arguments: it prints its
// reason and fails to lower, so a table holding it fails validation.
type badMatch struct {
	noRefs
	reason string
}

func (m badMatch) negate() Match    { return m }
func (m badMatch) String() string   { return exprString(m) }
func (m badMatch) text(p *printer)  { p.word("# invalid: " + m.reason) }
func (m badMatch) lower(l *lowerer) { l.fail(errors.New(m.reason)) }

func bad(format string, args ...any) Match { return badMatch{reason: fmt.Sprintf(format, args...)} }

package nft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// load is one field load: the field and how many of its bytes were loaded
// (fewer than its size for a byte-aligned address prefix).
type load struct {
	f   Field
	len int
}

// loads raises a run of field loads (one, or a concatenation in
// consecutive registers) and the instruction that consumes them.
func (r *raiser) loads() error {
	ls, err := r.loadRun()
	if err != nil {
		return err
	}
	switch c := r.peek(0).(type) {
	case vm.Cmp:
		return r.cmp(ls, c)
	case vm.Range:
		return r.rng(ls, c)
	case vm.Bitwise:
		return r.masked(ls, c)
	case vm.Lookup:
		return r.lookup(ls, c)
	}
	return errUnknownSequence
}

// loadRun reads loads into register 1 and the 32-bit registers after it.
func (r *raiser) loadRun() ([]load, error) {
	var out []load
	off := 0
	for {
		reg, ok := loadReg(r.peek(0))
		if !ok || (len(out) == 0 && reg != vm.Reg1) || (len(out) > 0 && reg != vm.Reg32(off)) {
			break
		}
		l, err := r.field(r.peek(0))
		if err != nil {
			return nil, err
		}
		r.consume(l.f)
		out = append(out, l)
		off += (l.len + 3) &^ 3
		r.i++
	}
	if len(out) == 0 {
		return nil, errUnknownSequence
	}
	return out, nil
}

// loadReg returns the destination of a load instruction.
func loadReg(x vm.Expr) (vm.Register, bool) {
	switch x := x.(type) {
	case vm.Payload:
		return x.DReg, true
	case vm.Meta:
		return x.Reg, !x.Set
	case vm.Ct:
		return x.DReg, true
	}
	return 0, false
}

var metaByKey = map[vm.MetaKey]Field{
	vm.MetaIIFName: FieldIIFName, vm.MetaOIFName: FieldOIFName, vm.MetaL4Proto: FieldL4Proto,
	vm.MetaNFProto: FieldNFProto, vm.MetaMark: FieldMark, vm.MetaIIFType: fieldIIFType,
	vm.MetaProtocol: fieldProtocol,
}

// field identifies what an instruction loads, given the protocol facts
// established so far.
func (r *raiser) field(x vm.Expr) (load, error) {
	switch x := x.(type) {
	case vm.Meta:
		if f, ok := metaByKey[x.Key]; ok {
			return load{f: f, len: f.info().size}, nil
		}
	case vm.Ct:
		switch x.Key {
		case vm.CtState:
			return load{f: fieldCtState, len: 4}, nil
		case vm.CtStatus:
			return load{f: fieldCtStatus, len: 4}, nil
		}
	case vm.Payload:
		return r.payloadField(x)
	}
	return load{}, fmt.Errorf("load %s not modelled", x)
}

func (r *raiser) payloadField(x vm.Payload) (load, error) {
	var candidates []Field
	switch {
	case x.Base == vm.BaseLL:
		candidates = []Field{FieldEtherSAddr, FieldEtherDAddr}
	case x.Base == vm.BaseNetwork && r.fam == FamilyARP:
		candidates = []Field{FieldARPOp, FieldARPSAddrIP, FieldARPDAddrIP, FieldARPSAddrEther, FieldARPDAddrEther}
	case x.Base == vm.BaseNetwork:
		v := r.version()
		candidates = []Field{FieldSAddr(v), FieldDAddr(v)}
	case x.Base == vm.BaseTransport:
		candidates = r.transportFields()
	}
	for _, f := range candidates {
		fi := f.info()
		if !f.valid() || fi.base != x.Base || fi.off != x.Offset {
			continue
		}
		partialOK := fi.typ == btIPv4Addr || fi.typ == btIPv6Addr
		if int(x.Len) == fi.size || (partialOK && x.Len > 0 && int(x.Len) < fi.size && (f.kind == fkSAddr || f.kind == fkDAddr)) {
			return load{f: f, len: int(x.Len)}, nil
		}
	}
	return load{}, fmt.Errorf("payload %s not modelled here", x)
}

// version is the IP version network header loads refer to.
func (r *raiser) version() IPVersion {
	switch r.fam {
	case FamilyIP:
		return IPv4
	case FamilyIP6:
		return IPv6
	}
	return r.ver
}

// transportFields are the transport header fields the established
// protocol allows: ports (th when no port protocol is known), ICMP.
func (r *raiser) transportFields() []Field {
	switch {
	case r.l4 == int(ProtoICMP):
		return []Field{FieldICMPType(IPv4), FieldICMPCode(IPv4)}
	case r.l4 == int(ProtoICMPv6):
		return []Field{FieldICMPType(IPv6), FieldICMPCode(IPv6)}
	case r.l4 >= 0 && hasPorts(uint8(r.l4)):
		return []Field{FieldSPort(uint8(r.l4)), FieldDPort(uint8(r.l4))}
	}
	return []Field{FieldSPort(0), FieldDPort(0)}
}

// consume removes the pending dependency matches that field f implies.
func (r *raiser) consume(f Field) {
	v, l4, ether := f.needs()
	if v != 0 && (r.fam == FamilyInet || r.fam == FamilyBridge || r.fam == FamilyNetdev) {
		r.kill(depVersion)
	}
	if l4 >= 0 {
		r.kill(depL4)
	}
	if ether && r.fam != FamilyBridge {
		r.kill(depEther)
	}
}

func (r *raiser) kill(k int) {
	if i := r.pending[k]; i >= 0 {
		r.out[i] = nil
		r.pending[k] = -1
	}
}

// noteDep records an explicit protocol match as a pending dependency.
func (r *raiser) noteDep(m cmpMatch) {
	k := -1
	switch m.f {
	case FieldNFProto:
		k, r.ver = depVersion, versionOfNFProto(m.val[0])
	case fieldProtocol:
		k, r.ver = depVersion, IPv4
		if binary.BigEndian.Uint16([]byte(m.val)) == IPv6.ethertype() {
			r.ver = IPv6
		}
	case FieldL4Proto:
		k, r.l4 = depL4, int(m.val[0])
	case fieldIIFType:
		k, r.ether = depEther, true
	}
	if k >= 0 {
		r.pending[k] = len(r.out) - 1
	}
}

func single1(ls []load) (load, error) {
	if len(ls) != 1 {
		return load{}, errors.New("concatenation compared with a value")
	}
	return ls[0], nil
}

func negOfOp(op vm.CmpOp) (bool, error) {
	switch op {
	case vm.CmpEq:
		return false, nil
	case vm.CmpNeq:
		return true, nil
	}
	return false, fmt.Errorf("comparison %s not modelled", op)
}

// cmp raises `FIELD [!=] VALUE` or a byte-aligned address prefix.
func (r *raiser) cmp(ls []load, c vm.Cmp) error {
	l, err := single1(ls)
	if err != nil {
		return err
	}
	neg, err := negOfOp(c.Op)
	size := l.f.info().size
	ifname := l.f == FieldIIFName || l.f == FieldOIFName
	switch {
	case err != nil:
		return err
	case c.SReg != vm.Reg1:
		return errUnknownSequence
	case l.len < size && len(c.Data) == l.len:
		addr := append(bytes.Clone(c.Data), make([]byte, size-l.len)...)
		r.add(prefixMatch{f: l.f, neg: neg, addr: string(addr), bits: uint8(8 * l.len)})
	case len(c.Data) == size || (ifname && len(c.Data) > 0 && len(c.Data) < size):
		m := cmpMatch{f: l.f, neg: neg, val: string(c.Data)}
		r.add(m)
		if !neg {
			r.noteDep(m)
		}
	default:
		return fmt.Errorf("%s compared with %d bytes", l.f, len(c.Data))
	}
	r.i++
	return nil
}

func (r *raiser) rng(ls []load, c vm.Range) error {
	l, err := single1(ls)
	if err != nil {
		return err
	}
	neg, err := negOfOp(c.Op)
	size := l.f.info().size
	if err != nil || l.len != size || len(c.From) != size || len(c.To) != size || c.SReg != vm.Reg1 {
		return errUnknownSequence
	}
	r.add(rangeMatch{f: l.f, neg: neg, lo: string(c.From), hi: string(c.To)})
	r.i++
	return nil
}

// masked raises a bitwise and the comparison after it: conntrack flags, a
// mark under a mask, an address prefix that is not byte-aligned.
func (r *raiser) masked(ls []load, bw vm.Bitwise) error {
	l, err := single1(ls)
	if err != nil {
		return err
	}
	c, ok := r.peek(1).(vm.Cmp)
	if !ok || bw.SReg != vm.Reg1 || bw.DReg != vm.Reg1 || c.SReg != vm.Reg1 || len(bw.Mask) != l.len ||
		!allZero(bw.Xor) || len(c.Data) != l.len {
		return errUnknownSequence
	}
	neg, err := negOfOp(c.Op)
	if err != nil {
		return err
	}
	var m Match
	switch t := l.f.info().typ; {
	case l.f == fieldCtState || l.f == fieldCtStatus:
		if !allZero(c.Data) {
			return errUnknownSequence
		}
		m = flagsMatch{f: l.f, neg: !neg, bits: leU32(bw.Mask)}
	case l.f == FieldMark:
		m = maskMatch{f: l.f, neg: neg, mask: leU32(bw.Mask), val: leU32(c.Data)}
	case t == btIPv4Addr || t == btIPv6Addr:
		n, ok := maskBits(bw.Mask)
		if !ok {
			return errors.New("address mask is not a prefix")
		}
		m = prefixMatch{f: l.f, neg: neg, addr: string(c.Data), bits: uint8(n)}
	default:
		return errUnknownSequence
	}
	r.add(m)
	r.i += 2
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// maskBits returns the prefix length of a CIDR mask.
func maskBits(mask []byte) (int, bool) {
	n := 0
	for i, c := range mask {
		if c != 0xff {
			n += bits.LeadingZeros8(^c)
			if c<<bits.LeadingZeros8(^c) != 0 || !allZero(mask[i+1:]) {
				return 0, false
			}
			return n, true
		}
		n += 8
	}
	return n, true
}

// lookup raises a set lookup, an anonymous list or a verdict map.
func (r *raiser) lookup(ls []load, lk vm.Lookup) error {
	fields := make([]Field, len(ls))
	for i, l := range ls {
		if l.len != l.f.info().size {
			return errors.New("partial load looked up in a set")
		}
		fields[i] = l.f
	}
	fl, _ := newFieldList(fields)
	if lk.SReg != vm.Reg1 {
		return errUnknownSequence
	}
	r.i++
	switch {
	case lk.HasDReg && lk.DReg == vm.RegVerdict && !lk.Invert:
		r.add(vmapStmt{fields: fl, m: lk.Set})
	case lk.HasDReg:
		return errors.New("data map lookups not modelled")
	case strings.HasPrefix(lk.Set, "__"):
		return r.anonLookup(fl, lk)
	default:
		r.add(lookupMatch{fields: fl, neg: lk.Invert, set: lk.Set})
	}
	return nil
}

func (r *raiser) anonLookup(fl fieldList, lk vm.Lookup) error {
	if r.anon == nil {
		return fmt.Errorf("anonymous set %s not available", lk.Set)
	}
	s, ok := r.anon(lk.Set)
	if !ok {
		return fmt.Errorf("anonymous set %s not found", lk.Set)
	}
	t := fl.dataType()
	if s.Type.KeyLen() != t.KeyLen() {
		return fmt.Errorf("anonymous set %s of type %s looked up with %s", lk.Set, s.Type, t)
	}
	elems, err := normalizeElements(t, s.Interval, append([]Element(nil), s.Elements...))
	if err != nil {
		return fmt.Errorf("anonymous set %s: %w", lk.Set, err)
	}
	r.add(listMatch{fields: fl, neg: lk.Invert, interval: s.Interval, elems: packElements(elems)})
	return nil
}

package nft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

var (
	errUndecoded          = errors.New("rule holds an expression that was not decoded")
	errConflictingVersion = errors.New("conflicting IP versions in one rule")
)

// AnonSet is an anonymous constant set that a rule creates with itself: the
// `{ ... }` of `tcp dport { 22, 80 }`.
type AnonSet struct {
	Type     DataType
	Interval bool
	Elements []Element
}

// Lowered is a rule as kernel instructions. A vm.Lookup whose Set is empty
// refers to Anon[SetID-1]; the backend creates those sets in the same batch
// and fills in their names and batch-wide IDs.
type Lowered struct {
	Exprs []vm.Expr
	Anon  []AnonSet
}

// LowerRule turns a rule into the kernel instructions for a table of family
// f, adding the protocol dependencies nft adds (meta nfproto before an
// address match in an inet table, meta l4proto before a tcp port match).
// It fails on rules the kernel could not express or that mix IP versions.
func LowerRule(f Family, r Rule) (Lowered, error) {
	l := lowerer{fam: f, l4: -1, out: make([]vm.Expr, 0, 3*len(r.Exprs))}
	for i, x := range r.Exprs {
		if x == nil {
			return Lowered{}, fmt.Errorf("expression %d is nil", i)
		}
		x.lower(&l)
		if l.err != nil {
			return Lowered{}, fmt.Errorf("expression %d (%s): %w", i, x, l.err)
		}
	}
	if len(l.out) == 0 {
		return Lowered{}, errors.New("rule without expressions")
	}
	return Lowered{Exprs: l.out, Anon: l.anon}, nil
}

// lowerer accumulates one rule's instructions and the protocol facts the
// rule has established so far, so that each dependency is emitted once.
type lowerer struct {
	fam   Family
	out   []vm.Expr
	anon  []AnonSet
	ver   IPVersion // established IP version (0: none)
	l4    int       // established transport protocol (-1: none)
	ether bool      // established Ethernet link layer
	err   error
}

func (l *lowerer) emit(x ...vm.Expr) { l.out = append(l.out, x...) }

func (l *lowerer) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

func (l *lowerer) cmp(op vm.CmpOp, data []byte) {
	l.emit(vm.Cmp{Op: op, SReg: vm.Reg1, Data: data})
}

func cmpOp(neg bool) vm.CmpOp {
	if neg {
		return vm.CmpNeq
	}
	return vm.CmpEq
}

// dep emits what field f depends on, and checks the field fits the family.
func (l *lowerer) dep(f Field) {
	fi := f.info()
	if !f.valid() {
		l.fail(fmt.Errorf("invalid field %v", f))
		return
	}
	if (l.fam == FamilyARP && !fi.arpOK) || (l.fam != FamilyARP && !fi.ipOK) {
		l.fail(fmt.Errorf("%s cannot be used in a table of family %s", fi.text, l.fam))
		return
	}
	v, l4, ether := f.needs()
	if v != 0 {
		l.needVersion(v)
	}
	if l4 >= 0 {
		l.needL4(uint8(l4))
	}
	if ether {
		l.needEther()
	}
}

// needVersion makes sure the rule sees only IP packets of version v.
func (l *lowerer) needVersion(v IPVersion) {
	switch {
	case !l.fam.carriesIP(v):
		l.fail(fmt.Errorf("an %s match cannot be used in a table of family %s", v, l.fam))
	case l.ver == v:
	case l.ver != 0:
		l.fail(errConflictingVersion)
	case l.fam == FamilyInet:
		l.emit(vm.Meta{Key: vm.MetaNFProto, Reg: vm.Reg1})
		l.cmp(vm.CmpEq, []byte{v.nfproto()})
		l.ver = v
	case l.fam == FamilyBridge || l.fam == FamilyNetdev:
		l.emit(vm.Meta{Key: vm.MetaProtocol, Reg: vm.Reg1})
		l.cmp(vm.CmpEq, binary.BigEndian.AppendUint16(nil, v.ethertype()))
		l.ver = v
	default:
		l.ver = v // ip and ip6 tables see only their own version
	}
}

// setVersion records an explicit `meta nfproto` match.
func (l *lowerer) setVersion(v IPVersion) {
	if l.ver != 0 && l.ver != v {
		l.fail(errConflictingVersion)
	}
	l.ver = v
}

// needL4 makes sure the rule sees only packets of transport protocol p.
func (l *lowerer) needL4(p uint8) {
	if l.l4 == int(p) {
		return
	}
	l.setL4(p)
	l.emit(vm.Meta{Key: vm.MetaL4Proto, Reg: vm.Reg1})
	l.cmp(vm.CmpEq, []byte{p})
}

// setL4 records that the rule now sees only protocol p.
func (l *lowerer) setL4(p uint8) {
	if l.l4 >= 0 && l.l4 != int(p) {
		l.fail(fmt.Errorf("conflicting protocols %s and %s in one rule", protoName(uint8(l.l4)), protoName(p)))
	}
	l.l4 = int(p)
}

// needEther makes sure the link layer is Ethernet (bridge tables see only
// Ethernet frames).
func (l *lowerer) needEther() {
	if l.ether || l.fam == FamilyBridge {
		return
	}
	l.emit(vm.Meta{Key: vm.MetaIIFType, Reg: vm.Reg1})
	l.cmp(vm.CmpEq, binary.NativeEndian.AppendUint16(nil, unix.ARPHRD_ETHER))
	l.ether = true
}

// loadFields emits the dependencies of all fields (they use register 1),
// then loads the fields as nft lays out a concatenation: the first in
// register 1, the others in the 32-bit registers that follow, each field
// padded to 4 bytes.
func (l *lowerer) loadFields(fields []Field) {
	for _, f := range fields {
		l.dep(f)
	}
	off := 0
	for i, f := range fields {
		reg := vm.Reg1
		if i > 0 {
			reg = vm.Reg32(off)
		}
		f.load(l, reg)
		off += (f.info().size + 3) &^ 3
	}
}

// addAnon registers an anonymous set and returns the lookup referring to it.
func (l *lowerer) addAnon(s AnonSet, neg bool) vm.Lookup {
	l.anon = append(l.anon, s)
	return vm.Lookup{SReg: vm.Reg1, SetID: uint32(len(l.anon)), Invert: neg}
}

package nft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Expr is one primitive of a rule: a match or a statement. Every primitive
// renders itself as nft text (String, exactly as `nft list` prints it) and as
// google/nftables expressions. Primitives are comparable values: two equal
// primitives render identically, which is how the Applier spots unchanged
// chains cheaply.
type Expr interface {
	String() string
	encode(e *encoder)
	refs(visit func(ref))
}

// Match is a primitive that tests the packet. Every match can be negated
// with Not.
type Match interface {
	Expr
	negate() Match
}

// Not returns the negation of m: `!=` for comparisons and set lookups,
// `!` for ct flags.
func Not(m Match) Match { return m.negate() }

// refKind says what a rule refers to by name.
type refKind uint8

const (
	refChain refKind = iota + 1
	refSet
	refMap
)

// ref is a by-name reference from a rule (or map element) to another object.
// For sets and maps, typ is the key type the reference expects.
type ref struct {
	kind refKind
	name string
	typ  string
}

func (r ref) String() string {
	return [...]string{"", "chain", "set", "map"}[r.kind] + " " + r.name
}

// noRefs is embedded by primitives that refer to nothing.
type noRefs struct{}

func (noRefs) refs(func(ref)) {}

// Registers as the kernel numbers them.
const (
	regVerdict = 0
	reg1       = 1 // 128-bit register 1
	reg2       = 2
	reg3       = 3
	reg32Base  = 8 // first 32-bit register, overlaying reg1
)

var errConflictingFamilies = errors.New("conflicting families ipv4 and ipv6 in one rule")

// encoder accumulates the netlink expressions of one rule. It tracks the
// protocol facts already established in the rule so that the implicit
// dependencies nft adds (meta nfproto before ip payload in an inet table,
// meta l4proto before tcp payload, ...) are emitted once.
type encoder struct {
	exprs   []expr.Any
	nfproto byte
	l4proto int
	ether   bool
	anon    func(*nftables.Set, []nftables.SetElement) error
	splices []splice // expressions google/nftables cannot marshal (see addSplice)
	err     error
}

func newEncoder(anon func(*nftables.Set, []nftables.SetElement) error) *encoder {
	return &encoder{l4proto: -1, anon: anon}
}

func (e *encoder) add(x ...expr.Any) { e.exprs = append(e.exprs, x...) }

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// cmp loads nothing; it compares register 1 with data.
func (e *encoder) cmp(op expr.CmpOp, data []byte) {
	e.add(&expr.Cmp{Op: op, Register: reg1, Data: data})
}

func cmpOp(neg bool) expr.CmpOp {
	if neg {
		return expr.CmpOpNeq
	}
	return expr.CmpOpEq
}

// needNFProto makes sure the rule only sees packets of family f.
func (e *encoder) needNFProto(f Family) {
	p := f.nfproto()
	if e.nfproto == p {
		return
	}
	if e.nfproto != 0 {
		e.fail(errConflictingFamilies)
	}
	e.add(&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1})
	e.cmp(expr.CmpOpEq, []byte{p})
	e.nfproto = p
}

// needL4Proto makes sure the rule only sees packets of IP protocol p.
func (e *encoder) needL4Proto(p uint8) {
	if e.l4proto == int(p) {
		return
	}
	if e.l4proto >= 0 {
		e.fail(fmt.Errorf("conflicting protocols %s and %s in one rule", protoName(uint8(e.l4proto)), protoName(p)))
	}
	e.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1})
	e.cmp(expr.CmpOpEq, []byte{p})
	e.l4proto = int(p)
}

// needEther makes sure the link-layer header is Ethernet.
func (e *encoder) needEther() {
	if e.ether {
		return
	}
	e.add(&expr.Meta{Key: expr.MetaKeyIIFTYPE, Register: reg1})
	e.cmp(expr.CmpOpEq, binary.NativeEndian.AppendUint16(nil, unix.ARPHRD_ETHER))
	e.ether = true
}

// addAnonSet creates an anonymous constant set in the same batch and returns
// the lookup expression that refers to it.
func (e *encoder) addAnonSet(t *setType, interval bool, elems []element, neg bool) *expr.Lookup {
	s := &nftables.Set{Anonymous: true, Constant: true, Interval: interval, KeyType: t.nftType()}
	if e.anon == nil {
		e.fail(fmt.Errorf("anonymous set not available in this context"))
		return &expr.Lookup{}
	}
	if err := e.anon(s, setElements(elems, interval)); err != nil {
		e.fail(fmt.Errorf("adding anonymous set: %w", err))
	}
	return &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID, Invert: neg}
}

// Family is an IP family.
type Family uint8

// IP families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) nfproto() byte {
	if f == IPv6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// ip is the nft payload keyword of the family: ip or ip6.
func (f Family) ip() string {
	if f == IPv6 {
		return "ip6"
	}
	return "ip"
}

func (f Family) addrType() string {
	if f == IPv6 {
		return TypeIPv6Addr
	}
	return TypeIPv4Addr
}

func (f Family) String() string {
	if f == IPv6 {
		return "ipv6"
	}
	return "ipv4"
}

func familyOfLen(n int) Family {
	if n == 16 {
		return IPv6
	}
	return IPv4
}

// setElements converts canonical elements to google/nftables elements. An
// interval becomes a start element and, unless it is open-ended, an
// interval-end element.
func setElements(elems []element, interval bool) []nftables.SetElement {
	out := make([]nftables.SetElement, 0, len(elems)*2)
	for _, el := range elems {
		out = append(out, nftables.SetElement{Key: el.key})
		if interval && el.end != nil {
			out = append(out, nftables.SetElement{Key: el.end, IntervalEnd: true})
		}
	}
	return out
}

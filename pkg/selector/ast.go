package selector

import (
	"strings"
)

// NamespaceLabel is the label Calico puts on namespaced objects; global() matches label sets
// that do not have it.
const NamespaceLabel = "projectcalico.org/namespace"

// op is the kind of a node in the compiled selector tree.
type op uint8

const (
	opAll op = iota
	opGlobal
	opHas
	opEq
	opNe
	opContains
	opStartsWith
	opEndsWith
	opIn
	opNotIn
	opNot
	opAnd
	opOr
)

// node is one element of the compiled tree. Leaves use key (and value or set); opNot has one
// kid, opAnd and opOr two or more. A single struct with a switch avoids interface dispatch per
// node during evaluation.
type node struct {
	op    op
	key   string
	value string
	set   []string // opIn, opNotIn: sorted, without duplicates
	kids  []*node
}

// eval reports whether the label set l satisfies n. It does not allocate.
func (n *node) eval(l Labels) bool {
	switch n.op {
	case opAll:
		return true
	case opGlobal:
		_, ok := l.Get(NamespaceLabel)
		return !ok
	case opHas:
		_, ok := l.Get(n.key)
		return ok
	case opNot:
		return !n.kids[0].eval(l)
	case opAnd:
		for _, k := range n.kids {
			if !k.eval(l) {
				return false
			}
		}
		return true
	case opOr:
		for _, k := range n.kids {
			if k.eval(l) {
				return true
			}
		}
		return false
	}
	v, ok := l.Get(n.key)
	return n.evalValue(v, ok)
}

// evalValue applies a comparison operator to the value v of n.key (present when ok).
func (n *node) evalValue(v string, ok bool) bool {
	switch n.op {
	case opEq:
		return ok && v == n.value
	case opNe:
		return !ok || v != n.value
	case opContains:
		return ok && strings.Contains(v, n.value)
	case opStartsWith:
		return ok && strings.HasPrefix(v, n.value)
	case opEndsWith:
		return ok && strings.HasSuffix(v, n.value)
	case opIn:
		return ok && setContains(n.set, v)
	case opNotIn:
		return !ok || !setContains(n.set, v)
	}
	return false // unreachable: every leaf op is handled above
}

// setContains reports whether the sorted slice set holds v: a linear scan for small sets,
// binary search otherwise.
func setContains(set []string, v string) bool {
	if len(set) <= 8 {
		for _, s := range set {
			if s == v {
				return true
			}
		}
		return false
	}
	lo, hi := 0, len(set)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if set[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo < len(set) && set[lo] == v
}

// opText is the canonical spelling of each binary operator, spaces included.
var opText = [...]string{
	opEq:         " == ",
	opNe:         " != ",
	opContains:   " contains ",
	opStartsWith: " starts with ",
	opEndsWith:   " ends with ",
	opIn:         " in {",
	opNotIn:      " not in {",
	opAnd:        " && ",
	opOr:         " || ",
}

// writeTo appends the canonical form of n to b, exactly as Calico's collectFragments does.
func (n *node) writeTo(b *strings.Builder) {
	switch n.op {
	case opAll:
		b.WriteString("all()")
	case opGlobal:
		b.WriteString("global()")
	case opHas:
		b.WriteString("has(")
		b.WriteString(n.key)
		b.WriteByte(')')
	case opNot:
		b.WriteByte('!')
		n.kids[0].writeTo(b)
	case opAnd, opOr:
		b.WriteByte('(')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(opText[n.op])
			}
			k.writeTo(b)
		}
		b.WriteByte(')')
	case opIn, opNotIn:
		b.WriteString(n.key)
		b.WriteString(opText[n.op])
		for i, s := range n.set {
			if i > 0 {
				b.WriteString(", ")
			}
			writeQuoted(b, s)
		}
		b.WriteByte('}')
	default:
		b.WriteString(n.key)
		b.WriteString(opText[n.op])
		writeQuoted(b, n.value)
	}
}

// writeQuoted writes s in double quotes, or in single quotes when s contains a double quote.
// The language has no escapes, so a parsed value never contains both.
func writeQuoted(b *strings.Builder, s string) {
	q := byte('"')
	if strings.IndexByte(s, '"') >= 0 {
		q = '\''
	}
	b.WriteByte(q)
	b.WriteString(s)
	b.WriteByte(q)
}

// collectKeys appends every label key that n reads.
func (n *node) collectKeys(keys []string) []string {
	switch n.op {
	case opAll:
		return keys
	case opGlobal:
		return append(keys, NamespaceLabel)
	case opNot, opAnd, opOr:
		for _, k := range n.kids {
			keys = k.collectKeys(keys)
		}
		return keys
	}
	return append(keys, n.key)
}

// negate returns !n, removing a double negation instead of stacking one.
func negate(n *node) *node {
	if n.op == opNot {
		return n.kids[0]
	}
	return &node{op: opNot, kids: []*node{n}}
}

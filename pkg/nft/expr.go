package nft

import (
	"net/netip"
	"strconv"
	"strings"
	"unique"
)

// Expr is one part of a rule: a match (a test of the packet, see Match) or
// a statement (counter, log, NAT, mark, a verdict, a verdict map lookup).
// Build them with this package's constructors. Every Expr is a comparable
// value, prints itself as `nft list` prints it (String uses the inet
// family's spelling; Rule.Text takes the table's family), lowers itself to
// kernel instructions (package vm) and is raised back from them.
type Expr interface {
	String() string
	lower(l *lowerer)
	text(p *printer)
	refs(visit func(Ref))
}

// Match is an Expr that tests the packet; every match can be negated.
type Match interface {
	Expr
	negate() Match
}

// Not negates a match: `!=` for comparisons and set lookups, `!` for
// conntrack flags.
func Not(m Match) Match { return m.negate() }

// RefKind is what a reference points at.
type RefKind uint8

// Reference kinds.
const (
	RefChain RefKind = iota + 1
	RefSet
	RefMap
)

func (k RefKind) String() string { return [...]string{"", "chain", "set", "map"}[k] }

// Ref is a reference by name from a rule or a map element to another object
// of its table. For sets and maps, KeyType is the key type the lookup needs.
type Ref struct {
	Kind    RefKind
	Name    string
	KeyType DataType
}

// noRefs is embedded by expressions that refer to nothing.
type noRefs struct{}

func (noRefs) refs(func(Ref)) {}

// printer renders expressions as nft text for a table family.
type printer struct {
	fam Family
	b   strings.Builder
}

func (p *printer) word(s string) {
	if p.b.Len() > 0 {
		p.b.WriteByte(' ')
	}
	p.b.WriteString(s)
}

// exprString renders an expression alone, with the inet family's spelling.
func exprString(x Expr) string {
	p := printer{fam: FamilyInet}
	x.text(&p)
	return p.b.String()
}

// Rule is an ordered list of expressions and an optional comment.
type Rule struct {
	Exprs   []Expr
	Comment string
}

// NewRule returns the rule made of exprs.
func NewRule(exprs ...Expr) Rule { return Rule{Exprs: exprs} }

// WithComment returns r with comment c.
func (r Rule) WithComment(c string) Rule {
	r.Comment = c
	return r
}

// Text renders the rule as `nft list` prints it in a table of family f.
func (r Rule) Text(f Family) string {
	p := printer{fam: f}
	for _, x := range r.Exprs {
		x.text(&p)
	}
	if r.Comment != "" {
		p.word("comment " + strconv.Quote(r.Comment))
	}
	return p.b.String()
}

// String renders the rule with the inet family's spelling.
func (r Rule) String() string { return r.Text(FamilyInet) }

// Refs lists what the rule refers to, in order, duplicates included.
func (r Rule) Refs() []Ref {
	var out []Ref
	for _, x := range r.Exprs {
		x.refs(func(rf Ref) { out = append(out, rf) })
	}
	return out
}

// NeedsMember reports whether the rule acts only on packets found in a set for which in
// returns true: it looks that set up (not negated) before any statement. When every such set
// is empty, the rule never matches and does nothing (matches have no effect of their own).
func (r Rule) NeedsMember(in func(set string) bool) bool {
	for _, x := range r.Exprs {
		m, ok := x.(Match)
		if !ok {
			return false
		}
		if l, ok := m.(lookupMatch); ok && !l.neg && in(l.set) {
			return true
		}
	}
	return false
}

// AddressOnly reports whether the rule matches one source or destination address (equal to
// an address or in a prefix, not negated) and nothing else, then counts, logs or sets the mark
// and ends in a verdict that leaves the chain (accept, drop, return, or reject). It returns the
// address field and its element as InList takes them: in a run of such rules on one field,
// a packet whose address is none of their elements matches none of them, and one that is
// matches one of them and leaves the chain there.
func (r Rule) AddressOnly() (Field, Element, bool) {
	n := len(r.Exprs)
	if n < 2 || !leavesChain(r.Exprs[n-1]) {
		return Field{}, Element{}, false
	}
	for _, x := range r.Exprs[1 : n-1] {
		switch x.(type) {
		case counterStmt, logStmt, markStmt:
		default:
			return Field{}, Element{}, false
		}
	}
	switch m := r.Exprs[0].(type) {
	case cmpMatch:
		if a, ok := netip.AddrFromSlice([]byte(m.val)); ok && !m.neg && m.f.isAddress() {
			return m.f, AddrElem(a), true
		}
	case prefixMatch:
		if a, ok := netip.AddrFromSlice([]byte(m.addr)); ok && !m.neg && m.f.isAddress() {
			return m.f, PrefixElem(netip.PrefixFrom(a, int(m.bits))), true
		}
	}
	return Field{}, Element{}, false
}

// leavesChain reports whether x is a verdict or statement after which the chain evaluates no
// further rule.
func leavesChain(x Expr) bool {
	switch x := x.(type) {
	case Verdict:
		return x.Kind == VerdictAccept || x.Kind == VerdictDrop || x.Kind == VerdictReturn
	case rejectStmt:
		return true
	}
	return false
}

// Equal reports whether two rules are the same expression by expression.
func (r Rule) Equal(o Rule) bool {
	if r.Comment != o.Comment || len(r.Exprs) != len(o.Exprs) {
		return false
	}
	for i := range r.Exprs {
		if r.Exprs[i] != o.Exprs[i] {
			return false
		}
	}
	return true
}

// maxComment is the longest comment or log prefix kept (nft's limit less
// the terminating NUL).
const maxComment = 127

// SanitizeText makes a string safe for a rule comment or a log prefix:
// printable ASCII other than `"` and `\` (others become '_'), at most 127
// bytes. Tables apply it to rule comments; Log applies it to prefixes.
func SanitizeText(s string) string {
	if len(s) <= maxComment && !strings.ContainsFunc(s, unsafeRune) {
		return s // already safe: no copy
	}
	b := []byte(s)
	if len(b) > maxComment {
		b = b[:maxComment]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b[i] = '_'
		}
	}
	return string(b)
}

func unsafeRune(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }

// intern returns an expression equal to x, shared with every other rule
// that holds an equal one (the same accept, the same set lookup...): a
// table of many similar rules keeps one copy of each.
func intern(x Expr) Expr {
	if x == nil {
		return nil
	}
	return unique.Make(x).Value()
}

// Undecoded stands for kernel instructions this package could not turn
// back into expressions (a rule someone else wrote, or damaged). It never
// equals a desired expression, so a chain holding one is rewritten.
type Undecoded struct {
	noRefs
	Reason string
}

func (x Undecoded) String() string  { return exprString(x) }
func (x Undecoded) text(p *printer) { p.word("# undecoded: " + x.Reason) }
func (x Undecoded) lower(l *lowerer) {
	l.fail(errUndecoded)
}

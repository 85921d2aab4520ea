package calc

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/selector"
)

// This file works on the canonical text of a selector (selector.Selector.String()), which
// pkg/selector guarantees to be well formed, fully parenthesised and re-parsable. It provides the
// two things pkg/selector does not: rewriting label keys with a prefix (Calico's
// parseSelectorAttachPrefix, used for namespaceSelector -> "pcns.<key>" and service-account
// selectors -> "pcsa.<key>") and the set of keys a selector requires to be present (for has()
// anchors in the label index).

// sexprKind is the kind of a node of a parsed canonical selector.
type sexprKind uint8

const (
	sxAll sexprKind = iota
	sxGlobal
	sxHas
	sxCmp // key followed by an operator and its operand, kept as text
	sxNot
	sxAnd
	sxOr
)

// sexpr is a parsed canonical selector.
type sexpr struct {
	kind sexprKind
	key  string // sxHas, sxCmp
	rest string // sxCmp: the operator and operand text after the key
	neg  bool   // sxCmp: the operator also matches label sets without the key (!=, not in)
	kids []*sexpr
}

// sexprParser is a recursive-descent parser over canonical selector text.
type sexprParser struct {
	src string
	pos int
}

func parseSexpr(canonical string) (*sexpr, error) {
	p := &sexprParser{src: canonical}
	e, err := p.parseList(sxOr, "||")
	if err != nil {
		return nil, err
	}
	p.skipBlanks()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("selector %q: unexpected text at %d", canonical, p.pos)
	}
	return e, nil
}

func (p *sexprParser) skipBlanks() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *sexprParser) accept(tok string) bool {
	p.skipBlanks()
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

// parseList parses operands separated by sep ("||" or "&&").
func (p *sexprParser) parseList(kind sexprKind, sep string) (*sexpr, error) {
	operand := p.parseUnary
	if kind == sxOr {
		operand = func() (*sexpr, error) { return p.parseList(sxAnd, "&&") }
	}
	first, err := operand()
	if err != nil {
		return nil, err
	}
	kids := []*sexpr{first}
	for p.accept(sep) {
		k, err := operand()
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &sexpr{kind: kind, kids: kids}, nil
}

func (p *sexprParser) parseUnary() (*sexpr, error) {
	if p.accept("!") {
		k, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &sexpr{kind: sxNot, kids: []*sexpr{k}}, nil
	}
	return p.parsePrimary()
}

func (p *sexprParser) parsePrimary() (*sexpr, error) {
	switch {
	case p.accept("("):
		e, err := p.parseList(sxOr, "||")
		if err != nil {
			return nil, err
		}
		if !p.accept(")") {
			return nil, fmt.Errorf("selector %q: missing ) at %d", p.src, p.pos)
		}
		return e, nil
	case p.accept("all()"):
		return &sexpr{kind: sxAll}, nil
	case p.accept("global()"):
		return &sexpr{kind: sxGlobal}, nil
	case p.accept("has("):
		key := p.scanKey()
		if key == "" || !p.accept(")") {
			return nil, fmt.Errorf("selector %q: bad has() at %d", p.src, p.pos)
		}
		return &sexpr{kind: sxHas, key: key}, nil
	}
	return p.parseComparison()
}

func (p *sexprParser) scanKey() string {
	p.skipBlanks()
	start := p.pos
	for p.pos < len(p.src) && isSelectorKeyByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func isSelectorKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-'
}

// parseComparison parses `key <op> <operand>`, keeping the operator and operand as text up to the
// end of the operand (a quoted string, or a {...} set whose members are quoted strings).
func (p *sexprParser) parseComparison() (*sexpr, error) {
	key := p.scanKey()
	if key == "" {
		return nil, fmt.Errorf("selector %q: expected a term at %d", p.src, p.pos)
	}
	start := p.pos
	p.skipBlanks()
	rest := p.src[p.pos:]
	neg := strings.HasPrefix(rest, "!=") || strings.HasPrefix(rest, "not ")
	if err := p.skipOperand(); err != nil {
		return nil, err
	}
	return &sexpr{kind: sxCmp, key: key, rest: p.src[start:p.pos], neg: neg}, nil
}

// skipOperand moves past the operator words and the operand that ends the comparison.
func (p *sexprParser) skipOperand() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; c {
		case '"', '\'':
			end := strings.IndexByte(p.src[p.pos+1:], c)
			if end < 0 {
				return fmt.Errorf("selector %q: unterminated string", p.src)
			}
			p.pos += end + 2
			return nil
		case '{':
			return p.skipSet()
		}
		p.pos++
	}
	return fmt.Errorf("selector %q: comparison without operand", p.src)
}

func (p *sexprParser) skipSet() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; c {
		case '}':
			p.pos++
			return nil
		case '"', '\'':
			end := strings.IndexByte(p.src[p.pos+1:], c)
			if end < 0 {
				return fmt.Errorf("selector %q: unterminated string", p.src)
			}
			p.pos += end + 2
		default:
			p.pos++
		}
	}
	return fmt.Errorf("selector %q: unterminated set", p.src)
}

// prefixMode says how all() and global() are rewritten when keys get a prefix.
type prefixMode uint8

const (
	prefixOnly      prefixMode = iota // keep all() and global() as they are
	prefixNamespace                   // all() -> has(ns label), global() -> !has(ns label)
	prefixSvcAcct                     // all() -> has(serviceaccount label)
)

// writePrefixed writes e with every label key prefixed.
func (e *sexpr) writePrefixed(b *strings.Builder, prefix string, mode prefixMode) {
	switch e.kind {
	case sxAll:
		switch mode {
		case prefixNamespace:
			b.WriteString("has(" + labelNamespace + ")")
		case prefixSvcAcct:
			b.WriteString("has(" + labelServiceAccount + ")")
		default:
			b.WriteString("all()")
		}
	case sxGlobal:
		if mode == prefixNamespace {
			b.WriteString("!has(" + labelNamespace + ")")
		} else {
			b.WriteString("global()")
		}
	case sxHas:
		b.WriteString("has(" + prefix + e.key + ")")
	case sxCmp:
		b.WriteString(prefix + e.key + e.rest)
	case sxNot:
		b.WriteByte('!')
		e.kids[0].writePrefixed(b, prefix, mode)
	case sxAnd, sxOr:
		sep := " && "
		if e.kind == sxOr {
			sep = " || "
		}
		b.WriteByte('(')
		for i, k := range e.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.writePrefixed(b, prefix, mode)
		}
		b.WriteByte(')')
	}
}

// prefixSelector returns sel's canonical text with every label key prefixed (Calico's
// parseSelectorAttachPrefix), rewriting all() and global() according to mode.
func prefixSelector(sel *selector.Selector, prefix string, mode prefixMode) (string, error) {
	e, err := parseSexpr(sel.String())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	e.writePrefixed(&b, prefix, mode)
	return b.String(), nil
}

// requiredKeys returns the label keys that every label set matched by e must have.
func (e *sexpr) requiredKeys() []string {
	switch e.kind {
	case sxHas:
		return []string{e.key}
	case sxCmp:
		if e.neg {
			return nil
		}
		return []string{e.key}
	case sxAnd:
		var out []string
		for _, k := range e.kids {
			out = append(out, k.requiredKeys()...)
		}
		return out
	case sxOr:
		out := e.kids[0].requiredKeys()
		for _, k := range e.kids[1:] {
			out = intersectKeys(out, k.requiredKeys())
		}
		return out
	}
	return nil
}

func intersectKeys(a, b []string) []string {
	var out []string
	for _, k := range a {
		for _, o := range b {
			if k == o {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// selectorRequiredKeys returns the keys sel requires, or nil when it cannot tell.
func selectorRequiredKeys(sel *selector.Selector) []string {
	e, err := parseSexpr(sel.String())
	if err != nil {
		return nil
	}
	return e.requiredKeys()
}

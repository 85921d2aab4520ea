package selector

import (
	"fmt"
	"slices"
)

// MaxNesting is the deepest parenthesis nesting Parse accepts. Calico has no limit; this one
// keeps a hostile selector from exhausting the stack and is far beyond any real selector.
const MaxNesting = 128

// ParseError describes why a selector did not parse.
type ParseError struct {
	Selector string // the whole input
	Offset   int    // byte offset (0-based) of the offending token; len(Selector) at the end
	Msg      string // what was expected and what was found
}

// Error formats the error as `invalid selector "<input>" at offset N: <what was expected>`.
func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid selector %q at offset %d: %s", e.Selector, e.Offset, e.Msg)
}

// parser is a recursive-descent parser over a lexer with one token of lookahead.
type parser struct {
	lx    lexer
	tok   token
	depth int
}

// parse compiles src into a tree; an empty or blank src is all().
func parse(src string) (*node, error) {
	p := &parser{lx: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return &node{op: opAll}, nil
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected(`"&&", "||" or end of selector`)
	}
	return n, nil
}

// advance moves to the next token.
func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// unexpected reports that the current token is not what the grammar expected.
func (p *parser) unexpected(expected string) error {
	return p.lx.errAt(p.tok.pos, "expected %s, found %s", expected, p.tok.describe())
}

// parseOr parses and-expressions separated by "||".
func (p *parser) parseOr() (*node, error) {
	return p.parseList(opOr, tokOr, p.parseAnd)
}

// parseAnd parses unary expressions separated by "&&".
func (p *parser) parseAnd() (*node, error) {
	return p.parseList(opAnd, tokAnd, p.parseUnary)
}

// parseList parses operand { sep operand }; a single operand is returned as is.
func (p *parser) parseList(o op, sep tokKind, operand func() (*node, error)) (*node, error) {
	first, err := operand()
	if err != nil || p.tok.kind != sep {
		return first, err
	}
	kids := []*node{first}
	for p.tok.kind == sep {
		if err := p.advance(); err != nil {
			return nil, err
		}
		k, err := operand()
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	return &node{op: o, kids: kids}, nil
}

// parseUnary parses any number of "!" followed by a primary expression.
func (p *parser) parseUnary() (*node, error) {
	negated := false
	for p.tok.kind == tokNot {
		negated = !negated
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	n, err := p.parsePrimary()
	if err != nil || !negated {
		return n, err
	}
	return negate(n), nil
}

// parsePrimary parses a parenthesised expression, all(), global(), has(k) or a comparison.
func (p *parser) parsePrimary() (*node, error) {
	var n *node
	switch p.tok.kind {
	case tokLParen:
		return p.parseParen()
	case tokKey:
		return p.parseComparison()
	case tokAll:
		n = &node{op: opAll}
	case tokGlobal:
		n = &node{op: opGlobal}
	case tokHas:
		n = &node{op: opHas, key: p.tok.val}
	default:
		return nil, p.unexpected(`a label, "has(", "all()", "global()", "!" or "("`)
	}
	return n, p.advance()
}

// parseParen parses "(" or-expression ")".
func (p *parser) parseParen() (*node, error) {
	open := p.tok.pos
	if p.depth++; p.depth > MaxNesting {
		return nil, p.lx.errAt(open, "parentheses nested more than %d deep", MaxNesting)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokRParen {
		return nil, p.unexpected(fmt.Sprintf(`"&&", "||" or ")" to close the "(" at offset %d`, open))
	}
	p.depth--
	return n, p.advance()
}

// valueOps maps the operators that take one string to their node op.
var valueOps = map[tokKind]op{
	tokEq: opEq, tokNe: opNe, tokContains: opContains, tokStartsWith: opStartsWith, tokEndsWith: opEndsWith,
}

// parseComparison parses key <op> "value" or key [not] in {...}.
func (p *parser) parseComparison() (*node, error) {
	key := p.tok.val
	if err := p.advance(); err != nil {
		return nil, err
	}
	opTok := p.tok
	if opTok.kind == tokIn || opTok.kind == tokNotIn {
		return p.parseSet(key)
	}
	o, ok := valueOps[opTok.kind]
	if !ok {
		return nil, p.unexpected(fmt.Sprintf("an operator after label %q", key))
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokString {
		return nil, p.unexpected("a quoted string after " + opTok.describe())
	}
	n := &node{op: o, key: key, value: p.tok.val}
	return n, p.advance()
}

// parseSet parses the set literal after "in" or "not in": { "a", "b" } with an optional
// trailing comma. Members are sorted and de-duplicated.
func (p *parser) parseSet(key string) (*node, error) {
	n := &node{op: opIn, key: key}
	if p.tok.kind == tokNotIn {
		n.op = opNotIn
	}
	opName := p.tok.describe()
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokLBrace {
		return nil, p.unexpected(`"{" after ` + opName)
	}
	expected := `a quoted string or "}" in set`
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokString {
			break
		}
		n.set = append(n.set, p.tok.val)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokComma {
			expected = `"," or "}" in set`
			break
		}
	}
	if p.tok.kind != tokRBrace {
		return nil, p.unexpected(expected)
	}
	slices.Sort(n.set)
	n.set = slices.Compact(n.set)
	return n, p.advance()
}

package selector

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokKey
	tokString
	tokLBrace
	tokRBrace
	tokComma
	tokLParen
	tokRParen
	tokNot
	tokAnd
	tokOr
	tokAll
	tokGlobal
	tokHas
	tokEq
	tokNe
	tokContains
	tokStartsWith
	tokEndsWith
	tokIn
	tokNotIn
)

// tokText is how error messages name tokens without a value.
var tokText = [...]string{
	tokEOF:        "end of selector",
	tokLBrace:     `"{"`,
	tokRBrace:     `"}"`,
	tokComma:      `","`,
	tokLParen:     `"("`,
	tokRParen:     `")"`,
	tokNot:        `"!"`,
	tokAnd:        `"&&"`,
	tokOr:         `"||"`,
	tokAll:        `"all()"`,
	tokGlobal:     `"global()"`,
	tokEq:         `"=="`,
	tokNe:         `"!="`,
	tokContains:   `"contains"`,
	tokStartsWith: `"starts with"`,
	tokEndsWith:   `"ends with"`,
	tokIn:         `"in"`,
	tokNotIn:      `"not in"`,
}

// token is one lexical token; pos is the byte offset where it starts.
type token struct {
	kind tokKind
	val  string // key for tokKey and tokHas, contents for tokString
	pos  int
}

// describe names the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tokKey:
		return fmt.Sprintf("label %q", t.val)
	case tokString:
		return fmt.Sprintf("string %q", t.val)
	case tokHas:
		return fmt.Sprintf(`"has(%s)"`, t.val)
	}
	return tokText[t.kind]
}

// lexer splits a selector into tokens on demand, following Calico's tokenizer: which words
// are operators depends only on whether the previous token was a label key.
type lexer struct {
	src      string
	pos      int
	afterKey bool   // the previous token was a label key
	lastKey  string // that key, for error messages
}

// isKeyByte reports whether c may appear in a label key.
func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-'
}

// skipBlanks advances past spaces and tabs, the only whitespace Calico allows.
func (lx *lexer) skipBlanks() {
	for lx.pos < len(lx.src) && (lx.src[lx.pos] == ' ' || lx.src[lx.pos] == '\t') {
		lx.pos++
	}
}

// scanKey returns the label key starting at the current position ("" if none) and skips it.
func (lx *lexer) scanKey() string {
	start := lx.pos
	for lx.pos < len(lx.src) && isKeyByte(lx.src[lx.pos]) {
		lx.pos++
	}
	return lx.src[start:lx.pos]
}

// errAt builds a ParseError at byte offset pos.
func (lx *lexer) errAt(pos int, format string, args ...any) *ParseError {
	return &ParseError{Selector: lx.src, Offset: pos, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token, or tokEOF at the end of the input.
func (lx *lexer) next() (token, error) {
	lx.skipBlanks()
	start := lx.pos
	if start == len(lx.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	tok, err := lx.scan()
	tok.pos = start
	lx.afterKey = err == nil && tok.kind == tokKey
	if lx.afterKey {
		lx.lastKey = tok.val
	}
	return tok, err
}

// punct maps single-byte punctuation to its token; doubled maps the byte of a two-byte
// operator ("==", "&&", "||") to its token.
var (
	punct   = [256]tokKind{'(': tokLParen, ')': tokRParen, '{': tokLBrace, '}': tokRBrace, ',': tokComma}
	doubled = [256]tokKind{'=': tokEq, '&': tokAnd, '|': tokOr}
)

// scan reads one token starting at the (non-blank) current position.
func (lx *lexer) scan() (token, error) {
	c := lx.src[lx.pos]
	if k := punct[c]; k != tokEOF {
		lx.pos++
		return token{kind: k}, nil
	}
	switch c {
	case '"', '\'':
		return lx.scanString(c)
	case '=', '&', '|':
		if lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == c {
			lx.pos += 2
			return token{kind: doubled[c]}, nil
		}
		return token{}, lx.errAt(lx.pos, "expected %q, found %s", string([]byte{c, c}), lx.describeRest())
	case '!':
		lx.pos++
		if lx.pos < len(lx.src) && lx.src[lx.pos] == '=' {
			lx.pos++
			return token{kind: tokNe}, nil
		}
		return token{kind: tokNot}, nil
	}
	if lx.afterKey {
		return lx.scanOperatorWord()
	}
	return lx.scanWord()
}

// scanString reads a literal delimited by quote q; there are no escapes.
func (lx *lexer) scanString(q byte) (token, error) {
	start := lx.pos
	end := strings.IndexByte(lx.src[start+1:], q)
	if end < 0 {
		return token{}, lx.errAt(start, "unterminated string (no closing %c)", q)
	}
	lx.pos = start + 1 + end + 1
	return token{kind: tokString, val: lx.src[start+1 : start+1+end]}, nil
}

// operatorWords are the word operators that may follow a label key. Like Calico, each is
// matched as a prefix, and blanks are allowed between the two words of a pair.
var operatorWords = []struct {
	first, second string
	kind          tokKind
}{
	{"contains", "", tokContains},
	{"starts", "with", tokStartsWith},
	{"ends", "with", tokEndsWith},
	{"not", "in", tokNotIn},
	{"in", "", tokIn},
}

// scanOperatorWord reads a word operator after a label key.
func (lx *lexer) scanOperatorWord() (token, error) {
	for _, w := range operatorWords {
		if !strings.HasPrefix(lx.src[lx.pos:], w.first) {
			continue
		}
		lx.pos += len(w.first)
		if w.second == "" {
			return token{kind: w.kind}, nil
		}
		lx.skipBlanks()
		if !strings.HasPrefix(lx.src[lx.pos:], w.second) {
			return token{}, lx.errAt(lx.pos, "expected %q after %q, found %s", w.second, w.first, lx.describeRest())
		}
		lx.pos += len(w.second)
		return token{kind: w.kind}, nil
	}
	return token{}, lx.errAt(lx.pos, "expected an operator after label %q, found %s", lx.lastKey, lx.describeRest())
}

// scanWord reads has(key), all(), global() or a label key.
func (lx *lexer) scanWord() (token, error) {
	rest := lx.src[lx.pos:]
	switch {
	case strings.HasPrefix(rest, "has("):
		lx.pos += len("has(")
		lx.skipBlanks()
		keyPos := lx.pos
		key := lx.scanKey()
		if key == "" {
			return token{}, lx.errAt(keyPos, "expected a label key after \"has(\", found %s", lx.describeRest())
		}
		return token{kind: tokHas, val: key}, lx.closeParen("has(" + key)
	case strings.HasPrefix(rest, "all("):
		lx.pos += len("all(")
		return token{kind: tokAll}, lx.closeParen("all(")
	case strings.HasPrefix(rest, "global("):
		lx.pos += len("global(")
		return token{kind: tokGlobal}, lx.closeParen("global(")
	}
	if key := lx.scanKey(); key != "" {
		return token{kind: tokKey, val: key}, nil
	}
	return token{}, lx.errAt(lx.pos, "unexpected character %s", lx.describeRest())
}

// closeParen skips blanks and the ")" that must end a function-like token.
func (lx *lexer) closeParen(what string) error {
	lx.skipBlanks()
	if lx.pos < len(lx.src) && lx.src[lx.pos] == ')' {
		lx.pos++
		return nil
	}
	return lx.errAt(lx.pos, "expected \")\" after %q, found %s", what, lx.describeRest())
}

// describeRest names what is at the current position for an error message.
func (lx *lexer) describeRest() string {
	if lx.pos >= len(lx.src) {
		return tokText[tokEOF]
	}
	if isKeyByte(lx.src[lx.pos]) {
		end := lx.pos
		for end < len(lx.src) && isKeyByte(lx.src[end]) {
			end++
		}
		return fmt.Sprintf("%q", lx.src[lx.pos:end])
	}
	_, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
	return fmt.Sprintf("%q", lx.src[lx.pos:lx.pos+size])
}

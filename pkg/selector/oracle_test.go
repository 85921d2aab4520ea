package selector

import (
	"errors"
	"strings"
	"testing"
)

// This file holds a test oracle: an independent, deliberately naive model of how Project
// Calico's libcalico-go selector package decides whether a selector is valid. It tokenizes the
// whole input first (Calico's tokenizer: whitespace is only space and tab, a key token needs a
// non-key byte after it, word operators are recognised by prefix only after a key), then walks
// the token list with Calico's grammar. The lazy lexer and parser in the package must accept
// exactly the inputs this accepts (apart from the MaxNesting limit, which Calico lacks).

type oTok struct {
	kind tokKind
}

// oracleIdent is Calico's findIdentifier: the run of key bytes at the start of in, or ""
// when that run reaches the end of the input.
func oracleIdent(in string) string {
	for i := 0; i < len(in); i++ {
		if !isKeyByte(in[i]) {
			return in[:i]
		}
	}
	return ""
}

// oracleTokenize returns the token kinds of in, ending with tokEOF, or false.
func oracleTokenize(in string) ([]oTok, bool) {
	var toks []oTok
	emit := func(k tokKind, n int) { toks = append(toks, oTok{k}); in = in[n:] }
	for {
		in = strings.TrimLeft(in, " \t")
		if in == "" {
			return append(toks, oTok{tokEOF}), true
		}
		afterKey := len(toks) > 0 && toks[len(toks)-1].kind == tokKey
		two := len(in) > 1 && in[1] == in[0]
		switch c := in[0]; {
		case c == '(' || c == ')' || c == '{' || c == '}' || c == ',':
			emit(punct[c], 1)
		case c == '"' || c == '\'':
			end := strings.IndexByte(in[1:], c)
			if end < 0 {
				return nil, false
			}
			emit(tokString, end+2)
		case c == '!' && len(in) > 1 && in[1] == '=':
			emit(tokNe, 2)
		case c == '!':
			emit(tokNot, 1)
		case (c == '=' || c == '&' || c == '|') && two:
			emit(doubled[c], 2)
		case c == '=' || c == '&' || c == '|':
			return nil, false
		case afterKey:
			k, n := oracleOperator(in)
			if n == 0 {
				return nil, false
			}
			emit(k, n)
		default:
			k, n := oracleWord(in)
			if n == 0 {
				return nil, false
			}
			emit(k, n)
		}
	}
}

// oracleOperator matches a word operator after a key; n is the bytes consumed (0: none).
func oracleOperator(in string) (tokKind, int) {
	pairs := []struct {
		a, b string
		k    tokKind
	}{{"contains", "", tokContains}, {"starts", "with", tokStartsWith}, {"ends", "with", tokEndsWith}, {"not", "in", tokNotIn}, {"in", "", tokIn}}
	for _, p := range pairs {
		if !strings.HasPrefix(in, p.a) {
			continue
		}
		rest := strings.TrimLeft(in[len(p.a):], " \t")
		if !strings.HasPrefix(rest, p.b) {
			return 0, 0
		}
		return p.k, len(in) - len(rest) + len(p.b)
	}
	return 0, 0
}

// oracleWord matches has(k), all(), global() or a key; n is the bytes consumed (0: none).
func oracleWord(in string) (tokKind, int) {
	for _, f := range []struct {
		prefix string
		k      tokKind
	}{{"has(", tokHas}, {"all(", tokAll}, {"global(", tokGlobal}} {
		if !strings.HasPrefix(in, f.prefix) {
			continue
		}
		rest := strings.TrimLeft(in[len(f.prefix):], " \t")
		if f.k == tokHas {
			id := oracleIdent(rest)
			if id == "" {
				return 0, 0
			}
			rest = strings.TrimLeft(rest[len(id):], " \t")
		}
		if !strings.HasPrefix(rest, ")") {
			return 0, 0
		}
		return f.k, len(in) - len(rest) + 1
	}
	if id := oracleIdent(in); id != "" {
		return tokKey, len(id)
	}
	return 0, 0
}

// oracleAccepts reports whether Calico would accept the selector.
func oracleAccepts(in string) bool {
	toks, ok := oracleTokenize(in)
	if !ok {
		return false
	}
	if toks[0].kind == tokEOF {
		return true
	}
	rest, ok := oracleOr(toks)
	return ok && len(rest) == 1
}

func oracleOr(t []oTok) ([]oTok, bool) {
	t, ok := oracleAnd(t)
	for ok && t[0].kind == tokOr {
		t, ok = oracleAnd(t[1:])
	}
	return t, ok
}

func oracleAnd(t []oTok) ([]oTok, bool) {
	t, ok := oracleOp(t)
	for ok && t[0].kind == tokAnd {
		t, ok = oracleOp(t[1:])
	}
	return t, ok
}

func oracleOp(t []oTok) ([]oTok, bool) {
	for t[0].kind == tokNot {
		t = t[1:]
	}
	switch t[0].kind {
	case tokHas, tokAll, tokGlobal:
		return t[1:], true
	case tokLParen:
		t, ok := oracleOr(t[1:])
		if !ok || t[0].kind != tokRParen {
			return nil, false
		}
		return t[1:], true
	case tokKey:
		if len(t) < 3 {
			return nil, false
		}
		switch t[1].kind {
		case tokEq, tokNe, tokContains, tokStartsWith, tokEndsWith:
			return t[3:], t[2].kind == tokString
		case tokIn, tokNotIn:
			return oracleSet(t[2:])
		}
	}
	return nil, false
}

func oracleSet(t []oTok) ([]oTok, bool) {
	if t[0].kind != tokLBrace {
		return nil, false
	}
	t = t[1:]
	for t[0].kind == tokString {
		t = t[1:]
		if t[0].kind != tokComma {
			break
		}
		t = t[1:]
	}
	if t[0].kind != tokRBrace {
		return nil, false
	}
	return t[1:], true
}

// checkAgainstOracle fails when Parse and the Calico model disagree on s.
func checkAgainstOracle(t testing.TB, s string) {
	_, err := Parse(s)
	var pe *ParseError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Msg, "parentheses nested") {
		return
	}
	if want := oracleAccepts(s); (err == nil) != want {
		t.Fatalf("Parse(%q) error = %v, but Calico accepts it: %v", s, err, want)
	}
}

// oracleFragments are the pieces TestAcceptsWhatCalicoAccepts glues together.
var oracleFragments = []string{
	"a", "b.c/d-e_f", " ", "\t", "\n", "==", "=", "!=", "!", "&&", "&", "||", "|", `"x"`, `'y'`, `"`, `'`,
	"(", ")", "{", "}", ",", "in", "not", "not in", "contains", "starts", "with", "ends with",
	"has(", "has(a)", "all()", "all(", "global()", "global(", "%", "é",
	`a == "x"`, ` in {"x", `, ` && !`, `(b != 'y')`, "startswith", "notin {}",
}

// TestAcceptsWhatCalicoAccepts compares Parse with the Calico model on every sequence of up
// to four fragments (about 3.5 million selectors).
func TestAcceptsWhatCalicoAccepts(t *testing.T) {
	depth := 4
	if testing.Short() {
		depth = 3
	}
	var accepted, total int
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		total++
		checkAgainstOracle(t, prefix)
		if oracleAccepts(prefix) {
			accepted++
		}
		if n == 0 {
			return
		}
		for _, f := range oracleFragments {
			walk(prefix+f, n-1)
		}
	}
	walk("", depth)
	if accepted*2000 < total {
		t.Errorf("only %d of %d generated selectors are valid; the generator is too weak", accepted, total)
	}
	t.Logf("%d selectors compared, %d valid", total, accepted)
}

func TestOracleAgreesOnTables(t *testing.T) {
	for _, tc := range canonicalTests {
		if !oracleAccepts(tc.in) {
			t.Errorf("oracle rejects %q", tc.in)
		}
	}
	for _, s := range []string{"b == b", "a", "a ", "(", "()", "!", `a in {"x",,}`, "has(a", `a == "b"` + "\n"} {
		if oracleAccepts(s) {
			t.Errorf("oracle accepts %q", s)
		}
	}
}

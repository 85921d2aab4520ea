package selector

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// canonicalTests: input, its canonical form, and (where known from Calico's own tests) the
// UniqueID Calico computes.
var canonicalTests = []struct {
	in, want, uid string
}{
	// Calico's canonicalisation vectors (libcalico-go/lib/selector/parser/parser_test.go).
	{"", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
	{" all() ", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
	{" (all() )", "all()", "s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug"},
	{`! (has( b)||! has(a ))`, `!(has(b) || !has(a))`, "s:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q"},
	{`! (a == "b"&&! c != "d")`, `!(a == "b" && !c != "d")`, "s:lh3haoY1ikTRkd4UZu0nWSaIBknYLPJLX16d-w"},
	{`a == "'"`, `a == "'"`, ""},
	{`a == '"'`, `a == '"'`, ""},
	{`a contains '"'`, `a contains '"'`, ""},
	{`a contains "'"`, `a contains "'"`, ""},
	{`a startswith '"'`, `a starts with '"'`, ""},
	{`a endswith "'"`, `a ends with "'"`, ""},
	{`a!='"'`, `a != '"'`, ""},
	{`a in {"d"}`, `a in {"d"}`, ""},
	{`a in {"d", "a", "b"}`, `a in {"a", "b", "d"}`, ""},
	{`a in {"z", "z", "x", "y", "x", "a"}`, `a in {"a", "x", "y", "z"}`, ""},
	// Every operator, with single and double quotes and odd spacing.
	{`a=='b'`, `a == "b"`, ""},
	{"a\t!=\t\"b\"", `a != "b"`, ""},
	{`a contains'x'`, `a contains "x"`, ""},
	{`a starts   with "x"`, `a starts with "x"`, ""},
	{`a ends with "x"`, `a ends with "x"`, ""},
	{`a in{'x','y',}`, `a in {"x", "y"}`, ""},
	{`a notin {"y", "x"}`, `a not in {"x", "y"}`, ""},
	{`a not   in {}`, `a not in {}`, ""},
	{`a in {}`, `a in {}`, ""},
	{`a in {'"', "'"}`, `a in {'"', "'"}`, ""},
	{`has(a)`, `has(a)`, ""},
	{`!has(a)`, `!has(a)`, ""},
	{`!!has(a)`, `has(a)`, ""},
	{`! ! ! has(a)`, `!has(a)`, ""},
	{`!(!has(a))`, `has(a)`, ""},
	{`!((!(has(a))))`, `has(a)`, ""},
	{`!(a == "b")`, `!a == "b"`, ""},
	{`global()`, `global()`, ""},
	{`global( )`, `global()`, ""},
	{`all( )`, `all()`, ""},
	{`!all()`, `!all()`, ""},
	{"\t \t", "all()", ""},
	// Precedence: && binds tighter than ||; parentheses are kept as nesting.
	{`a == "1" || b == "2" && c == "3"`, `(a == "1" || (b == "2" && c == "3"))`, ""},
	{`a == "1" && b == "2" || c == "3"`, `((a == "1" && b == "2") || c == "3")`, ""},
	{`(a == "1" || b == "2") && c == "3"`, `((a == "1" || b == "2") && c == "3")`, ""},
	{`(a == "1" && b == "2") && c == "3"`, `((a == "1" && b == "2") && c == "3")`, ""},
	{`a == "1" && b == "2" && c == "3"`, `(a == "1" && b == "2" && c == "3")`, ""},
	{`!(a == "1" || b == "2") && has(c)`, `(!(a == "1" || b == "2") && has(c))`, ""},
	// Keys with every allowed character, and keys spelled like keywords.
	{`has(sg.projectcalico.org/openstack-3b2c1f0e)`, `has(sg.projectcalico.org/openstack-3b2c1f0e)`, ""},
	{`projectcalico.org/namespace == "ns_1"`, `projectcalico.org/namespace == "ns_1"`, ""},
	{`A_z-0.9/x == ""`, `A_z-0.9/x == ""`, ""},
	{`in == "x" && not in {"y"}`, `(in == "x" && not in {"y"})`, ""},
	{`not not in {"y"} || contains contains "z"`, `(not not in {"y"} || contains contains "z")`, ""},
	{`has == "x" || all != "y" || global contains "z"`, `(has == "x" || all != "y" || global contains "z")`, ""},
	// Values are taken verbatim: no escapes, any bytes.
	{`a == "x\y"`, `a == "x\y"`, ""},
	{`a == "é && b"`, `a == "é && b"`, ""},
	// Fixture selectors.
	{`role == 'web' && env in {'prod', 'staging'}`, `(role == "web" && env in {"prod", "staging"})`, ""},
	{`route-reflector == 'true'`, `route-reflector == "true"`, ""},
}

func TestParseCanonical(t *testing.T) {
	for _, tc := range canonicalTests {
		sel, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := sel.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		if tc.uid != "" && sel.UniqueID() != tc.uid {
			t.Errorf("Parse(%q).UniqueID() = %q, want Calico's %q", tc.in, sel.UniqueID(), tc.uid)
		}
		checkRoundTrip(t, sel)
	}
}

// checkRoundTrip asserts that the canonical form re-parses to an identical tree.
func checkRoundTrip(t *testing.T, sel *Selector) {
	t.Helper()
	again, err := Parse(sel.String())
	if err != nil {
		t.Errorf("canonical form %q does not re-parse: %v", sel.String(), err)
		return
	}
	if !reflect.DeepEqual(again.root, sel.root) {
		t.Errorf("canonical form %q re-parses to a different tree", sel.String())
	}
	if again.String() != sel.String() || again.UniqueID() != sel.UniqueID() {
		t.Errorf("canonical form %q re-parses as %q / %q", sel.String(), again.String(), again.UniqueID())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, msg string }{
		{`b == b`, `offset 5: expected a quoted string after "==", found label "b"`},
		{`b contains b`, `offset 11: expected a quoted string after "contains", found label "b"`},
		{`b starts with b`, `offset 14: expected a quoted string after "starts with", found label "b"`},
		{`b ends with 'x`, `offset 12: unterminated string (no closing ')`},
		{`'b1' == b`, `offset 0: expected a label, "has(", "all()", "global()", "!" or "(", found string "b1"`},
		{`b`, `offset 1: expected an operator after label "b", found end of selector`},
		{`b `, `offset 2: expected an operator after label "b", found end of selector`},
		{`a b`, `offset 2: expected an operator after label "a", found "b"`},
		{`a (`, `offset 2: expected an operator after label "a", found "("`},
		{`a = "b"`, `offset 2: expected "==", found "="`},
		{`a === "b"`, `offset 4: expected "==", found "="`},
		{`a starts "x"`, `offset 9: expected "with" after "starts", found "\""`},
		{`a ends wit "x"`, `offset 7: expected "with" after "ends", found "wit"`},
		{`a not {"x"}`, `offset 6: expected "in" after "not", found "{"`},
		{`a inx {"x"}`, `offset 4: expected "{" after "in", found label "x"`},
		{`a in "x"`, `offset 5: expected "{" after "in", found string "x"`},
		{`a not in ("x")`, `offset 9: expected "{" after "not in", found "("`},
		{`a in {`, `offset 6: expected a quoted string or "}" in set, found end of selector`},
		{`a in {"x" "y"}`, `offset 10: expected "," or "}" in set, found string "y"`},
		{`a in {"x",,}`, `offset 10: expected a quoted string or "}" in set, found ","`},
		{`a in {,}`, `offset 6: expected a quoted string or "}" in set, found ","`},
		{`foo in {"", ||`, `offset 12: expected a quoted string or "}" in set, found "||"`},
		{`!`, `offset 1: expected a label, "has(", "all()", "global()", "!" or "(", found end of selector`},
		{`foo == "bar" &`, `offset 13: expected "&&", found "&"`},
		{`foo == "bar" |`, `offset 13: expected "||", found "|"`},
		{`foo != ||`, `offset 7: expected a quoted string after "!=", found "||"`},
		{`"FOO`, `offset 0: unterminated string (no closing ")`},
		{`"FOO'`, `offset 0: unterminated string (no closing ")`},
		{`(`, `offset 1: expected a label, "has(", "all()", "global()", "!" or "(", found end of selector`},
		{`(a == "foo"`, `offset 11: expected "&&", "||" or ")" to close the "(" at offset 0, found end of selector`},
		{`)`, `offset 0: expected a label, "has(", "all()", "global()", "!" or "(", found ")"`},
		{`()`, `offset 1: expected a label, "has(", "all()", "global()", "!" or "(", found ")"`},
		{`%`, `offset 0: unexpected character "%"`},
		{`a == "b" && %`, `offset 12: unexpected character "%"`},
		{`a == "b" || é`, `offset 12: unexpected character "é"`},
		{"a == \"b\"\n", `offset 8: unexpected character "\n"`},
		{`has(foo) &&`, `offset 11: expected a label, "has(", "all()", "global()", "!" or "(", found end of selector`},
		{`has(foo) has(bar)`, `offset 9: expected "&&", "||" or end of selector, found "has(bar)"`},
		{`a == "b" c == "d"`, `offset 9: expected "&&", "||" or end of selector, found label "c"`},
		{`a == "b")`, `offset 8: expected "&&", "||" or end of selector, found ")"`},
		{`a == "b" !`, `offset 9: expected "&&", "||" or end of selector, found "!"`},
		{`has()`, `offset 4: expected a label key after "has(", found ")"`},
		{`has(a b)`, `offset 6: expected ")" after "has(a", found "b"`},
		{`has (a)`, `offset 4: expected an operator after label "has", found "("`},
		{`all(x)`, `offset 4: expected ")" after "all(", found "x"`},
		{`global(`, `offset 7: expected ")" after "global(", found end of selector`},
		{`all`, `offset 3: expected an operator after label "all", found end of selector`},
		{`a == "b" && all() ||`, `offset 20: expected a label, "has(", "all()", "global()", "!" or "(", found end of selector`},
		{strings.Repeat("(", MaxNesting+1) + "all()" + strings.Repeat(")", MaxNesting+1),
			`offset 128: parentheses nested more than 128 deep`},
	}
	for _, tc := range tests {
		sel, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error", tc.in, sel)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error %T is not a *ParseError", tc.in, err)
			continue
		}
		want := "invalid selector " + strconv.Quote(tc.in) + " at " + tc.msg
		if err.Error() != want {
			t.Errorf("Parse(%q) error:\n got %s\nwant %s", tc.in, err.Error(), want)
		}
		if pe.Selector != tc.in || pe.Offset < 0 || pe.Offset > len(tc.in) {
			t.Errorf("Parse(%q): ParseError{Selector: %q, Offset: %d} out of range", tc.in, pe.Selector, pe.Offset)
		}
	}
}

func TestNestingLimitIsInclusive(t *testing.T) {
	in := strings.Repeat("(", MaxNesting) + "has(a)" + strings.Repeat(")", MaxNesting)
	sel, err := Parse(in)
	if err != nil {
		t.Fatalf("Parse at the nesting limit: %v", err)
	}
	if sel.String() != "has(a)" {
		t.Errorf("String() = %q, want has(a)", sel.String())
	}
}

func TestMustParse(t *testing.T) {
	if got := MustParse(`a == 'b'`).String(); got != `a == "b"` {
		t.Errorf("MustParse().String() = %q", got)
	}
	defer func() {
		r := recover()
		if _, ok := r.(*ParseError); !ok {
			t.Errorf("MustParse of a bad selector panicked with %v, want a *ParseError", r)
		}
	}()
	MustParse(`a ==`)
}

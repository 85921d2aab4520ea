package selector

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, accepts exactly what Calico accepts, and that the
// canonical form of anything that parses re-parses to the same tree, String and UniqueID and
// evaluates the same way. Seeds: the fixture selectors and every selector in the tables.
//
//	go test ./pkg/selector -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, s := range fixtureSelectors(f) {
		f.Add(s)
	}
	for _, tc := range canonicalTests {
		f.Add(tc.in)
	}
	for _, tc := range evaluateTests {
		f.Add(tc.sel)
	}
	f.Add(`a in {"x",} && !(b not in {'y'} || c starts  with "z") || has(d) && global()`)
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		checkAgainstOracle(t, s)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse(%q) returned %T, want *ParseError", s, err)
			}
			return
		}
		canon := sel.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) canonical %q does not re-parse: %v", s, canon, err)
		}
		if again.String() != canon || again.UniqueID() != sel.UniqueID() || !reflect.DeepEqual(again.root, sel.root) {
			t.Fatalf("Parse(%q): canonical %q re-parses as %q", s, canon, again.String())
		}
		labels := fuzzLabels(sel)
		for _, l := range labels {
			if sel.EvaluateMap(l) != again.EvaluateMap(l) {
				t.Fatalf("%q and its canonical form %q disagree on %v", s, canon, l)
			}
		}
	})
}

// fuzzLabels builds label sets from the keys and values a selector mentions, so that its
// terms evaluate both ways.
func fuzzLabels(sel *Selector) []map[string]string {
	out := []map[string]string{{}}
	var values []string
	var walk func(n *node)
	walk = func(n *node) {
		values = append(values, n.value)
		values = append(values, n.set...)
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(sel.root)
	for i, v := range values {
		m := map[string]string{}
		for j, k := range sel.LabelKeys() {
			if (i+j)%3 != 0 {
				m[k] = v
			}
		}
		out = append(out, m)
	}
	return out
}

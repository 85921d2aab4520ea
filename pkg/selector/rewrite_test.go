package selector

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestPrefixKeys(t *testing.T) {
	hasNS := MustParse("has(projectcalico.org/namespace)")
	notNS := MustParse("!has(projectcalico.org/namespace)")
	hasSA := MustParse("has(projectcalico.org/serviceaccount)")
	tests := []struct {
		in, prefix  string
		all, global *Selector
		want        string
	}{
		{"env == 'prod'", "pcns.", hasNS, notNS, `pcns.env == "prod"`},
		{"all()", "pcns.", hasNS, notNS, `has(projectcalico.org/namespace)`},
		{"global()", "pcns.", hasNS, notNS, `!has(projectcalico.org/namespace)`},
		{"!global()", "pcns.", hasNS, notNS, `has(projectcalico.org/namespace)`},
		{"has(a) && !(b in {'x', 'y'}) || c starts with 'z'", "pcns.", hasNS, notNS,
			`((has(pcns.a) && !pcns.b in {"x", "y"}) || pcns.c starts with "z")`},
		{"a ends with 'q' && d contains \"it's\"", "pcsa.", hasSA, nil, `(pcsa.a ends with "q" && pcsa.d contains "it's")`},
		{"all()", "pcsa.", hasSA, nil, `has(projectcalico.org/serviceaccount)`},
		{"global() || all()", "pcsa.", nil, nil, `(global() || all())`},
		{"k not in {} && x != 'all()'", "p.", nil, nil, `(p.k not in {} && p.x != "all()")`},
		{"", "p.", nil, nil, "all()"},
	}
	for _, tc := range tests {
		got := MustParse(tc.in).PrefixKeys(tc.prefix, tc.all, tc.global)
		if got.String() != MustParse(tc.want).String() {
			t.Errorf("PrefixKeys(%q) = %s, want %s", tc.in, got, tc.want)
		}
		checkRoundTrip(t, got)
	}
	orig := MustParse("a == 'x'")
	_ = orig.PrefixKeys("p.", nil, nil)
	if orig.String() != `a == "x"` {
		t.Errorf("PrefixKeys changed its receiver: %s", orig)
	}
}

// TestPrefixKeysEvaluates: without replacements, the prefixed selector matches the prefixed
// label set exactly when the selector matches the label set (fixtures and table selectors
// against random label sets).
func TestPrefixKeysEvaluates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sels := append(fixtureSelectors(t), "a == 'x' || !has(b) && c in {'y', 'z'}", "!(a != 'x') && b not in {'y'}")
	for _, s := range sels {
		sel := MustParse(s)
		pre := sel.PrefixKeys("pcns.", nil, nil)
		for range 50 {
			labels := randomLabels(rng, sel.LabelKeys())
			prefixed := Map{}
			for k, v := range labels {
				if k == NamespaceLabel {
					prefixed[k] = v // global() reads it unprefixed
				} else {
					prefixed["pcns."+k] = v
				}
			}
			if sel.Evaluate(labels) != pre.Evaluate(prefixed) {
				t.Fatalf("%s on %v = %v, but %s on %v = %v", sel, labels, sel.Evaluate(labels), pre, prefixed, pre.Evaluate(prefixed))
			}
		}
	}
}

func TestRequiredKeys(t *testing.T) {
	tests := []struct {
		sel  string
		want []string
	}{
		{"all()", nil},
		{"global()", nil},
		{"has(a)", []string{"a"}},
		{"a == 'x' && b != 'y' && c not in {'z'}", []string{"a"}},
		{"a starts with 'x' && b ends with 'y' && c contains 'z' && d in {}", []string{"a", "b", "c", "d"}},
		{"(a == 'x' && b == 'y') || (b == 'z' && c == 'w')", []string{"b"}},
		{"a == 'x' || has(b)", nil},
		{"!has(a)", nil},
		{"!(a != 'x')", nil}, // under a negation nothing is required (conservative)
		{"has(a) && has(a) && (a == 'x' || a in {'y'})", []string{"a"}},
	}
	for _, tc := range tests {
		if got := MustParse(tc.sel).RequiredKeys(); !slices.Equal(got, tc.want) {
			t.Errorf("RequiredKeys(%q) = %q, want %q", tc.sel, got, tc.want)
		}
	}
}

// TestRequiredKeysAreRequired: every label set a selector matches has all its required keys.
func TestRequiredKeysAreRequired(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range append(fixtureSelectors(t), "(a == 'x' && b == 'y') || (b == 'z' && has(a))") {
		sel := MustParse(s)
		req := sel.RequiredKeys()
		for range 200 {
			labels := randomLabels(rng, sel.LabelKeys())
			if !sel.Evaluate(labels) {
				continue
			}
			for _, k := range req {
				if _, ok := labels[k]; !ok {
					t.Fatalf("%s matches %v without required key %s", sel, labels, k)
				}
			}
		}
	}
}

// randomLabels draws a label set over keys, with values taken from the selectors' own
// vocabulary, so that matches are likely.
func randomLabels(rng *rand.Rand, keys []string) Map {
	values := []string{"x", "y", "z", "w", "web", "prod", "staging", "true", "", "openstack"}
	m := Map{}
	for _, k := range keys {
		if rng.IntN(3) > 0 {
			m[k] = values[rng.IntN(len(values))]
		}
	}
	if rng.IntN(2) == 0 {
		m[strings.ToUpper("extra")] = "1"
	}
	return m
}

package selector

import (
	"reflect"
	"slices"
	"testing"
)

func TestLabelKeys(t *testing.T) {
	tests := []struct {
		sel  string
		want []string
	}{
		{"", []string{}},
		{"all()", []string{}},
		{"global()", []string{NamespaceLabel}},
		{`b == "1" && a != "2" || has(c) && !d in {"x"} || b contains "z"`, []string{"a", "b", "c", "d"}},
		{`x not in {} && y starts with "a" && z ends with "b"`, []string{"x", "y", "z"}},
	}
	for _, tc := range tests {
		sel := MustParse(tc.sel)
		got := sel.LabelKeys()
		if !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q).LabelKeys() = %q, want %q", tc.sel, got, tc.want)
		}
		if len(got) > 0 {
			got[0] = "mutated"
			if sel.LabelKeys()[0] == "mutated" {
				t.Errorf("LabelKeys of %q returned internal storage", tc.sel)
			}
		}
	}
}

func TestRequiredEqualities(t *testing.T) {
	tests := []struct {
		sel  string
		want map[string][]string
	}{
		{"", nil},
		{"has(a)", nil},
		{"global()", nil},
		{`a != "x"`, nil},
		{`a not in {"x"}`, nil},
		{`!a == "x"`, nil},
		{`a == "x" || b == "y"`, nil},
		{`a == "x" || a == "y"`, nil},
		{`a == "x"`, map[string][]string{"a": {"x"}}},
		{`a in {"y", "x", "y"}`, map[string][]string{"a": {"x", "y"}}},
		{`a == "x" && has(b) && c in {"2", "1"} && d != "z"`, map[string][]string{"a": {"x"}, "c": {"1", "2"}}},
		{`(a == "x" && (b == "y" && has(z))) && c == "w"`, map[string][]string{"a": {"x"}, "b": {"y"}, "c": {"w"}}},
		{`a == "x" && (b == "y" || c == "z")`, map[string][]string{"a": {"x"}}},
		{`a in {"x", "y", "z"} && a in {"y", "z", "w"}`, map[string][]string{"a": {"y", "z"}}},
		{`a in {"x", "y"} && a == "y"`, map[string][]string{"a": {"y"}}},
		{`a == "x" && a == "y"`, map[string][]string{"a": {}}},
		{`a in {}`, map[string][]string{"a": {}}},
		{`a in {} && a == "x"`, map[string][]string{"a": {}}},
	}
	for _, tc := range tests {
		sel := MustParse(tc.sel)
		got := sel.RequiredEqualities()
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q).RequiredEqualities() = %#v, want %#v", tc.sel, got, tc.want)
		}
		for k, vals := range got {
			if vals == nil {
				t.Errorf("Parse(%q).RequiredEqualities()[%q] is nil, want a non-nil slice", tc.sel, k)
			}
		}
	}
}

// TestRequiredEqualitiesAreNecessary checks the hints' contract on every (selector, label
// set) pair of the evaluation table: a matching label set has every hinted key with one of
// the hinted values.
func TestRequiredEqualitiesAreNecessary(t *testing.T) {
	for _, tc := range evaluateTests {
		sel := MustParse(tc.sel)
		hints := sel.RequiredEqualities()
		for _, m := range append(slices.Clone(tc.match), tc.not...) {
			if !sel.EvaluateMap(m) {
				continue
			}
			for k, vals := range hints {
				v, ok := m[k]
				if !ok || !slices.Contains(vals, v) {
					t.Errorf("%q matches %v but hint %s in %q is not satisfied", tc.sel, m, k, vals)
				}
			}
		}
	}
}

func TestRequiredEqualitiesFreshCopy(t *testing.T) {
	sel := MustParse(`a in {"x", "y"}`)
	sel.RequiredEqualities()["a"][0] = "mutated"
	if got := sel.RequiredEqualities()["a"]; !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("mutating the result changed the selector: %q", got)
	}
	if !sel.EvaluateMap(lm{"a": "x"}) {
		t.Error("mutating the result changed evaluation")
	}
}

func TestAnd(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{`role == 'web' && env in {'prod'}`, `projectcalico.org/namespace == 'ns1'`,
			`((role == "web" && env in {"prod"}) && projectcalico.org/namespace == "ns1")`},
		{`all()`, `has(a)`, `(all() && has(a))`},
		{`a == "1" || b == "2"`, `!has(c)`, `((a == "1" || b == "2") && !has(c))`},
	}
	for _, tc := range tests {
		a, b := MustParse(tc.a), MustParse(tc.b)
		got := And(a, b)
		if got.String() != tc.want {
			t.Errorf("And(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
		viaText := MustParse("(" + tc.a + ") && (" + tc.b + ")")
		if !reflect.DeepEqual(got.root, viaText.root) || got.UniqueID() != viaText.UniqueID() {
			t.Errorf("And(%q, %q) differs from parsing the conjunction text (%q)", tc.a, tc.b, viaText)
		}
		checkRoundTrip(t, got)
		if a.String() != MustParse(tc.a).String() || b.String() != MustParse(tc.b).String() {
			t.Errorf("And modified its operands")
		}
	}
	sel := And(MustParse(`role == "web"`), MustParse(`projectcalico.org/namespace == "ns1"`))
	if !sel.EvaluateMap(lm{"role": "web", NamespaceLabel: "ns1"}) || sel.EvaluateMap(lm{"role": "web", NamespaceLabel: "ns2"}) {
		t.Error("And does not evaluate as a conjunction")
	}
	if got := And(nil, MustParse("has(a)")).String(); got != "(all() && has(a))" {
		t.Errorf("And(nil, has(a)) = %q", got)
	}
}

func TestEqual(t *testing.T) {
	if !MustParse(`a=='b'&&c in{'e','d'}`).Equal(MustParse(`a == "b" && c in {"d", "e"}`)) {
		t.Error("equivalent spellings should be Equal")
	}
	if MustParse(`a == "b"`).Equal(MustParse(`a == "c"`)) {
		t.Error("different selectors should not be Equal")
	}
}

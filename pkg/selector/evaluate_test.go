package selector

import (
	"testing"
)

type lm = map[string]string

// evaluateTests: each selector with label sets it must match and must not match. Includes
// Calico's own evaluation table (parser_test.go selectorTests).
var evaluateTests = []struct {
	sel        string
	match, not []lm
}{
	{`a == "b"`, []lm{{"a": "b"}, {"a": "b", "c": "d"}}, []lm{{}, {"a": "c"}, {"c": "d"}, {"a": "B"}, {"a": "b "}}},
	{`a == ""`, []lm{{"a": ""}}, []lm{{}, {"a": "x"}}},
	{`a != "b"`, []lm{{}, {"a": "c"}, {"a": ""}}, []lm{{"a": "b"}}},
	{`a == "b" && c == "d"`, []lm{{"a": "b", "c": "d"}}, []lm{{}, {"a": "b", "c": "e"}, {"a": "c", "c": "d"}, {"c": "d"}, {"a": "b"}}},
	{`a == "b" || c == "d"`, []lm{{"a": "b", "c": "d"}, {"a": "b"}, {"c": "d"}}, []lm{{}, {"a": "e", "c": "e"}, {"c": "e"}, {"a": "e"}}},
	{`a in {"'", '"', "c"}`, []lm{{"a": "c"}, {"a": `"`}, {"a": `'`}}, []lm{{}, {"a": "e"}}},
	{`a not in {"'", '"', "c"}`, []lm{{}, {"a": "e"}}, []lm{{"a": "c"}, {"a": `"`}, {"a": `'`}}},
	{`a in {}`, nil, []lm{{}, {"a": ""}, {"a": "x"}}},
	{`a not in {}`, []lm{{}, {"a": ""}, {"a": "x"}}, nil},
	{`a in {"0","1","2","3","4","5","6","7","8","9","10","11"}`, // large set: binary search
		[]lm{{"a": "0"}, {"a": "11"}, {"a": "5"}, {"a": "9"}}, []lm{{}, {"a": "12"}, {"a": "00"}, {"a": ""}}},
	{`a not in {"0","1","2","3","4","5","6","7","8","9","10","11"}`,
		[]lm{{}, {"a": "12"}}, []lm{{"a": "0"}, {"a": "11"}}},
	{`a contains "a"`, []lm{{"a": "a"}, {"a": "bab"}, {"a": "aaa", "b": "c"}}, []lm{{}, {"a": "b"}, {"b": "aaa"}}},
	{`a contains ""`, []lm{{"a": ""}, {"a": "x"}}, []lm{{}}},
	{`a starts with "a"`, []lm{{"a": "a"}, {"a": "abb"}}, []lm{{}, {"a": "b"}, {"a": "baa"}, {"b": "aaa"}}},
	{`a ends with "a"`, []lm{{"a": "a"}, {"a": "bba"}}, []lm{{}, {"a": "b"}, {"a": "aab"}, {"b": "aaa"}}},
	{`has(a)`, []lm{{"a": "b"}, {"a": ""}}, []lm{{}, {"b": "a"}}},
	{`!has(a)`, []lm{{}, {"b": "b"}}, []lm{{"a": "b"}}},
	{`!!has(b)`, []lm{{"b": ""}}, []lm{{"a": "b"}}},
	{`!!! has(a)`, []lm{{}}, []lm{{"a": "b"}}},
	{`! !!has(a)`, []lm{{}}, []lm{{"a": "b"}}},
	{`!(!has(a))`, []lm{{"a": "x"}}, []lm{{}}},
	{``, []lm{{}, {"a": "b"}}, nil},
	{`all()`, []lm{{}, {"a": "b"}}, nil},
	{`!all()`, nil, []lm{{}, {"a": "b"}}},
	{`global()`, []lm{{}, {"a": "b"}}, []lm{{NamespaceLabel: "ns1"}, {NamespaceLabel: ""}}},
	{`!global()`, []lm{{NamespaceLabel: "ns1"}}, []lm{{}}},
	{`!a in {"a"}`, []lm{{"a": "b"}, {}}, []lm{{"a": "a"}}},
	{`!a == "a1" && b == "b1"`, []lm{{"b": "b1"}, {"a": "x", "b": "b1"}}, []lm{{"a": "a1", "b": "b1"}}},
	{`a != 'a1' && !b == 'b1'`, []lm{{}}, []lm{{"a": "a1", "b": "b1"}, {"b": "b1"}}},
	{`has(a) && !has(b)`, []lm{{"a": "a"}}, []lm{{"a": "a", "b": ""}, {}}},
	{`!(!has(a) || has(b))`, []lm{{"a": "a"}}, []lm{{}, {"a": "a", "b": "b"}}},
	{`! a == 'a1' || ! b == 'b1'`, []lm{{}, {"a": "a1"}}, []lm{{"a": "a1", "b": "b1"}}},
	// Precedence: && binds tighter than ||, ! tighter than both.
	{`a == "1" || b == "2" && c == "3"`, []lm{{"a": "1"}, {"b": "2", "c": "3"}}, []lm{{"b": "2"}, {"c": "3"}}},
	{`(a == "1" || b == "2") && c == "3"`, []lm{{"a": "1", "c": "3"}, {"b": "2", "c": "3"}}, []lm{{"a": "1"}, {"c": "3"}}},
	{`!a == "1" || b == "2"`, []lm{{}, {"a": "1", "b": "2"}}, []lm{{"a": "1"}}},
	{`!(a == "1" || b == "2")`, []lm{{}, {"a": "2"}}, []lm{{"a": "1"}, {"b": "2"}}},
	// Fixture selectors.
	{`role == 'web' && env in {'prod', 'staging'}`, []lm{{"role": "web", "env": "staging"}}, []lm{{"role": "web"}, {"role": "db", "env": "prod"}}},
	{`has(sg.projectcalico.org/openstack-3b2c1f0e)`, []lm{{"sg.projectcalico.org/openstack-3b2c1f0e": ""}}, []lm{{"sg.projectcalico.org/openstack-3b2c1f0f": ""}}},
}

func TestEvaluate(t *testing.T) {
	for _, tc := range evaluateTests {
		sel, err := Parse(tc.sel)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.sel, err)
			continue
		}
		again := MustParse(sel.String())
		for _, s := range []*Selector{sel, again} {
			for _, m := range tc.match {
				if !s.EvaluateMap(m) || !s.Evaluate(Map(m)) || !s.Evaluate(layered{m, nil}) {
					t.Errorf("%q (canonical %q) does not match %v", tc.sel, s, m)
				}
			}
			for _, m := range tc.not {
				if s.EvaluateMap(m) || s.Evaluate(Map(m)) || s.Evaluate(layered{m, nil}) {
					t.Errorf("%q (canonical %q) matches %v", tc.sel, s, m)
				}
			}
		}
	}
}

// layered is a Labels that looks in own first and then in parent, as callers do for
// inherited labels.
type layered struct {
	own    map[string]string
	parent Labels
}

func (l layered) Get(k string) (string, bool) {
	if v, ok := l.own[k]; ok {
		return v, true
	}
	if l.parent == nil {
		return "", false
	}
	return l.parent.Get(k)
}

func TestEvaluateLayeredLabels(t *testing.T) {
	sel := MustParse(`role == "web" && projectcalico.org/namespace == "prod"`)
	parent := Map{"projectcalico.org/namespace": "prod", "role": "db"}
	if !sel.Evaluate(layered{lm{"role": "web"}, parent}) {
		t.Error("own label should override the inherited one")
	}
	if sel.Evaluate(layered{lm{}, parent}) {
		t.Error("inherited role=db must not match role == web")
	}
}

func TestEvaluateDoesNotAllocate(t *testing.T) {
	sel := MustParse(`a == "1" && b in {"x","y","z","0","1","2","3","4","5","6"} && !has(c) && ` +
		`(d starts with "p" || e ends with "s") && f contains "q" && g not in {"h"} && global()`)
	m := map[string]string{"a": "1", "b": "5", "d": "pq", "f": "aqa"}
	if !sel.EvaluateMap(m) {
		t.Fatal("selector should match")
	}
	var l Labels = layered{m, Map{"e": "s"}} // converted once: boxing a struct allocates
	if n := testing.AllocsPerRun(100, func() { sel.EvaluateMap(m); sel.Evaluate(l) }); n != 0 {
		t.Errorf("Evaluate allocates %v times per run, want 0", n)
	}
}

func TestNilSelectorIsAll(t *testing.T) {
	var s *Selector
	all := MustParse("all()")
	if !s.IsAll() || !s.EvaluateMap(nil) || s.String() != "all()" || s.UniqueID() != all.UniqueID() ||
		len(s.LabelKeys()) != 0 || s.RequiredEqualities() != nil || !s.Equal(all) {
		t.Errorf("nil selector does not behave as all()")
	}
}

func TestIsAll(t *testing.T) {
	for in, want := range map[string]bool{
		"": true, " ": true, "all()": true, "(all())": true, "!!all()": true,
		"!all()": false, "global()": false, "all() && all()": false, "has(a)": false,
	} {
		if got := MustParse(in).IsAll(); got != want {
			t.Errorf("Parse(%q).IsAll() = %v, want %v", in, got, want)
		}
	}
}

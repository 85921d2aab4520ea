package calc

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/selector"
)

// matchRecorder records the index's current matches from its callbacks.
type matchRecorder struct {
	t       *testing.T
	matches map[[2]string]bool
}

func (r *matchRecorder) onMatch(selID, itemID string, matched bool) {
	k := [2]string{selID, itemID}
	if r.matches[k] == matched {
		r.t.Fatalf("duplicate callback %v matched=%v", k, matched)
	}
	if matched {
		r.matches[k] = true
	} else {
		delete(r.matches, k)
	}
}

func TestChooseAnchor(t *testing.T) {
	tests := []struct {
		sel  string
		want anchor
	}{
		{`role == "web"`, anchor{kind: anchorKV, key: "role", values: []string{"web"}}},
		{`(projectcalico.org/namespace == "ns1") && (role in {"a", "b"})`, anchor{kind: anchorKV, key: "role", values: []string{"a", "b"}}},
		{`(projectcalico.org/namespace == "openstack") && (has(sg.projectcalico.org/openstack-1))`,
			anchor{kind: anchorKey, key: "sg.projectcalico.org/openstack-1"}},
		{`projectcalico.org/namespace == "ns1"`, anchor{kind: anchorKV, key: "projectcalico.org/namespace", values: []string{"ns1"}}},
		{`has(a) || has(b)`, anchor{kind: anchorScan}},
		{`(has(a) && x == "1") || (has(a) && y == "2")`, anchor{kind: anchorKey, key: "a"}},
		{`app contains "x"`, anchor{kind: anchorKey, key: "app"}},
		{`app != "x"`, anchor{kind: anchorScan}},
		{`!has(a)`, anchor{kind: anchorScan}},
		{`all()`, anchor{kind: anchorScan}},
		{`a == "x" && a == "y"`, anchor{kind: anchorKV, key: "a", values: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.sel, func(t *testing.T) {
			got := newLabelIndex(nil).chooseAnchor(anchorOptions(selector.MustParse(tc.sel)))
			if got.kind != tc.want.kind || got.key != tc.want.key || !slices.Equal(got.values, tc.want.values) {
				t.Errorf("anchor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestChooseAnchorByCount(t *testing.T) {
	x := newLabelIndex(func(string, string, bool) {})
	for i := 0; i < 10; i++ {
		x.UpdateItem(fmt.Sprint(i), map[string]string{"team": "red", "role": fmt.Sprint(i % 5)})
	}
	// "role" is static-ranked after "team" (key order) but has fewer items behind the value.
	x.UpdateSelector("s", selector.MustParse(`team == "red" && role == "1"`))
	if got := x.sels["s"].anchor; got.key != "role" {
		t.Errorf("anchor = %+v, want the role pair", got)
	}
}

func TestLabelIndexSteps(t *testing.T) {
	rec := &matchRecorder{t: t, matches: map[[2]string]bool{}}
	x := newLabelIndex(rec.onMatch)
	steps := []struct {
		name string
		do   func()
		want []string // "sel/item"
	}{
		{"selectors before items", func() {
			x.UpdateSelector("web", selector.MustParse("role == 'web'"))
			x.UpdateSelector("hasenv", selector.MustParse("has(env)"))
			x.UpdateSelector("notdb", selector.MustParse("role != 'db'"))
		}, nil},
		{"items arrive", func() {
			x.UpdateItem("a", map[string]string{"role": "web"})
			x.UpdateItem("b", map[string]string{"role": "db", "env": "prod"})
		}, []string{"hasenv/b", "notdb/a", "web/a"}},
		{"label change moves an item", func() { x.UpdateItem("a", map[string]string{"role": "db", "env": "dev"}) },
			[]string{"hasenv/a", "hasenv/b"}},
		{"selector replaced", func() { x.UpdateSelector("web", selector.MustParse("role == 'db'")) },
			[]string{"hasenv/a", "hasenv/b", "web/a", "web/b"}},
		{"item deleted", func() { x.DeleteItem("b") }, []string{"hasenv/a", "web/a"}},
		{"selector deleted", func() { x.DeleteSelector("hasenv") }, []string{"web/a"}},
	}
	for _, st := range steps {
		st.do()
		var got []string
		for k := range rec.matches {
			got = append(got, k[0]+"/"+k[1])
		}
		slices.Sort(got)
		if !slices.Equal(got, st.want) {
			t.Errorf("%s: matches = %v, want %v", st.name, got, st.want)
		}
	}
}

// TestLabelIndexAgainstBruteForce applies random changes and compares the reported matches with
// evaluating every selector against every item.
func TestLabelIndexAgainstBruteForce(t *testing.T) {
	sels := []string{"role == 'web'", "role in {'web', 'db'}", "has(env)", "env == 'prod' && has(role)", "all()",
		"!has(app)", "app == 'a' || role == 'db'", "(has(x) && y == '1') || (has(x) && z == '2')", "role != 'db'"}
	r := rand.New(rand.NewPCG(1, 2))
	rec := &matchRecorder{t: t, matches: map[[2]string]bool{}}
	x := newLabelIndex(rec.onMatch)
	labelsOf := map[string]map[string]string{}
	selOf := map[string]*selector.Selector{}
	for i := 0; i < 3000; i++ {
		id := fmt.Sprint(r.IntN(12))
		switch r.IntN(4) {
		case 0:
			s := selector.MustParse(sels[r.IntN(len(sels))])
			x.UpdateSelector(id, s)
			selOf[id] = s
		case 1:
			x.DeleteSelector(id)
			delete(selOf, id)
		case 2:
			l := map[string]string{}
			for _, k := range []string{"role", "env", "app", "x", "y", "z", "unselected"} {
				if r.IntN(2) == 0 {
					l[k] = []string{"web", "db", "prod", "a", "1", "2"}[r.IntN(6)]
				}
			}
			x.UpdateItem(id, l)
			labelsOf[id] = l
		default:
			x.DeleteItem(id)
			delete(labelsOf, id)
		}
		want := map[[2]string]bool{}
		for sid, s := range selOf {
			for iid, l := range labelsOf {
				if s.EvaluateMap(l) {
					want[[2]string{sid, iid}] = true
				}
			}
		}
		if !maps.Equal(want, rec.matches) {
			t.Fatalf("step %d: index matches differ from brute force", i)
		}
	}
}

// TestPrefixed: namespace and service-account selectors are rewritten as libcalico's
// parseSelectorAttachPrefix does.
func TestPrefixed(t *testing.T) {
	tests := []struct {
		in   string
		kp   keyPrefixing
		want string
	}{
		{"env == 'prod'", namespacePrefixing, `pcns.env == "prod"`},
		{"all()", namespacePrefixing, `has(projectcalico.org/namespace)`},
		{"global()", namespacePrefixing, `!has(projectcalico.org/namespace)`},
		{"has(a) && !(b in {'x', 'y'}) || c starts with 'z'", namespacePrefixing,
			`((has(pcns.a) && !pcns.b in {"x", "y"}) || pcns.c starts with "z")`},
		{"a ends with 'q' && d contains \"it's\"", svcAcctPrefixing, `(pcsa.a ends with "q" && pcsa.d contains "it's")`},
		{"all()", svcAcctPrefixing, `has(projectcalico.org/serviceaccount)`},
		{"global()", svcAcctPrefixing, `global()`},
	}
	for _, tc := range tests {
		got, err := prefixed("selector", tc.in, tc.kp)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if canon := selector.MustParse(got).String(); canon != selector.MustParse(tc.want).String() {
			t.Errorf("prefixed(%s) = %s, want %s", tc.in, canon, tc.want)
		}
	}
	if _, err := prefixed("namespaceSelector", "a ==", namespacePrefixing); err == nil || !strings.Contains(err.Error(), "namespaceSelector") {
		t.Errorf("bad selector: %v, want an error naming the field", err)
	}
}

// TestLabelIndexFilesSelectedKeysOnly: items are filed under the keys that selectors could be
// anchored on, no others; a selector with a new key finds the items already there, and a key
// that no selector uses any more is dropped.
func TestLabelIndexFilesSelectedKeysOnly(t *testing.T) {
	rec := &matchRecorder{t: t, matches: map[[2]string]bool{}}
	x := newLabelIndex(rec.onMatch)
	x.UpdateItem("a", map[string]string{"role": "web", "pod-template-hash": "1", "env": "prod"})
	x.UpdateItem("b", map[string]string{"role": "db", "pod-template-hash": "2"})
	if len(x.itemsByKV) != 0 {
		t.Fatalf("items filed under keys no selector uses: %v", slices.Collect(maps.Keys(x.itemsByKV)))
	}
	x.UpdateSelector("web", selector.MustParse(`role == "web" && has(env)`))
	x.UpdateSelector("db", selector.MustParse(`role == "db"`))
	if got := slices.Sorted(maps.Keys(x.itemsByKV)); !slices.Equal(got, []string{"env", "role"}) {
		t.Fatalf("indexed keys = %v, want [env role]", got)
	}
	if !rec.matches[[2]string{"web", "a"}] || !rec.matches[[2]string{"db", "b"}] || len(rec.matches) != 2 {
		t.Fatalf("matches = %v", rec.matches)
	}
	x.UpdateItem("c", map[string]string{"role": "web", "env": "dev"})
	x.DeleteSelector("web")
	if got := slices.Sorted(maps.Keys(x.itemsByKV)); !slices.Equal(got, []string{"role"}) {
		t.Fatalf("indexed keys after the env selector went = %v, want [role]", got)
	}
	x.UpdateSelector("env", selector.MustParse(`env == "dev"`))
	if !rec.matches[[2]string{"env", "c"}] || len(rec.matches) != 2 {
		t.Fatalf("a selector on a key indexed again missed items: %v", rec.matches)
	}
}

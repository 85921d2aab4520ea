package calc

import "testing"

func TestLabelSetsShareEqualMaps(t *testing.T) {
	s := newLabelSets()
	a := s.intern(map[string]string{"app": "web", "env": "prod"})
	b := s.intern(map[string]string{"env": "prod", "app": "web"})
	c := s.intern(map[string]string{"app": "web", "env": "dev"})
	if !sameMap(a, b) || sameMap(a, c) {
		t.Fatalf("equal label maps must be shared, different ones not")
	}
	// Keys and values are length-prefixed: these two must not collide.
	d := s.intern(map[string]string{"a": "b:c"})
	e := s.intern(map[string]string{"a:b": "c"})
	if sameMap(d, e) {
		t.Fatalf("%v and %v were taken for the same labels", d, e)
	}
	s.release(a)
	if f := s.intern(map[string]string{"app": "web", "env": "prod"}); !sameMap(f, a) {
		t.Fatalf("a label set with a holder left was forgotten")
	}
	for _, m := range []map[string]string{b, c, d, e, a} {
		s.release(m)
	}
	if len(s.byKey) != 0 {
		t.Fatalf("label sets left after their last holder: %d", len(s.byKey))
	}
}

func TestItemsShareLabels(t *testing.T) {
	r := newItemRegistry(newLabelIndex(func(string, string, bool) {}), newLabelIndex(func(string, string, bool) {}),
		func(string, *item, *item) {})
	wl := func() *item {
		return &item{kind: itemWorkload, own: map[string]string{"app": "web"}, ns: "ns-1", local: true}
	}
	r.update("a", wl())
	r.update("b", wl())
	if !sameMap(r.items["a"].flat, r.items["b"].flat) || !sameMap(r.items["a"].own, r.items["b"].own) {
		t.Fatalf("two endpoints with the same labels hold two copies")
	}
	r.update("b", &item{kind: itemWorkload, own: map[string]string{"app": "db"}, ns: "ns-1", local: true})
	if got := r.items["a"].flat["app"]; got != "web" {
		t.Fatalf("changing b's labels changed a's: app=%q", got)
	}
	r.remove("a")
	r.remove("b")
	if len(r.labels.byKey) != 0 {
		t.Fatalf("label sets left after the items went: %d", len(r.labels.byKey))
	}
}

// sameMap reports whether two maps are the same map (not only equal).
func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	a["\x00probe"] = "x"
	defer delete(a, "\x00probe")
	return b["\x00probe"] == "x"
}

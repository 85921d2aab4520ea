package selector

import "slices"

// RequiredEqualities returns equality hints for an inverted label index.
//
// When the selector is a comparison `k == "v"` or `k in {...}`, or a conjunction (&&, at any
// depth of nested && groups) containing such terms, the result maps each such key k to the
// sorted values one of which k must have in any label set the selector matches. A label set
// lacking k, or with another value, never matches, so an index can look up candidates by
// (k, v) instead of evaluating the selector against every label set.
//
// Several terms on the same key intersect (`a in {"x", "y"} && a == "y"` gives a: [y]). A
// key mapped to an empty, non-nil slice means the selector matches nothing (`a == "x" &&
// a == "y"`, or `a in {}`).
//
// The hints are necessary, not sufficient: callers must still Evaluate the candidates. Terms
// under ||, ! or a negative operator (!=, not in) give no hints, and the result is nil when
// there are no hints at all (for example for all(), has(k), or `a == "x" || b == "y"`).
// The result is freshly allocated; the caller may modify it.
func (s *Selector) RequiredEqualities() map[string][]string {
	var out map[string][]string
	s.orAll().root.collectEqualities(&out)
	return out
}

// collectEqualities adds the equality hints of n, a conjunct of the whole selector, to *out.
func (n *node) collectEqualities(out *map[string][]string) {
	var vals []string
	switch n.op {
	case opAnd:
		for _, k := range n.kids {
			k.collectEqualities(out)
		}
		return
	case opEq:
		vals = []string{n.value}
	case opIn:
		vals = slices.Clone(n.set) // sorted and distinct already
		if vals == nil {
			vals = []string{}
		}
	default:
		return
	}
	if *out == nil {
		*out = make(map[string][]string)
	}
	if prev, ok := (*out)[n.key]; ok {
		vals = intersectSorted(prev, vals)
	}
	(*out)[n.key] = vals
}

// intersectSorted returns the values present in both sorted slices, as a non-nil slice.
func intersectSorted(a, b []string) []string {
	out := []string{}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

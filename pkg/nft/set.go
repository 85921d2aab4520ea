package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Set is a named set: a key type, the interval flag and elements. An
// interval set holds ranges (and single keys); the Table merges its
// overlapping and adjacent ranges, as the kernel holds their union (the
// kernel refuses overlapping ones). A concatenated interval set holds
// boxes, one range per field, normalized to disjoint boxes (boxes.go).
type Set struct {
	Name     string
	Type     DataType
	Interval bool
	Elements []Element
	// Handle and Unread describe a set read from a backend: its handle
	// there (a new set gets a new one) and whether its elements were left
	// unread (ReadOptions). Desired sets leave them zero.
	Handle uint64
	Unread bool
}

// Map is a named verdict map: `type KEY : verdict`.
type Map struct {
	Name     string
	Type     DataType
	Elements map[Key]Verdict
}

// MapElement is one element of a verdict map.
type MapElement struct {
	Key     Key
	Verdict Verdict
}

// normalizeElements checks elements against type t and returns them
// sorted by first key, without duplicates and, for an interval set, as the
// kernel takes them: ranges merged, boxes made disjoint (exactly the same
// keys). It reuses elems' backing array (except for boxes).
func normalizeElements(t DataType, interval bool, elems []Element) ([]Element, error) {
	n := t.KeyLen()
	for _, e := range elems {
		switch {
		case !e.Valid() || e.KeyLen() != n:
			return nil, fmt.Errorf("element %s of %d bytes for type %s (%d bytes)", rawElement(e), max(e.KeyLen(), 0), t, n)
		case e.IsRange() && !interval:
			return nil, fmt.Errorf("range %s in a set without the interval flag", t.formatElement(e))
		}
	}
	if !slices.IsSortedFunc(elems, compareElems) {
		slices.SortFunc(elems, compareElems)
	}
	switch {
	case interval && t.IsConcat():
		return mergeBoxes(t, elems), nil
	case interval:
		return mergeRanges(elems), nil
	}
	return slices.CompactFunc(elems, func(a, b Element) bool { return a == b }), nil
}

// rawElement names an element that does not fit its type: its bytes in hex (a range as lo-hi),
// or "(empty)".
func rawElement(e Element) string {
	if !e.Valid() || e.KeyLen() <= 0 {
		return "(empty)"
	}
	lo, hi := e.Bounds()
	if e.IsRange() {
		return fmt.Sprintf("0x%x-0x%x", lo.Raw(), hi.Raw())
	}
	return fmt.Sprintf("0x%x", lo.Raw())
}

// mergeRanges merges sorted ranges that overlap or touch, in place. An
// element that merges with nothing is kept as it is (no new string).
func mergeRanges(elems []Element) []Element {
	out := elems[:0]
	var cur Element // the element being extended
	var lo, hi string
	flush := func() {
		if lo == "" {
			return
		}
		if clo, chi := cur.Bounds(); clo.raw != lo || chi.raw != hi {
			cur = RangeElem(Key{raw: lo}, Key{raw: hi})
		}
		out = append(out, cur)
	}
	for _, e := range elems {
		elo, ehi := e.Bounds()
		if lo != "" && touches(hi, elo.raw) {
			hi = max(hi, ehi.raw)
			continue
		}
		flush()
		cur, lo, hi = e, elo.raw, ehi.raw
	}
	flush()
	return out
}

// touches reports whether key lo (of hi's length) is at most hi+1: a range
// starting at lo overlaps or extends one ending at hi. It allocates nothing.
func touches(hi, lo string) bool {
	if lo <= hi {
		return true
	}
	k := len(hi) - 1
	for ; k >= 0 && hi[k] == 0xff; k-- {
		if lo[k] != 0 {
			return false
		}
	}
	return k >= 0 && lo[k] == hi[k]+1 && lo[:k] == hi[:k]
}

// normalize checks a set's declaration and elements, normalizing them.
func (s *Set) normalize() error {
	if !ValidName(s.Name) {
		return fmt.Errorf("invalid set name %q", s.Name)
	}
	if !s.Type.Valid() {
		return fmt.Errorf("set %s: invalid key type", s.Name)
	}
	if s.Interval && !s.Type.Ordered() {
		return fmt.Errorf("set %s: type %s cannot have the interval flag", s.Name, s.Type)
	}
	elems, err := normalizeElements(s.Type, s.Interval, s.Elements)
	if err != nil {
		return fmt.Errorf("set %s: %w", s.Name, err)
	}
	s.Elements = elems
	return nil
}

// validate checks a map's declaration and keys.
func (m *Map) validate() error {
	if !ValidName(m.Name) {
		return fmt.Errorf("invalid map name %q", m.Name)
	}
	if !m.Type.Valid() {
		return fmt.Errorf("map %s: invalid key type", m.Name)
	}
	n := m.Type.KeyLen()
	for k, v := range m.Elements {
		if k.Len() != n {
			return fmt.Errorf("map %s: key of %d bytes for type %s (%d bytes)", m.Name, k.Len(), m.Type, n)
		}
		if _, err := v.VM(); err != nil {
			return fmt.Errorf("map %s key %s: %w", m.Name, m.Type.format([]byte(k.raw)), err)
		}
	}
	return nil
}

// SortedElements returns the map's elements sorted by key.
func (m *Map) SortedElements() []MapElement {
	out := make([]MapElement, 0, len(m.Elements))
	for _, k := range slices.SortedFunc(maps.Keys(m.Elements), func(a, b Key) int { return strings.Compare(a.raw, b.raw) }) {
		out = append(out, MapElement{Key: k, Verdict: m.Elements[k]})
	}
	return out
}

// refs lists the chains the map's verdicts jump or go to.
func (m *Map) refs(visit func(Ref)) {
	for _, v := range m.Elements {
		v.refs(visit)
	}
}

// DiffElements compares two sorted, normalized element lists: the elements
// only in b (add) and only in a (del).
func DiffElements(a, b []Element) (add, del []Element) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i] == b[j] { // the common case: no need to order them
			i, j = i+1, j+1
			continue
		}
		switch {
		case j == len(b) || (i < len(a) && compareElems(a[i], b[j]) < 0):
			del = append(del, a[i])
			i++
		case i == len(a) || compareElems(a[i], b[j]) > 0:
			add = append(add, b[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return add, del
}

// DiffMaps compares two verdict maps' elements: keys to add or whose verdict
// changed (put) and keys to delete (del). A changed verdict is a delete and
// an add of the key (the kernel cannot replace a map element's data).
func DiffMaps(a, b map[Key]Verdict) (put []MapElement, del []Key) {
	for k, v := range b {
		if old, ok := a[k]; !ok || old != v {
			put = append(put, MapElement{Key: k, Verdict: v})
			if ok {
				del = append(del, k)
			}
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			del = append(del, k)
		}
	}
	slices.SortFunc(put, func(x, y MapElement) int { return strings.Compare(x.Key.raw, y.Key.raw) })
	slices.SortFunc(del, func(x, y Key) int { return strings.Compare(x.raw, y.raw) })
	return put, del
}

// SortElements sorts elements as sets keep them: by first key, then last.
func SortElements(elems []Element) { slices.SortFunc(elems, compareElems) }

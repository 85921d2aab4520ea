package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// set is a set or verdict map, indexed for lookups of kernel keys: the
// bytes a lookup reads from the registers, of the set's key length.
type set interface {
	keyLen() int
	// has reports whether key is an element (for a verdict map, whether it
	// is a key, and its verdict).
	has(key string) (bool, vm.Verdict)
}

// newSet indexes the elements of a set of type t: a hash of keys (the
// kernel's hash backends), sorted intervals (rbtree), or per-field
// intervals of a concatenation (pipapo).
func newSet(t nft.DataType, interval bool, elems []nft.Element) (set, error) {
	n := t.KeyLen()
	for _, e := range elems {
		if lo, hi := e.Bounds(); lo.Len() != n || hi.Len() != n {
			return nil, fmt.Errorf("element of %d bytes in a set of %d-byte keys", lo.Len(), n)
		}
	}
	switch {
	case !interval:
		s := exactSet{n: n, keys: make(map[string]struct{}, len(elems))}
		for _, e := range elems {
			if e.IsRange() {
				return nil, fmt.Errorf("range %s in a set without the interval flag", t.FormatElement(e))
			}
			lo, _ := e.Bounds()
			s.keys[lo.Raw()] = struct{}{}
		}
		return s, nil
	case t.IsConcat():
		return newConcatSet(t, elems), nil
	}
	return newIntervalSet(n, elems), nil
}

// exactSet is a set of single keys.
type exactSet struct {
	n    int
	keys map[string]struct{}
}

func (s exactSet) keyLen() int { return s.n }

func (s exactSet) has(key string) (bool, vm.Verdict) {
	_, ok := s.keys[key]
	return ok, vm.Verdict{}
}

// intervalSet holds ranges sorted by first key, and for each position the
// largest last key of the ranges up to it, so that a lookup is one binary
// search whether or not the ranges overlap.
type intervalSet struct {
	n         int
	lo, maxHi []string
}

func newIntervalSet(n int, elems []nft.Element) intervalSet {
	type span struct{ lo, hi string }
	spans := make([]span, len(elems))
	for i, e := range elems {
		lo, hi := e.Bounds()
		spans[i] = span{lo.Raw(), hi.Raw()}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.lo < b.lo {
			return -1
		}
		if a.lo > b.lo {
			return 1
		}
		return 0
	})
	s := intervalSet{n: n, lo: make([]string, len(spans)), maxHi: make([]string, len(spans))}
	for i, sp := range spans {
		s.lo[i], s.maxHi[i] = sp.lo, sp.hi
		if i > 0 && s.maxHi[i-1] > sp.hi {
			s.maxHi[i] = s.maxHi[i-1]
		}
	}
	return s
}

func (s intervalSet) keyLen() int { return s.n }

func (s intervalSet) has(key string) (bool, vm.Verdict) {
	// j: the number of ranges starting at or before key.
	j := sort.Search(len(s.lo), func(i int) bool { return s.lo[i] > key })
	return j > 0 && s.maxHi[j-1] >= key, vm.Verdict{}
}

// concatSet is an interval set of a concatenation: a key is an element
// when each of its fields lies within the element's range of that field
// (nft_set_pipapo). Elements are sorted by the first field's first key so
// that a lookup skips those starting after the key's first field.
type concatSet struct {
	n      int
	fields [][2]int // offset and length of each field
	lo, hi []string
}

func newConcatSet(t nft.DataType, elems []nft.Element) concatSet {
	s := concatSet{n: t.KeyLen()}
	off := 0
	for _, l := range t.FieldLens() {
		s.fields = append(s.fields, [2]int{off, l})
		off += (l + 3) &^ 3
	}
	sorted := slices.Clone(elems)
	nft.SortElements(sorted)
	for _, e := range sorted {
		lo, hi := e.Bounds()
		s.lo, s.hi = append(s.lo, lo.Raw()), append(s.hi, hi.Raw())
	}
	return s
}

func (s concatSet) keyLen() int { return s.n }

func (s concatSet) has(key string) (bool, vm.Verdict) {
	f0 := s.fields[0]
	first := key[f0[0] : f0[0]+f0[1]]
	end := sort.Search(len(s.lo), func(i int) bool { return s.lo[i][:f0[1]] > first })
	for i := range end {
		if s.contains(i, key) {
			return true, vm.Verdict{}
		}
	}
	return false, vm.Verdict{}
}

func (s concatSet) contains(i int, key string) bool {
	for _, f := range s.fields {
		k := key[f[0] : f[0]+f[1]]
		if k < s.lo[i][f[0]:f[0]+f[1]] || k > s.hi[i][f[0]:f[0]+f[1]] {
			return false
		}
	}
	return true
}

// verdictMap is a verdict map (the model's maps have no intervals).
type verdictMap struct {
	n        int
	verdicts map[string]vm.Verdict
}

func newVerdictMap(m *nft.Map) (verdictMap, error) {
	out := verdictMap{n: m.Type.KeyLen(), verdicts: make(map[string]vm.Verdict, len(m.Elements))}
	for k, v := range m.Elements {
		x, err := v.VM()
		if err != nil {
			return verdictMap{}, fmt.Errorf("map %s: %w", m.Name, err)
		}
		if k.Len() != out.n {
			return verdictMap{}, fmt.Errorf("map %s: key of %d bytes, want %d", m.Name, k.Len(), out.n)
		}
		out.verdicts[k.Raw()] = x
	}
	return out, nil
}

func (m verdictMap) keyLen() int { return m.n }

func (m verdictMap) has(key string) (bool, vm.Verdict) {
	v, ok := m.verdicts[key]
	return ok, v
}

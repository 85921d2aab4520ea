package dataplane

import (
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// families indexes per-family state: 0 is IPv4, 1 is IPv6.
var families = [2]nft.Family{nft.IPv4, nft.IPv6}

// ipSet is one calc IP set, kept as sorted nft element texts per family so that a delta costs
// a binary search and a copy, not a rebuild of a large set.
type ipSet struct {
	typ     calc.IPSetType
	version uint64            // bumped by every change of the members
	count   [2]map[string]int // element text -> number of members that render to it
	elems   [2][]string       // sorted keys of count
}

func newIPSet(typ calc.IPSetType, members []calc.IPSetMember) *ipSet {
	s := &ipSet{typ: typ}
	for i := range s.count {
		s.count[i] = map[string]int{}
	}
	for _, m := range members {
		s.add(m)
	}
	for i := range s.elems {
		s.elems[i] = make([]string, 0, len(s.count[i]))
		for e := range s.count[i] {
			s.elems[i] = append(s.elems[i], e)
		}
		slices.Sort(s.elems[i])
	}
	return s
}

// add counts a member; it reports the family index and text when the element is new.
func (s *ipSet) add(m calc.IPSetMember) (int, string, bool) {
	for i, f := range families {
		if e, ok := rules.Element(f, s.typ, m); ok {
			s.count[i][e]++
			return i, e, s.count[i][e] == 1
		}
	}
	return 0, "", false
}

// remove uncounts a member; it reports the family index and text when the element is gone.
func (s *ipSet) remove(m calc.IPSetMember) (int, string, bool) {
	for i, f := range families {
		if e, ok := rules.Element(f, s.typ, m); ok && s.count[i][e] > 0 {
			s.count[i][e]--
			if s.count[i][e] == 0 {
				delete(s.count[i], e)
				return i, e, true
			}
			return i, e, false
		}
	}
	return 0, "", false
}

// change applies a delta to the members and the sorted element lists.
func (s *ipSet) change(added, removed []calc.IPSetMember) {
	s.version++
	for _, m := range removed {
		if i, e, gone := s.remove(m); gone {
			if j, ok := slices.BinarySearch(s.elems[i], e); ok {
				s.elems[i] = slices.Delete(s.elems[i], j, j+1)
			}
		}
	}
	for _, m := range added {
		if i, e, isNew := s.add(m); isNew {
			j, _ := slices.BinarySearch(s.elems[i], e)
			s.elems[i] = slices.Insert(s.elems[i], j, e)
		}
	}
}

// nftSet is the set of family index i.
func (s *ipSet) nftSet(i int, id string) *nft.Set {
	typ, interval := rules.SetType(families[i], s.typ)
	return &nft.Set{Name: rules.SetName(families[i], id), Type: typ, Interval: interval, Elements: s.elems[i]}
}

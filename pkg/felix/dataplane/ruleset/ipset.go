package ruleset

import (
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// versions indexes per-version state: 0 is IPv4, 1 is IPv6.
var versions = [2]nft.IPVersion{nft.IPv4, nft.IPv6}

// IPSet is one calc IP set as the model holds it, kept per IP version as nft elements (built
// from the typed members, no text in between) with the number of members that render to each,
// plus the elements that appeared and disappeared since the Builder last took them: a delta
// costs what changed, not a rebuild of a large set.
type IPSet struct {
	typ     calc.IPSetType
	version uint64 // bumped by every change of the members
	perV    [2]ipSetVersion
}

type ipSetVersion struct {
	count  map[nft.Element]int
	ranges int // elements that are ranges (CIDRs): a removal may then uncover another member
	added  map[nft.Element]struct{}
	gone   map[nft.Element]struct{}
	full   bool // replaced: the builder puts the whole set
}

// NewIPSet is a set of the given type and members.
func NewIPSet(typ calc.IPSetType, members []calc.IPSetMember) *IPSet {
	s := &IPSet{typ: typ}
	for i := range s.perV {
		s.perV[i] = ipSetVersion{count: map[nft.Element]int{}, full: true}
	}
	for _, m := range members {
		if i, e, ok := s.element(m); ok {
			s.perV[i].inc(e)
		}
	}
	return s
}

// element is the element of a member and the index of its version.
func (s *IPSet) element(m calc.IPSetMember) (int, nft.Element, bool) {
	for i, v := range versions {
		if e, ok := rules.Element(v, s.typ, m); ok {
			return i, e, true
		}
	}
	return 0, nft.Element{}, false
}

func (p *ipSetVersion) inc(e nft.Element) bool {
	p.count[e]++
	if p.count[e] > 1 {
		return false
	}
	if e.IsRange() {
		p.ranges++
	}
	return true
}

func (p *ipSetVersion) dec(e nft.Element) bool {
	n, ok := p.count[e]
	if !ok {
		return false
	}
	if n > 1 {
		p.count[e] = n - 1
		return false
	}
	delete(p.count, e)
	if e.IsRange() {
		p.ranges--
	}
	return true
}

// Change applies a delta to the members, recording the elements that appeared and went.
func (s *IPSet) Change(added, removed []calc.IPSetMember) {
	s.version++
	for _, m := range removed {
		if i, e, ok := s.element(m); ok && s.perV[i].dec(e) {
			s.perV[i].note(e, false)
		}
	}
	for _, m := range added {
		if i, e, ok := s.element(m); ok && s.perV[i].inc(e) {
			s.perV[i].note(e, true)
		}
	}
}

// note records an element that appeared (or went) since the builder last took the changes.
func (p *ipSetVersion) note(e nft.Element, added bool) {
	if p.full {
		return
	}
	from, to := &p.gone, &p.added
	if !added {
		from, to = to, from
	}
	if _, ok := (*from)[e]; ok {
		delete(*from, e) // back to what the builder last took
		return
	}
	if *to == nil {
		*to = map[nft.Element]struct{}{}
	}
	(*to)[e] = struct{}{}
}

// elements lists the set's elements of version index i (unsorted: the table sorts them).
func (s *IPSet) elements(i int) []nft.Element {
	out := make([]nft.Element, 0, len(s.perV[i].count))
	for e := range s.perV[i].count {
		out = append(out, e)
	}
	return out
}

// nftSet is the whole set of version index i.
func (s *IPSet) nftSet(i int, id string) *nft.Set {
	typ, interval := rules.SetType(versions[i], s.typ)
	return &nft.Set{Name: rules.SetName(versions[i], id), Type: typ, Interval: interval, Elements: s.elements(i)}
}

// takeDelta returns what changed in version index i since the last take: the elements to add
// and remove, or whole when the set must be put whole: it was replaced, or CIDRs are involved
// in a removal (the table holds the union of the members, so a removed CIDR may cover
// remaining members and a remaining CIDR may cover a removed member).
func (s *IPSet) takeDelta(i int) (add, del []nft.Element, whole bool) {
	p := &s.perV[i]
	whole = p.full || (len(p.gone) > 0 && p.ranges > 0)
	for e := range p.gone {
		whole = whole || e.IsRange()
		del = append(del, e)
	}
	for e := range p.added {
		add = append(add, e)
	}
	if whole {
		add, del = nil, nil
	}
	p.full, p.added, p.gone = false, nil, nil
	return add, del, whole
}

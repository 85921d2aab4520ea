package calc

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/calico-host/calico-host/pkg/selector"
)

// ipSetSpec is what an IP set holds: the items a selector matches, or, for a named-port set,
// their (address, protocol, port) for one named port.
type ipSetSpec struct {
	id        string
	sel       *selector.Selector
	namedPort string // "" for a selector set
	proto     uint8  // named-port sets: 6, 17 or 132
}

func (s ipSetSpec) setType() IPSetType {
	if s.namedPort != "" {
		return IPSetNamedPort
	}
	return IPSetNet
}

type ipSet struct {
	spec    ipSetSpec
	refs    int
	members map[IPSetMember]int // member -> number of items contributing it
	sent    bool                // the dataplane has a set with this ID
	full    bool                // send the whole set at the next flush
	added   map[IPSetMember]struct{}
	removed map[IPSetMember]struct{}
}

// ipSetCalc keeps the IP sets that active rules use. Sets are reference-counted by the rules
// that use them; members come from the label index of every item (all hosts' endpoints and the
// network sets), indexed by selector so that a selector set and its named-port variants share
// one selector in the index.
type ipSetCalc struct {
	sets    map[string]*ipSet
	bySel   map[string]map[string]struct{} // selector UniqueID -> set IDs
	index   *labelIndex
	items   func(id string) *item
	dirty   map[string]struct{}
	removed map[string]struct{} // sets the dataplane has and must delete
}

func newIPSetCalc(items func(string) *item) *ipSetCalc {
	c := &ipSetCalc{
		sets:    map[string]*ipSet{},
		bySel:   map[string]map[string]struct{}{},
		items:   items,
		dirty:   map[string]struct{}{},
		removed: map[string]struct{}{},
	}
	c.index = newLabelIndex(c.onMatch)
	return c
}

// addRef takes a reference on the set described by spec, creating it if needed.
func (c *ipSetCalc) addRef(spec ipSetSpec) {
	if s := c.sets[spec.id]; s != nil {
		s.refs++
		return
	}
	s := &ipSet{spec: spec, refs: 1, members: map[IPSetMember]int{}}
	if _, ok := c.removed[spec.id]; ok {
		delete(c.removed, spec.id)
		s.sent, s.full = true, true
	}
	c.sets[spec.id] = s
	c.dirty[spec.id] = struct{}{}
	selID := spec.sel.UniqueID()
	_, indexed := c.bySel[selID]
	addToSet(c.bySel, selID, spec.id)
	if !indexed {
		c.index.UpdateSelector(selID, spec.sel)
		return
	}
	c.index.SelectorMatches(selID, func(itemID string) {
		c.contribute(s, c.items(itemID), c.addMember)
	})
}

// swapRefs takes references on the sets in cur, then drops those on the sets in prev, so a set
// used by both survives untouched.
func (c *ipSetCalc) swapRefs(cur, prev map[string]ipSetSpec) {
	for _, spec := range cur {
		c.addRef(spec)
	}
	for id := range prev {
		c.release(id)
	}
}

// release drops a reference taken by addRef.
func (c *ipSetCalc) release(id string) {
	s := c.sets[id]
	if s == nil {
		return
	}
	if s.refs--; s.refs > 0 {
		return
	}
	delete(c.sets, id)
	delete(c.dirty, id)
	if s.sent {
		c.removed[id] = struct{}{}
	}
	selID := s.spec.sel.UniqueID()
	removeFromSet(c.bySel, selID, id)
	if _, still := c.bySel[selID]; !still {
		c.index.DeleteSelector(selID)
	}
}

// onMatch is the label index's callback.
func (c *ipSetCalc) onMatch(selID, itemID string, matched bool) {
	it := c.items(itemID)
	f := c.removeMember
	if matched {
		f = c.addMember
	}
	for id := range c.bySel[selID] {
		c.contribute(c.sets[id], it, f)
	}
}

// onContent moves the sets matching an item from its old addresses and ports to the new ones.
func (c *ipSetCalc) onContent(itemID string, old, cur *item) {
	if sameContent(old, cur) {
		return
	}
	c.index.ItemMatches(itemID, func(selID string) {
		for id := range c.bySel[selID] {
			s := c.sets[id]
			c.contribute(s, old, c.removeMember)
			c.contribute(s, cur, c.addMember)
		}
	})
}

// contribute calls f with each member that it puts into s.
func (c *ipSetCalc) contribute(s *ipSet, it *item, f func(*ipSet, IPSetMember)) {
	if s.spec.namedPort == "" {
		for _, n := range it.nets {
			f(s, IPSetMember{Prefix: n})
		}
		return
	}
	for _, p := range it.ports {
		if p.name != s.spec.namedPort || p.proto != s.spec.proto {
			continue
		}
		for _, n := range it.nets {
			addr := n.Addr()
			f(s, IPSetMember{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Protocol: p.proto, Port: p.port})
		}
	}
}

func (c *ipSetCalc) addMember(s *ipSet, m IPSetMember) {
	s.members[m]++
	if s.members[m] > 1 {
		return
	}
	c.dirty[s.spec.id] = struct{}{}
	if !s.sent || s.full {
		return
	}
	if _, ok := s.removed[m]; ok {
		delete(s.removed, m)
		return
	}
	if s.added == nil {
		s.added = map[IPSetMember]struct{}{}
	}
	s.added[m] = struct{}{}
}

func (c *ipSetCalc) removeMember(s *ipSet, m IPSetMember) {
	if s.members[m]--; s.members[m] > 0 {
		return
	}
	delete(s.members, m)
	c.dirty[s.spec.id] = struct{}{}
	if !s.sent || s.full {
		return
	}
	if _, ok := s.added[m]; ok {
		delete(s.added, m)
		return
	}
	if s.removed == nil {
		s.removed = map[IPSetMember]struct{}{}
	}
	s.removed[m] = struct{}{}
}

// flush returns the new and changed sets, and separately the removed ones (which go out after
// the rules that stopped using them).
func (c *ipSetCalc) flush() (updates, removes []Update) {
	for _, id := range sortedKeys(c.dirty) {
		s := c.sets[id]
		switch {
		case s == nil:
			continue
		case !s.sent || s.full:
			updates = append(updates, IPSetUpdate{ID: id, Type: s.spec.setType(), Members: sortedMembers(s.members)})
		case len(s.added)+len(s.removed) > 0:
			updates = append(updates, IPSetDelta{ID: id, Added: sortedMembers(s.added), Removed: sortedMembers(s.removed)})
		}
		s.sent, s.full, s.added, s.removed = true, false, nil, nil
	}
	clear(c.dirty)
	for _, id := range sortedKeys(c.removed) {
		removes = append(removes, IPSetRemove{ID: id})
	}
	clear(c.removed)
	return updates, removes
}

func sortedMembers[V any](m map[IPSetMember]V) []IPSetMember {
	if len(m) == 0 {
		return nil
	}
	out := make([]IPSetMember, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, compareMembers)
	return out
}

func compareMembers(a, b IPSetMember) int {
	if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
		return c
	}
	if a.Prefix.Bits() != b.Prefix.Bits() {
		return a.Prefix.Bits() - b.Prefix.Bits()
	}
	if a.Protocol != b.Protocol {
		return int(a.Protocol) - int(b.Protocol)
	}
	return int(a.Port) - int(b.Port)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package nft

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// Chain is a named list of rules. A chain with a Base is attached to a
// netfilter hook; other chains are reached by jump, goto or a verdict map.
type Chain struct {
	Name  string
	Base  *BaseChain
	Rules []Rule
}

// Table is the desired content of one table: its chains, sets and verdict
// maps. Objects are put and deleted through its methods, which record what
// changed, so that an Applier applying the same Table again looks only at
// what changed since (a partial sync costs what changed, not the table's
// size).
//
// A Table owns what is put into it: a Chain, Set or Map must not be
// modified after PutChain, PutSet or PutMap (the Applier keeps pointers to
// the objects it wrote, without copies); to change one, put a new one, or
// use UpdateSet and UpdateMap, which copy. A Table is not safe for
// concurrent use and is meant for one Applier.
type Table struct {
	Family Family
	Name   string

	chains map[string]*Chain
	sets   map[string]*Set
	maps   map[string]*Map
	users  map[refKey]int // references from rules and map verdicts, by target
	jr     Journal
}

// NewTable returns an empty table.
func NewTable(f Family, name string) *Table {
	return &Table{
		Family: f, Name: name,
		chains: map[string]*Chain{}, sets: map[string]*Set{}, maps: map[string]*Map{},
		jr: newJournal(),
	}
}

// ID is the table's family and name.
func (t *Table) ID() TableID { return TableID{Family: t.Family, Name: t.Name} }

// Journal lists the names of the objects put or deleted since it was last
// reset; Epoch counts the resets. The Applier reads it and resets it once
// it has written the changes.
type Journal struct {
	Chains, Sets, Maps map[string]struct{}
	Epoch              uint64
}

func newJournal() Journal {
	return Journal{Chains: map[string]struct{}{}, Sets: map[string]struct{}{}, Maps: map[string]struct{}{}}
}

// Journal returns the table's journal (read only).
func (t *Table) Journal() *Journal { return &t.jr }

// ResetJournal forgets the recorded changes and returns the new epoch.
func (t *Table) ResetJournal() uint64 {
	clear(t.jr.Chains)
	clear(t.jr.Sets)
	clear(t.jr.Maps)
	t.jr.Epoch++
	return t.jr.Epoch
}

// PutChain adds or replaces the chain c.Name. It checks the name and the
// base chain declaration (rules are checked when applied), makes rule
// comments safe (SanitizeText) and shares equal expressions between rules
// (so a million similar rules do not hold a million copies of accept).
func (t *Table) PutChain(c *Chain) error {
	if !ValidName(c.Name) {
		return fmt.Errorf("invalid chain name %q", c.Name)
	}
	if c.Base != nil {
		if err := c.Base.validate(t.Family); err != nil {
			return fmt.Errorf("chain %s: %w", c.Name, err)
		}
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		r.Comment = SanitizeText(r.Comment)
		for j, x := range r.Exprs {
			r.Exprs[j] = intern(x)
		}
	}
	t.InsertChain(c)
	t.jr.Chains[c.Name] = struct{}{}
	return nil
}

// InsertChain stores c without checks and without recording a change: for
// backends reporting what a table holds.
func (t *Table) InsertChain(c *Chain) {
	t.countRefs(t.chains[c.Name], -1)
	t.chains[c.Name] = c
	t.countRefs(c, 1)
}

// DeleteChain removes chain name.
func (t *Table) DeleteChain(name string) {
	t.countRefs(t.chains[name], -1)
	delete(t.chains, name)
	t.jr.Chains[name] = struct{}{}
}

// Chain returns chain name, or nil.
func (t *Table) Chain(name string) *Chain { return t.chains[name] }

// ChainNames lists the chains, sorted.
func (t *Table) ChainNames() []string { return slices.Sorted(maps.Keys(t.chains)) }

// PutSet adds or replaces the set s.Name. It checks the declaration and the
// elements, and sorts and merges s.Elements in place. Sets and maps share
// one namespace: putting a set deletes a map of the same name.
func (t *Table) PutSet(s *Set) error {
	if err := s.normalize(); err != nil {
		return err
	}
	if _, ok := t.maps[s.Name]; ok {
		t.DeleteMap(s.Name)
	}
	t.sets[s.Name] = s
	t.jr.Sets[s.Name] = struct{}{}
	return nil
}

// InsertSet stores s without checks and without recording a change: for
// backends reporting what a table holds.
func (t *Table) InsertSet(s *Set) { t.sets[s.Name] = s }

// DeleteSet removes set name.
func (t *Table) DeleteSet(name string) {
	delete(t.sets, name)
	t.jr.Sets[name] = struct{}{}
}

// Set returns set name, or nil.
func (t *Table) Set(name string) *Set { return t.sets[name] }

// SetNames lists the sets, sorted.
func (t *Table) SetNames() []string { return slices.Sorted(maps.Keys(t.sets)) }

// UpdateSet adds and removes elements of set name: it puts a new Set
// holding the old elements, less del, plus add (add wins over del). In an
// interval set, removing a range (or box) removes those keys even when they
// were merged into a larger one. It costs one pass over the old elements
// (they are sorted already; only add and del are sorted), or for a
// concatenated interval set a normalization of them all.
func (t *Table) UpdateSet(name string, add, del []Element) error {
	old := t.sets[name]
	if old == nil {
		return fmt.Errorf("set %s does not exist", name)
	}
	d, err := normalizeElements(old.Type, old.Interval, slices.Clone(del))
	if err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	a, err := normalizeElements(old.Type, old.Interval, slices.Clone(add))
	if err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	if old.Interval && old.Type.IsConcat() {
		t.sets[name] = &Set{Name: old.Name, Type: old.Type, Interval: true, Elements: boxUpdate(old.Type, old.Elements, d, a)}
		t.jr.Sets[name] = struct{}{}
		return nil
	}
	ranges := old.Interval
	var kept []Element
	if ranges {
		kept = subtractRanges(old.Elements, d, len(a))
	} else {
		kept = subtractElems(old.Elements, d, len(a))
	}
	elems := unionSorted(kept, a)
	if ranges {
		elems = mergeRanges(elems)
	}
	t.sets[name] = &Set{Name: old.Name, Type: old.Type, Interval: old.Interval, Elements: elems}
	t.jr.Sets[name] = struct{}{}
	return nil
}

// subtractElems returns a less the elements of d (both sorted, without
// duplicates), with room for extra more.
func subtractElems(a, d []Element, extra int) []Element {
	out := make([]Element, 0, len(a)+extra)
	j := 0
	for _, e := range a {
		for j < len(d) && compareElems(d[j], e) < 0 {
			j++
		}
		if j < len(d) && d[j] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// unionSorted merges two sorted lists without duplicates into one: in
// place of a when b is empty, in a's spare capacity when it has room for b
// (UpdateSet's a is its own fresh copy: one copy of a big set per update,
// not two), else into a new slice.
func unionSorted(a, b []Element) []Element {
	if len(b) == 0 {
		return a
	}
	if cap(a)-len(a) < len(b) {
		return mergeSorted(make([]Element, 0, len(a)+len(b)), a, b)
	}
	out := a[:len(a)+len(b)]
	i, j, k := len(a)-1, len(b)-1, len(out)-1
	for ; j >= 0; k-- { // from the back: out[k] is never an a[i] still to be read
		c := -1
		if i >= 0 {
			c = compareElems(a[i], b[j])
		}
		switch {
		case c > 0:
			out[k], i = a[i], i-1
		case c == 0:
			out[k], i, j = a[i], i-1, j-1
		default:
			out[k], j = b[j], j-1
		}
	}
	// a[:i+1] is in place; each duplicate left one slot free before the merged tail.
	n := copy(out[i+1:], out[k+1:])
	return out[:i+1+n]
}

// mergeSorted appends the merge of a and b (sorted, without duplicates) to out.
func mergeSorted(out, a, b []Element) []Element {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := compareElems(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// subtractRanges removes the keys of d from a; both sorted and merged. The
// elements of a that no element of d touches are copied as they are.
func subtractRanges(a, d []Element, extra int) []Element {
	out := make([]Element, 0, len(a)+len(d)+extra)
	j := 0
	for i, e := range a {
		lo, hi := e.Bounds()
		for ; j < len(d); j++ {
			if _, dhi := d[j].Bounds(); dhi.raw >= lo.raw {
				break
			}
		}
		if j == len(d) {
			return append(out, a[i:]...)
		}
		if dlo, _ := d[j].Bounds(); dlo.raw > hi.raw {
			out = append(out, e)
			continue
		}
		out = cutRange(out, lo, hi, d[j:])
	}
	return out
}

// cutRange appends what remains of the range lo-hi once the keys of d
// (sorted, the first one ending at or after lo) are removed.
func cutRange(out []Element, lo, hi Key, d []Element) []Element {
	cur := []byte(lo.raw)
	for _, x := range d {
		dlo, dhi := x.Bounds()
		if dlo.raw > hi.raw {
			break
		}
		if dlo.raw > string(cur) {
			out = append(out, RangeElem(Key{raw: string(cur)}, KeyBefore([]byte(dlo.raw))))
		}
		if cur = increment([]byte(dhi.raw)); cur == nil || bytes.Compare(cur, []byte(hi.raw)) > 0 {
			return out
		}
	}
	return append(out, RangeElem(Key{raw: string(cur)}, hi))
}

// PutMap adds or replaces the verdict map m.Name, deleting a set of the
// same name.
func (t *Table) PutMap(m *Map) error {
	if err := m.validate(); err != nil {
		return err
	}
	if _, ok := t.sets[m.Name]; ok {
		t.DeleteSet(m.Name)
	}
	t.InsertMap(m)
	t.jr.Maps[m.Name] = struct{}{}
	return nil
}

// InsertMap stores m without checks and without recording a change: for
// backends reporting what a table holds.
func (t *Table) InsertMap(m *Map) {
	t.countMapRefs(t.maps[m.Name], -1)
	t.maps[m.Name] = m
	t.countMapRefs(m, 1)
}

// DeleteMap removes map name.
func (t *Table) DeleteMap(name string) {
	t.countMapRefs(t.maps[name], -1)
	delete(t.maps, name)
	t.jr.Maps[name] = struct{}{}
}

// Map returns map name, or nil.
func (t *Table) Map(name string) *Map { return t.maps[name] }

// MapNames lists the maps, sorted.
func (t *Table) MapNames() []string { return slices.Sorted(maps.Keys(t.maps)) }

// UpdateMap stores the elements of put and removes the keys of del in map
// name, by putting a copy. It checks only the new elements: it costs a copy
// of the map, not a check of all its elements.
func (t *Table) UpdateMap(name string, put map[Key]Verdict, del []Key) error {
	old := t.maps[name]
	if old == nil {
		return fmt.Errorf("map %s does not exist", name)
	}
	n := old.Type.KeyLen()
	for k, v := range put {
		if k.Len() != n {
			return fmt.Errorf("map %s: key of %d bytes for type %s (%d bytes)", name, k.Len(), old.Type, n)
		}
		if _, err := v.VM(); err != nil {
			return fmt.Errorf("map %s key %s: %w", name, old.Type.format([]byte(k.raw)), err)
		}
	}
	m := &Map{Name: old.Name, Type: old.Type, Elements: maps.Clone(old.Elements)}
	if m.Elements == nil {
		m.Elements = map[Key]Verdict{}
	}
	use := func(v Verdict, n int) { v.refs(func(rf Ref) { t.addUse(refKey{rf.Kind, rf.Name}, n) }) }
	for _, k := range del {
		if v, ok := m.Elements[k]; ok {
			use(v, -1)
			delete(m.Elements, k)
		}
	}
	for k, v := range put {
		if ov, ok := m.Elements[k]; ok {
			use(ov, -1)
		}
		m.Elements[k] = v
		use(v, 1)
	}
	t.maps[name] = m
	t.jr.Maps[name] = struct{}{}
	return nil
}

// Clone returns a table with the same objects (shared, not copied) and an
// empty journal.
func (t *Table) Clone() *Table {
	c := NewTable(t.Family, t.Name)
	maps.Copy(c.chains, t.chains)
	maps.Copy(c.sets, t.sets)
	maps.Copy(c.maps, t.maps)
	c.users = maps.Clone(t.users)
	return c
}

// Counts returns the number of chains, rules, sets, set elements, maps
// and map elements.
func (t *Table) Counts() (chains, rules, sets, elements, mapsN, mapElements int) {
	for _, c := range t.chains {
		rules += len(c.Rules)
	}
	for _, s := range t.sets {
		elements += len(s.Elements)
	}
	for _, m := range t.maps {
		mapElements += len(m.Elements)
	}
	return len(t.chains), rules, len(t.sets), elements, len(t.maps), mapElements
}

package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// planMap decides whether a desired map is new, replaced (its key type
// changed), resynced against the kernel's elements, or updated.
func (p *planner) planMap(name string, m *Map) error {
	t, _ := parseSetType(m.KeyType) // validated
	st := p.cur.maps[name]
	switch {
	case st == nil && p.cur.sets[name] == nil:
		return p.addMap(phAddSets, phElems, t, m)
	case st == nil || st.typ == nil || st.typ.name != t.name:
		p.deleteOld(name)
		return p.addMap(phRecreate, phRecreateElems, t, m)
	case st.raw == nil:
		return p.resyncMap(st, t, m)
	default:
		return p.updateMap(st, m)
	}
}

// addMap creates a map; its elements may jump to new chains, so they go
// in a phase after the chains are added.
func (p *planner) addMap(phase, elemPhase int, t *setType, m *Map) error {
	st, elems, err := p.newMapState(t, m)
	if err != nil {
		return err
	}
	p.emit(phase, Op{Kind: OpAddMap, Name: m.Name, Type: t.name})
	if len(elems) > 0 {
		p.emit(elemPhase, Op{Kind: OpAddMapElements, Name: m.Name, MapElems: sortedMapElems(elems)})
	}
	p.edit(func(mr *mirror) { mr.putMap(m.Name, st) })
	p.stats.MapsAdded++
	p.stats.ElementsAdded += len(elems)
	return nil
}

// resyncMap compares a map read from the kernel with the desired elements.
func (p *planner) resyncMap(old *mapState, t *setType, m *Map) error {
	st, want, err := p.newMapState(t, m)
	if err != nil {
		return err
	}
	p.emitMapElements(m, mapDelta(want, old.elems), mapDelta(old.elems, want))
	p.edit(func(mr *mirror) { mr.putMap(m.Name, st) })
	return nil
}

func (p *planner) newMapState(t *setType, m *Map) (*mapState, map[string]mapElement, error) {
	if err := p.desired.validateMapElements(m); err != nil {
		return nil, nil, err
	}
	return buildMapState(t, m)
}

// buildMapState parses and indexes a map's elements.
func buildMapState(t *setType, m *Map) (*mapState, map[string]mapElement, error) {
	elems, parsed, err := normalizeMap(m, nil)
	if err != nil {
		return nil, nil, err
	}
	st := &mapState{typ: t, raw: maps.Clone(m.Elements), elems: elems, parsed: parsed, targets: map[string]int{}}
	for _, v := range m.Elements {
		st.target(v, 1)
	}
	return st, elems, nil
}

func (p *planner) emitMapElements(m *Map, add, del []mapElement) {
	if len(del) > 0 {
		p.emit(phElems, Op{Kind: OpDeleteMapElements, Name: m.Name, MapElems: del})
	}
	if len(add) > 0 {
		p.emit(phElems, Op{Kind: OpAddMapElements, Name: m.Name, MapElems: add})
	}
	p.stats.ElementsAdded += len(add)
	p.stats.ElementsRemoved += len(del)
}

// mapChange is a planned change of a map we wrote: raw keys set (added or
// given another verdict) and removed, and the kernel elements behind them.
type mapChange struct {
	set      map[string]Verdict
	removed  []string
	parsed   map[string]element // keys not parsed before
	add, del []mapElement
}

// updateMap emits the element delta of a map we wrote: only the keys whose
// verdict changed are parsed and validated; a key whose verdict changed is
// deleted and added again. When chains were deleted or replaced, every
// element is checked again, since one may now point nowhere.
func (p *planner) updateMap(st *mapState, m *Map) error {
	c := &mapChange{set: map[string]Verdict{}, parsed: map[string]element{}}
	for k, v := range m.Elements {
		if old, ok := st.raw[k]; !ok || old != v {
			c.set[k] = v
		}
	}
	for k := range st.raw {
		if _, ok := m.Elements[k]; !ok {
			c.removed = append(c.removed, k)
		}
	}
	if p.chainsChanged() {
		if err := p.desired.validateMapElements(m); err != nil {
			return err
		}
	}
	if len(c.set)+len(c.removed) == 0 {
		return nil
	}
	if err := st.plan(p.desired, m.Name, c); err != nil {
		return err
	}
	p.emitMapElements(m, c.add, c.del)
	p.edit(func(*mirror) { st.apply(c) })
	return nil
}

// plan fills in the kernel elements of a change, checking the new verdicts
// and that no two keys name one element.
func (st *mapState) plan(rs *Ruleset, name string, c *mapChange) error {
	for _, k := range c.removed {
		c.del = append(c.del, mapElement{text: st.parsed[k].text, key: st.parsed[k].key, verdict: st.raw[k]})
	}
	for k, v := range c.set {
		if err := rs.checkVerdictTarget(v); err != nil {
			return fmt.Errorf("map %q element %q: %w", name, k, err)
		}
		e, ok := st.parsed[k]
		if !ok {
			var err error
			if e, err = parseKey(st.typ, k); err != nil {
				return fmt.Errorf("map %q: %w", name, err)
			}
			c.parsed[k] = e
		} else {
			c.del = append(c.del, mapElement{text: e.text, key: e.key, verdict: st.raw[k]})
		}
		c.add = append(c.add, mapElement{text: e.text, key: e.key, verdict: v})
	}
	byText := func(a, b mapElement) int { return strings.Compare(a.text, b.text) }
	slices.SortFunc(c.add, byText)
	slices.SortFunc(c.del, byText)
	return st.checkDuplicates(name, c)
}

// checkDuplicates refuses a change after which two keys name one element.
func (st *mapState) checkDuplicates(name string, c *mapChange) error {
	n := map[string]int{}
	for _, e := range c.del {
		n[e.text]--
	}
	for _, e := range c.add {
		n[e.text]++
	}
	for text, d := range n {
		if _, ok := st.elems[text]; ok {
			d++
		}
		if d > 1 {
			return fmt.Errorf("map %q: key %q given twice", name, text)
		}
	}
	return nil
}

// apply makes a planned change true.
func (st *mapState) apply(c *mapChange) {
	for _, e := range c.del {
		delete(st.elems, e.text)
		st.target(e.verdict, -1)
	}
	for _, e := range c.add {
		st.elems[e.text] = e
		st.target(e.verdict, 1)
	}
	for _, k := range c.removed {
		delete(st.raw, k)
		delete(st.parsed, k)
	}
	maps.Copy(st.raw, c.set)
	maps.Copy(st.parsed, c.parsed)
}

// mapDelta lists the elements of a that b lacks or maps differently.
func mapDelta(a, b map[string]mapElement) []mapElement {
	var out []mapElement
	for k, e := range a {
		if o, ok := b[k]; !ok || o.verdict != e.verdict {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y mapElement) int { return strings.Compare(x.text, y.text) })
	return out
}

func sortedMapElems(m map[string]mapElement) []mapElement {
	return mapDelta(m, nil)
}

package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Phases of a transaction. Operations are emitted in this order so that
// the kernel never sees a dangling reference: objects are created before
// anything refers to them and deleted only after everything that referred
// to them was flushed or deleted.
const (
	phTable         = iota // add table
	phAddSets              // new sets (with elements) and new maps
	phAddChains            // new chains, still empty
	phElems                // element deltas: deletes then adds, per set or map
	phFlush                // flush changed and stale chains
	phRecreate             // replace sets, maps and base chains whose type changed
	phRecreateElems        // elements of the replaced sets and maps
	phRules                // refill changed chains
	phDelMaps              // stale maps (their elements may jump to stale chains)
	phDelChains            // stale chains
	phDelSets              // stale sets
	numPhases
)

// planner diffs a desired ruleset against a mirror and produces the
// transaction and the mirror that will be true once it commits.
type planner struct {
	desired *Ruleset
	cur     *mirror
	next    *mirror
	stats   Stats
	phases  [numPhases][]Op
	rewrite map[string]bool // chains whose rules are written
	flushed map[string]bool // existing chains flushed before being rewritten
	changed map[ref]bool    // objects deleted or replaced: their users must be checked
}

// plan computes the transaction that turns cur into desired.
func plan(cur *mirror, desired *Ruleset) (*Transaction, *mirror, Stats, error) {
	if err := desired.validateObjects(); err != nil {
		return nil, nil, Stats{}, err
	}
	p := &planner{
		desired: desired, cur: cur, next: newMirrorSized(desired),
		rewrite: map[string]bool{}, flushed: map[string]bool{}, changed: map[ref]bool{},
	}
	if !cur.table {
		p.emit(phTable, Op{Kind: OpAddTable})
	}
	p.next.table = true
	p.removeStale()
	for _, step := range []func() error{p.planChains, p.planSets, p.planMaps, p.checkUsers, p.writeRules} {
		if err := step(); err != nil {
			return nil, nil, Stats{}, err
		}
	}
	tx := &Transaction{}
	for _, ops := range p.phases {
		tx.Ops = appendSorted(tx.Ops, ops)
	}
	p.stats.Ops = len(tx.Ops)
	return tx, p.next, p.stats, nil
}

func (p *planner) emit(phase int, ops ...Op) { p.phases[phase] = append(p.phases[phase], ops...) }

// appendSorted appends ops sorted by object name. Objects were visited in
// map order; the sort makes the transaction deterministic, and it is stable
// so that the operations on one object keep their order.
func appendSorted(dst, ops []Op) []Op {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(ops[a].Name, ops[b].Name) })
	for _, i := range idx {
		dst = append(dst, ops[i])
	}
	return dst
}

// removeStale deletes objects that are no longer wanted. A set that becomes
// a map (or the reverse) is replaced by planSets/planMaps instead.
func (p *planner) removeStale() {
	for name := range p.cur.chains {
		if _, ok := p.desired.Chains[name]; !ok {
			p.flush(name)
			p.emit(phDelChains, Op{Kind: OpDeleteChain, Name: name})
			p.changed[ref{kind: refChain, name: name}] = true
			p.stats.ChainsDeleted++
		}
	}
	for name := range p.cur.sets {
		if _, ok := p.desired.Sets[name]; !ok && p.desired.Maps[name] == nil {
			p.emit(phDelSets, Op{Kind: OpDeleteSet, Name: name})
			p.changed[ref{kind: refSet, name: name}] = true
			p.stats.SetsDeleted++
		}
	}
	for name := range p.cur.maps {
		if _, ok := p.desired.Maps[name]; !ok && p.desired.Sets[name] == nil {
			p.emit(phDelMaps, Op{Kind: OpDeleteMap, Name: name})
			p.changed[ref{kind: refSet, name: name}] = true
			p.stats.MapsDeleted++
		}
	}
}

// flush empties an existing chain once.
func (p *planner) flush(name string) {
	if !p.flushed[name] {
		p.flushed[name] = true
		p.emit(phFlush, Op{Kind: OpFlushChain, Name: name})
	}
}

// deleteOld deletes whatever set or map currently has this name.
func (p *planner) deleteOld(name string) {
	if _, ok := p.cur.sets[name]; ok {
		p.emit(phRecreate, Op{Kind: OpDeleteSet, Name: name})
	}
	if _, ok := p.cur.maps[name]; ok {
		p.emit(phRecreate, Op{Kind: OpDeleteMap, Name: name})
	}
	p.changed[ref{kind: refSet, name: name}] = true
}

func (p *planner) planSets() error {
	for name, s := range p.desired.Sets {
		t, _ := parseSetType(s.Type) // validated
		st := p.cur.sets[name]
		var err error
		switch {
		case st == nil && p.cur.maps[name] == nil:
			err = p.addSet(phAddSets, phAddSets, t, s)
		case st == nil || st.typ == nil || st.typ.name != t.name || st.interval != s.Interval:
			p.deleteOld(name)
			err = p.addSet(phRecreate, phRecreateElems, t, s)
		default:
			err = p.updateSet(st, t, s)
		}
		if err != nil {
			return fmt.Errorf("set %q: %w", name, err)
		}
	}
	return nil
}

func (p *planner) addSet(phase, elemPhase int, t *setType, s *Set) error {
	elems, parsed, err := normalizeCached(t, s.Interval, s.Elements, nil)
	if err != nil {
		return err
	}
	p.emit(phase, Op{Kind: OpAddSet, Name: s.Name, Type: t.name, Interval: s.Interval})
	if len(elems) > 0 {
		p.emit(elemPhase, Op{Kind: OpAddElements, Name: s.Name, Interval: s.Interval, Elements: elems})
	}
	p.next.sets[s.Name] = &setState{typ: t, interval: s.Interval, raw: slices.Clone(s.Elements), elems: elementMap(elems), parsed: parsed}
	p.stats.SetsAdded++
	p.stats.ElementsAdded += len(elems)
	return nil
}

func elementMap(elems []element) map[string]element {
	m := make(map[string]element, len(elems))
	for _, e := range elems {
		m[e.text] = e
	}
	return m
}

// updateSet emits the element delta of a set that keeps its type.
func (p *planner) updateSet(st *setState, t *setType, s *Set) error {
	if st.raw != nil && slices.Equal(st.raw, s.Elements) {
		p.next.sets[s.Name] = st
		return nil
	}
	elems, parsed, err := normalizeCached(t, s.Interval, s.Elements, st.parsed)
	if err != nil {
		return err
	}
	want := elementMap(elems)
	del := missingFrom(st.elems, want)
	add := missingFrom(want, st.elems)
	if len(del) > 0 {
		p.emit(phElems, Op{Kind: OpDeleteElements, Name: s.Name, Interval: s.Interval, Elements: del})
	}
	if len(add) > 0 {
		p.emit(phElems, Op{Kind: OpAddElements, Name: s.Name, Interval: s.Interval, Elements: add})
	}
	p.stats.ElementsAdded += len(add)
	p.stats.ElementsRemoved += len(del)
	p.next.sets[s.Name] = &setState{typ: t, interval: s.Interval, raw: slices.Clone(s.Elements), elems: want, parsed: parsed}
	return nil
}

// missingFrom lists the elements of a that b lacks, sorted by text.
func missingFrom(a, b map[string]element) []element {
	var out []element
	for k, e := range a {
		if _, ok := b[k]; !ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y element) int { return strings.Compare(x.text, y.text) })
	return out
}

func (p *planner) planMaps() error {
	chainsChanged := p.chainsChanged()
	for name, m := range p.desired.Maps {
		t, _ := parseSetType(m.KeyType) // validated
		st := p.cur.maps[name]
		var err error
		switch {
		case st != nil && st.raw != nil && maps.Equal(st.raw, m.Elements):
			p.next.maps[name] = st
			if chainsChanged {
				err = p.desired.validateMapElements(m)
			}
		case st == nil && p.cur.sets[name] == nil:
			err = p.addMap(phAddSets, phElems, t, m)
		case st == nil || st.typ == nil || st.typ.name != t.name:
			p.deleteOld(name)
			err = p.addMap(phRecreate, phRecreateElems, t, m)
		default:
			err = p.updateMap(st, t, m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// chainsChanged reports whether a chain is deleted or replaced, which may
// leave a map element pointing nowhere.
func (p *planner) chainsChanged() bool {
	for rf := range p.changed {
		if rf.kind == refChain {
			return true
		}
	}
	return false
}

// addMap creates a map; its elements may jump to new chains, so they go
// in a phase after the chains are added.
func (p *planner) addMap(phase, elemPhase int, t *setType, m *Map) error {
	if err := p.desired.validateMapElements(m); err != nil {
		return err
	}
	elems, parsed, err := normalizeMap(m, nil)
	if err != nil {
		return err
	}
	p.emit(phase, Op{Kind: OpAddMap, Name: m.Name, Type: t.name})
	if len(elems) > 0 {
		p.emit(elemPhase, Op{Kind: OpAddMapElements, Name: m.Name, MapElems: sortedMapElems(elems)})
	}
	p.next.maps[m.Name] = &mapState{typ: t, raw: maps.Clone(m.Elements), elems: elems, parsed: parsed}
	p.stats.MapsAdded++
	p.stats.ElementsAdded += len(elems)
	return nil
}

// updateMap emits the element delta of a map; a key whose verdict changed
// is deleted and added again.
func (p *planner) updateMap(st *mapState, t *setType, m *Map) error {
	if err := p.desired.validateMapElements(m); err != nil {
		return err
	}
	want, parsed, err := normalizeMap(m, st.parsed)
	if err != nil {
		return err
	}
	del := mapDelta(st.elems, want)
	add := mapDelta(want, st.elems)
	if len(del) > 0 {
		p.emit(phElems, Op{Kind: OpDeleteMapElements, Name: m.Name, MapElems: del})
	}
	if len(add) > 0 {
		p.emit(phElems, Op{Kind: OpAddMapElements, Name: m.Name, MapElems: add})
	}
	p.stats.ElementsAdded += len(add)
	p.stats.ElementsRemoved += len(del)
	p.next.maps[m.Name] = &mapState{typ: t, raw: maps.Clone(m.Elements), elems: want, parsed: parsed}
	return nil
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

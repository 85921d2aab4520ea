package nft

import (
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
// transaction and the edits that make the mirror true once it commits.
// It looks at every object (scope nil: a full comparison), or only at the
// objects a tracked ruleset reports as changed.
type planner struct {
	desired *Ruleset
	cur     *mirror
	scope   *changes
	edits   edits
	stats   Stats
	phases  [numPhases][]Op
	chains  []string        // chain names to look at
	sets    []string        // set and map names to look at
	kept    []string        // chains looked at and left as they are
	rewrite map[string]bool // chains whose rules are written
	flushed map[string]bool // existing chains flushed before being rewritten
	changed map[ref]bool    // objects deleted or replaced: their users must be checked
}

// plan computes the transaction that turns cur into desired, looking only
// at the objects named in scope when it is not nil. cur is not changed; the
// returned edits make it true once the transaction commits.
func plan(cur *mirror, desired *Ruleset, scope *changes) (*Transaction, edits, Stats, error) {
	p := &planner{
		desired: desired, cur: cur, scope: scope,
		rewrite: map[string]bool{}, flushed: map[string]bool{}, changed: map[ref]bool{},
	}
	p.chains, p.sets = p.names()
	if err := desired.validateNamed(p.chains, p.sets); err != nil {
		return nil, nil, Stats{}, err
	}
	if !cur.table {
		p.emit(phTable, Op{Kind: OpAddTable})
	}
	p.removeStale()
	for _, step := range []func() error{p.planChains, p.planSets, p.checkMaps, p.checkUsers, p.writeRules} {
		if err := step(); err != nil {
			return nil, nil, Stats{}, err
		}
	}
	n := 0
	for _, ops := range p.phases {
		n += len(ops)
	}
	tx := &Transaction{Ops: make([]Op, 0, n)}
	for _, ops := range p.phases {
		tx.Ops = appendSorted(tx.Ops, ops)
	}
	p.stats.Ops = len(tx.Ops)
	return tx, p.edits, p.stats, nil
}

func (p *planner) emit(phase int, ops ...Op) { p.phases[phase] = append(p.phases[phase], ops...) }

func (p *planner) edit(f func(*mirror)) { p.edits = append(p.edits, f) }

// names lists the chains and the sets and maps to look at: those in scope,
// or every one desired or present.
func (p *planner) names() (chains, sets []string) {
	if p.scope != nil {
		return slices.Collect(maps.Keys(p.scope.chains)), slices.Collect(maps.Keys(p.scope.sets))
	}
	chains = unionKeys(p.desired.Chains, p.cur.chains)
	sets = unionKeys(p.desired.Sets, p.desired.Maps)
	sets = append(sets, unionKeys(p.cur.sets, p.cur.maps)...)
	slices.Sort(sets)
	return chains, slices.Compact(sets)
}

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
// a map (or the reverse) is replaced by planSet/planMap instead.
func (p *planner) removeStale() {
	for _, name := range p.chains {
		if _, ok := p.desired.Chains[name]; !ok && p.cur.chains[name] != nil {
			p.flush(name)
			p.emit(phDelChains, Op{Kind: OpDeleteChain, Name: name})
			p.changed[ref{kind: refChain, name: name}] = true
			p.edit(func(m *mirror) { m.deleteChain(name) })
			p.stats.ChainsDeleted++
		}
	}
	for _, name := range p.sets {
		if p.desired.Sets[name] != nil || p.desired.Maps[name] != nil {
			continue
		}
		if p.cur.sets[name] != nil {
			p.emit(phDelSets, Op{Kind: OpDeleteSet, Name: name})
			p.stats.SetsDeleted++
		}
		if p.cur.maps[name] != nil {
			p.emit(phDelMaps, Op{Kind: OpDeleteMap, Name: name})
			p.stats.MapsDeleted++
		}
		if p.cur.sets[name] != nil || p.cur.maps[name] != nil {
			p.changed[ref{kind: refSet, name: name}] = true
			p.edit(func(m *mirror) { delete(m.sets, name); delete(m.maps, name) })
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

// planSets plans every set and map looked at.
func (p *planner) planSets() error {
	for _, name := range p.sets {
		var err error
		if s := p.desired.Sets[name]; s != nil {
			err = p.planSet(name, s)
		} else if m := p.desired.Maps[name]; m != nil {
			err = p.planMap(name, m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkMaps: when chains are deleted or replaced, a map that was not looked
// at may still send packets to one of them, which is an error in the
// desired ruleset. Maps are few; each knows the chains it targets.
func (p *planner) checkMaps() error {
	if p.scope == nil || !p.chainsChanged() {
		return nil
	}
	for name, st := range p.cur.maps {
		if _, seen := p.scope.sets[name]; seen || p.desired.Maps[name] == nil {
			continue
		}
		for rf := range p.changed {
			if rf.kind == refChain && st.targets[rf.name] > 0 {
				if err := p.desired.validateMapElements(p.desired.Maps[name]); err != nil {
					return err
				}
			}
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

// unionKeys lists the keys of a and those of b that a lacks.
func unionKeys[A, B any](a map[string]A, b map[string]B) []string {
	out := make([]string, 0, len(a)+len(b))
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

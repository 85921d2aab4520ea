package apply

import (
	"maps"
	"slices"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Phases of a batch. Operations are emitted in this order, across all
// tables, so that the kernel never sees a dangling reference: objects are
// created before anything refers to them and deleted after everything that
// referred to them was flushed or deleted.
const (
	phTables        = iota // add tables
	phAddSets              // new sets with their elements, new (empty) maps
	phAddChains            // new (empty) chains, base chain policy changes
	phElems                // element deltas of sets and maps (deletes first)
	phFlush                // flush chains to rewrite or delete
	phRecreate             // replace sets, maps and base chains whose type or hook changed
	phRecreateElems        // the replaced sets' and maps' elements
	phRules                // refill rewritten chains
	phDelMaps              // stale maps (their elements may jump to stale chains)
	phDelChains            // stale chains
	phDelSets              // stale sets
	phDelTables            // stale tables
	numPhases
)

// plan is the work of one sync across all tables.
type plan struct {
	phases [numPhases][]nft.Op
	stats  Stats
	errs   []nft.ObjectError
	edits  map[nft.TableID]*edits
}

func (p *plan) emit(phase int, ops ...nft.Op) { p.phases[phase] = append(p.phases[phase], ops...) }

func (p *plan) batch() *nft.Batch {
	n := 0
	for _, ops := range p.phases {
		n += len(ops)
	}
	b := &nft.Batch{Ops: make([]nft.Op, 0, n)}
	for _, ops := range p.phases {
		b.Ops = append(b.Ops, ops...)
	}
	return b
}

// tablePlan plans one table.
type tablePlan struct {
	*plan
	id      nft.TableID
	want    *nft.Table // nil: the table is to be deleted
	cur     *mirror    // nil: the table does not exist
	ed      *edits
	flushed map[string]bool
	rewrite map[string]bool
	changed map[string]bool // sets and maps replaced or deleted: their users must be rewritten
}

// scope lists the names to look at: all (chains, sets and maps desired or
// present), or those of the desired table's journal.
type scope struct {
	chains, sets []string // sets and maps share one namespace
}

func fullScope(want *nft.Table, cur *mirror) scope {
	var s scope
	add := func(dst *[]string, names ...[]string) {
		for _, n := range names {
			*dst = append(*dst, n...)
		}
	}
	if want != nil {
		add(&s.chains, want.ChainNames())
		add(&s.sets, want.SetNames(), want.MapNames())
	}
	if cur != nil {
		add(&s.chains, slices.Collect(maps.Keys(cur.chains)))
		add(&s.sets, slices.Collect(maps.Keys(cur.sets)), slices.Collect(maps.Keys(cur.maps)))
	}
	return s.sorted()
}

func journalScope(want *nft.Table) scope {
	j := want.Journal()
	s := scope{chains: slices.Collect(maps.Keys(j.Chains))}
	s.sets = append(slices.Collect(maps.Keys(j.Sets)), slices.Collect(maps.Keys(j.Maps))...)
	return s.sorted()
}

func (s scope) sorted() scope {
	slices.Sort(s.chains)
	slices.Sort(s.sets)
	return scope{chains: slices.Compact(s.chains), sets: slices.Compact(s.sets)}
}

// planTable plans the changes that make table id hold want.
func (p *plan) planTable(id nft.TableID, want *nft.Table, cur *mirror, sc scope) {
	tp := &tablePlan{
		plan: p, id: id, want: want, cur: cur, ed: newEdits(),
		flushed: map[string]bool{}, rewrite: map[string]bool{}, changed: map[string]bool{},
	}
	p.edits[id] = tp.ed
	switch {
	case want == nil && cur == nil:
		return
	case want == nil:
		p.emit(phDelTables, nft.Op{Kind: nft.OpDeleteTable, Table: id})
		p.stats.TablesDeleted++
		return
	case cur == nil:
		p.emit(phTables, nft.Op{Kind: nft.OpAddTable, Table: id})
		p.stats.TablesAdded++
		tp.cur = newMirror()
	}
	for _, name := range sc.sets {
		tp.planSetOrMap(name)
	}
	for _, name := range sc.chains {
		tp.planChain(name)
	}
	tp.rewriteUsers()
	tp.checkDeleted(sc)
	tp.writeRules()
}

// planChain decides whether a chain is new, deleted, replaced (its hook
// changed), rewritten (its rules changed) or kept.
func (tp *tablePlan) planChain(name string) {
	want, cur := tp.want.Chain(name), tp.cur.chains[name]
	switch {
	case want == nil && cur == nil:
	case want == nil:
		tp.flush(name)
		tp.emit(phDelChains, nft.Op{Kind: nft.OpDeleteChain, Table: tp.id, Name: name})
		tp.ed.chains[name] = nil
		tp.stats.ChainsDeleted++
	case cur == nil:
		tp.emit(phAddChains, nft.Op{Kind: nft.OpAddChain, Table: tp.id, Name: name, Base: want.Base})
		tp.rewrite[name] = true
		tp.stats.ChainsAdded++
	case !nft.SameHook(cur.Base, want.Base):
		tp.flush(name)
		tp.emit(phRecreate, nft.Op{Kind: nft.OpDeleteChain, Table: tp.id, Name: name},
			nft.Op{Kind: nft.OpAddChain, Table: tp.id, Name: name, Base: want.Base})
		tp.rewriteChain(name)
	default:
		if !nft.EqualBase(cur.Base, want.Base) {
			tp.emit(phAddChains, nft.Op{Kind: nft.OpAddChain, Table: tp.id, Name: name, Base: want.Base})
		}
		if tp.sameRules(cur, want) {
			tp.ed.chains[name] = want
		} else {
			tp.rewriteChain(name)
		}
	}
}

// sameRules compares a known chain's rules with the desired ones: by
// pointer, then rule by rule, and for a chain read from the backend in
// canonical form (as the kernel gives rules back).
func (tp *tablePlan) sameRules(cur, want *nft.Chain) bool {
	if cur == want {
		return true
	}
	if len(cur.Rules) != len(want.Rules) {
		return false
	}
	read := tp.cur.read[cur]
	for i := range want.Rules {
		if cur.Rules[i].Equal(want.Rules[i]) {
			continue
		}
		if !read {
			return false
		}
		canon, err := nft.Canonical(tp.id.Family, want.Rules[i])
		if err != nil || !cur.Rules[i].Equal(canon) {
			return false
		}
	}
	return true
}

func (tp *tablePlan) flush(name string) {
	if !tp.flushed[name] && tp.cur.chains[name] != nil {
		tp.flushed[name] = true
		tp.emit(phFlush, nft.Op{Kind: nft.OpFlushChain, Table: tp.id, Name: name})
	}
}

// rewriteChain flushes an existing chain and schedules its rules.
func (tp *tablePlan) rewriteChain(name string) {
	if tp.rewrite[name] {
		return
	}
	tp.flush(name)
	tp.rewrite[name] = true
	tp.stats.ChainsRewritten++
}

// rewriteUsers rewrites the kept chains that look up a set or map being
// replaced: the kernel will not delete a set still in use.
func (tp *tablePlan) rewriteUsers() {
	for _, name := range slices.Sorted(maps.Keys(tp.changed)) {
		for _, kind := range []nft.RefKind{nft.RefSet, nft.RefMap} {
			if !tp.want.Referenced(kind, name) {
				continue
			}
			for _, o := range tp.want.Users(kind, name) {
				if o.Kind == nft.ObjectChain && tp.cur.chains[o.Name] != nil {
					tp.rewriteChain(o.Name)
				}
			}
		}
	}
}

// checkDeleted refuses to delete an object that a desired rule or map
// element still refers to, blaming the referrers.
func (tp *tablePlan) checkDeleted(sc scope) {
	check := func(kind nft.RefKind, name string) {
		if !tp.want.Referenced(kind, name) {
			return
		}
		for _, o := range tp.want.Users(kind, name) {
			tp.errs = append(tp.errs, nft.ObjectError{Object: o, Op: nft.OpAddRule, Err: errMissingRef(kind, name)})
		}
	}
	for _, name := range sc.chains {
		if tp.want.Chain(name) == nil {
			check(nft.RefChain, name)
		}
	}
	for _, name := range sc.sets {
		if tp.want.Set(name) == nil {
			check(nft.RefSet, name)
		}
		if tp.want.Map(name) == nil {
			check(nft.RefMap, name)
		}
	}
}

// writeRules validates the chains being written and emits their rules.
func (tp *tablePlan) writeRules() {
	n := 0
	for name := range tp.rewrite {
		n += len(tp.want.Chain(name).Rules)
	}
	tp.phases[phRules] = slices.Grow(tp.phases[phRules], n)
	for _, name := range slices.Sorted(maps.Keys(tp.rewrite)) {
		c := tp.want.Chain(name)
		if errs := tp.want.CheckChain(c); len(errs) > 0 {
			tp.errs = append(tp.errs, errs...)
			continue
		}
		for i := range c.Rules {
			tp.emit(phRules, nft.Op{Kind: nft.OpAddRule, Table: tp.id, Name: name, Rule: &c.Rules[i], Index: i})
		}
		tp.ed.chains[name] = c
		tp.stats.RulesWritten += len(c.Rules)
	}
}

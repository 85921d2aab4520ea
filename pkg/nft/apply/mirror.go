package apply

import (
	"github.com/calico-host/calico-host/pkg/nft"
)

// mirror is what the Applier knows a backend's table holds: after a
// commit, pointers to the desired objects it wrote (no copies: a Table's
// objects are never modified once put); after a read, the objects read.
type mirror struct {
	chains map[string]*nft.Chain
	sets   map[string]*nft.Set
	maps   map[string]*nft.Map
	// read marks the objects that came from a read of the backend: they are
	// compared with desired objects in canonical form.
	read map[any]bool
	// handles are the backend's handles of the sets as last read, kept
	// while a set is not replaced (a new set has none until a read).
	handles map[string]uint64
	// stale marks the sets whose elements the mirror does not know: left
	// unread and not trusted, or touched by a commit that failed without
	// saying whether it applied. The next sync writes them whole.
	stale map[string]bool
	// trusted counts, for a big set, the full syncs that trusted its
	// elements without reading them since it was last written whole.
	trusted map[string]int
}

func newMirror() *mirror {
	return &mirror{
		chains: map[string]*nft.Chain{}, sets: map[string]*nft.Set{}, maps: map[string]*nft.Map{},
		read: map[any]bool{}, handles: map[string]uint64{}, stale: map[string]bool{}, trusted: map[string]int{},
	}
}

// mirrorOfRead makes a mirror of a table read from the backend. A set left
// unread takes the elements of old, the mirror before the read, when they
// can be trusted (see trust: it counts those); otherwise it is stale.
func mirrorOfRead(t *nft.Table, old *mirror, maxTrust int) (m *mirror, trusted int) {
	m = newMirror()
	for _, name := range t.ChainNames() {
		c := t.Chain(name)
		m.chains[name], m.read[c] = c, true
	}
	for _, name := range t.SetNames() {
		s := t.Set(name)
		m.sets[name], m.handles[name] = s, s.Handle
		if !s.Unread {
			continue
		}
		if n, ok := old.trust(s, maxTrust); ok {
			m.sets[name], m.trusted[name] = old.sets[name], n+1
			trusted++
		} else {
			m.stale[name] = true
		}
	}
	for _, name := range t.MapNames() {
		m.maps[name] = t.Map(name)
	}
	return m, trusted
}

// trust reports whether the elements m knows of set s (read without its
// elements) are what the backend holds, and how many full syncs trusted
// them already. They are when m knows them (not stale), the set is the one
// m knew (same handle: not deleted and made again, say by a restore of a
// saved ruleset) and they were trusted fewer than max times since they
// were last written whole. Elements change only through commits naming the
// set: the Applier's own, or someone's nft command on its table, which this
// does not see; the bound on trusting makes a later full sync write the set
// whole, and repair that too.
func (m *mirror) trust(s *nft.Set, max int) (int, bool) {
	if m == nil {
		return 0, false
	}
	old := m.sets[s.Name]
	ok := old != nil && !m.stale[s.Name] && m.handles[s.Name] != 0 && m.handles[s.Name] == s.Handle &&
		old.Type == s.Type && old.Interval == s.Interval && m.trusted[s.Name] < max
	return m.trusted[s.Name], ok
}

// edits are the changes a planned batch makes to the mirror, applied once
// the batch commits.
type edits struct {
	chains map[string]*nft.Chain // nil value: deleted
	sets   map[string]*nft.Set
	maps   map[string]*nft.Map
	whole  map[string]bool // sets written whole; true: made anew (a new handle)
}

func newEdits() *edits {
	return &edits{chains: map[string]*nft.Chain{}, sets: map[string]*nft.Set{}, maps: map[string]*nft.Map{},
		whole: map[string]bool{}}
}

func (e *edits) apply(m *mirror) {
	for name, c := range e.chains {
		delete(m.read, m.chains[name])
		if c == nil {
			delete(m.chains, name)
		} else {
			m.chains[name] = c
		}
	}
	for name, s := range e.sets {
		if s == nil {
			delete(m.sets, name)
		} else {
			m.sets[name] = s
		}
		made, whole := e.whole[name]
		if s == nil || made {
			delete(m.handles, name)
		}
		if s == nil || whole {
			delete(m.stale, name)
			delete(m.trusted, name)
		}
	}
	for name, mp := range e.maps {
		if mp == nil {
			delete(m.maps, name)
		} else {
			m.maps[name] = mp
		}
	}
}

// markStale marks the sets the batch touched as stale: it failed without
// saying whether it applied.
func (m *mirror) markStale(b *nft.Batch, id nft.TableID) {
	for i := range b.Ops {
		op := &b.Ops[i]
		if op.Table == id && op.Object().Kind == nft.ObjectSet && m.sets[op.Name] != nil {
			m.stale[op.Name] = true
		}
	}
}

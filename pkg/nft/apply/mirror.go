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
}

func newMirror() *mirror {
	return &mirror{
		chains: map[string]*nft.Chain{}, sets: map[string]*nft.Set{}, maps: map[string]*nft.Map{},
		read: map[any]bool{},
	}
}

// mirrorOfRead makes a mirror of a table read from the backend.
func mirrorOfRead(t *nft.Table) *mirror {
	m := newMirror()
	for _, name := range t.ChainNames() {
		c := t.Chain(name)
		m.chains[name], m.read[c] = c, true
	}
	for _, name := range t.SetNames() {
		m.sets[name] = t.Set(name)
	}
	for _, name := range t.MapNames() {
		m.maps[name] = t.Map(name)
	}
	return m
}

// edits are the changes a planned batch makes to the mirror, applied once
// the batch commits.
type edits struct {
	chains map[string]*nft.Chain // nil value: deleted
	sets   map[string]*nft.Set
	maps   map[string]*nft.Map
}

func newEdits() *edits {
	return &edits{chains: map[string]*nft.Chain{}, sets: map[string]*nft.Set{}, maps: map[string]*nft.Map{}}
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
	}
	for name, mp := range e.maps {
		if mp == nil {
			delete(m.maps, name)
		} else {
			m.maps[name] = mp
		}
	}
}

package nft

// changes is the journal of a tracked Ruleset: the names of the chains, and
// of the sets and maps (one namespace, as in the kernel), changed since an
// Applier last applied the ruleset.
type changes struct {
	chains map[string]struct{}
	sets   map[string]struct{}
	epoch  uint64 // bumped every time an Applier takes the journal
}

// Track makes r record which objects its owner adds, replaces, edits or
// deletes, so that an Apply of r that follows an Apply of r by the same
// Applier plans only those objects instead of comparing the whole ruleset.
// Full syncs still compare everything with the kernel.
//
// After Track every change must be reported. AddChain, AddSet, AddMap,
// DeleteChain, DeleteSet and DeleteMap report their own; an edit in place
// (a chain's rules, a set's or a map's elements, a map entry stored or
// deleted directly) must be reported with TouchChain, TouchSet or TouchMap.
// A change that is not reported is not written until the next full sync.
// A tracked ruleset is meant for one Applier.
func (r *Ruleset) Track() {
	if r.changes == nil {
		r.changes = &changes{chains: map[string]struct{}{}, sets: map[string]struct{}{}}
	}
}

// Tracked reports whether Track was called.
func (r *Ruleset) Tracked() bool { return r.changes != nil }

// TouchChain reports that the chain name was added, edited or deleted.
func (r *Ruleset) TouchChain(name string) {
	if r.changes != nil {
		r.changes.chains[name] = struct{}{}
	}
}

// TouchSet reports that the set name was added, edited or deleted.
func (r *Ruleset) TouchSet(name string) {
	if r.changes != nil {
		r.changes.sets[name] = struct{}{}
	}
}

// TouchMap reports that the map name was added, edited or deleted.
func (r *Ruleset) TouchMap(name string) { r.TouchSet(name) }

// DeleteChain removes the chain name.
func (r *Ruleset) DeleteChain(name string) {
	delete(r.Chains, name)
	r.TouchChain(name)
}

// DeleteSet removes the set name.
func (r *Ruleset) DeleteSet(name string) {
	delete(r.Sets, name)
	r.TouchSet(name)
}

// DeleteMap removes the map name.
func (r *Ruleset) DeleteMap(name string) {
	delete(r.Maps, name)
	r.TouchMap(name)
}

// journal returns the changes recorded since the given epoch, or nil when
// r is not tracked or an Applier took the journal since.
func (r *Ruleset) journal(epoch uint64) *changes {
	if r.changes == nil || r.changes.epoch != epoch {
		return nil
	}
	return r.changes
}

// resetJournal forgets the recorded changes (they are applied) and returns
// the epoch the next journal starts.
func (r *Ruleset) resetJournal() uint64 {
	if r.changes == nil {
		return 0
	}
	clear(r.changes.chains)
	clear(r.changes.sets)
	r.changes.epoch++
	return r.changes.epoch
}

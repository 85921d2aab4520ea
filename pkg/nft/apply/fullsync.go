package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/calico-host/calico-host/pkg/nft"
)

// A full sync reads the backend, but not always all of it. The ruleset
// generation says whether anything committed since the mirror was known
// exact (then nothing is read); and a big set's elements are never read
// back (the kernel's dump of a million elements takes minutes), but
// trusted or written whole (see mirror.trust).

// readAt says how the mirror of a sync was had: from a full read (full)
// made at generation gen (0: unknown).
type readAt struct {
	full bool
	gen  uint32
}

// current returns what the backend holds: the mirror, or for a full sync
// a fresh read of it (the mirror itself when the ruleset generation has not
// moved since it was known exact). The read leaves out the elements of big
// sets (see mirror.trust) and of sets not desired (deleted whole).
func (a *Applier) current(ctx context.Context, want map[nft.TableID]*nft.Table, full bool, st *Stats) (map[nft.TableID]*mirror, readAt, error) {
	if !full {
		return a.mirror, readAt{}, nil
	}
	start := time.Now()
	defer func() { st.ReadTime = time.Since(start) }()
	gen, err := a.backend.Generation(ctx)
	if err == nil && gen != 0 && gen == a.gen && a.mirror != nil {
		st.Unchanged = true
		return a.mirror, readAt{}, nil
	}
	tables, err := a.backend.Read(ctx, a.owned, nft.ReadOptions{SkipElements: a.skipElements(want)})
	if err != nil {
		return nil, readAt{}, fmt.Errorf("reading tables: %w", err)
	}
	if after, err := a.backend.Generation(ctx); err != nil || after != gen {
		gen = 0 // not known to be the generation read
	}
	cur := map[nft.TableID]*mirror{}
	for _, t := range tables {
		m, trusted := mirrorOfRead(t, a.mirror[t.ID()], a.maxTrust)
		cur[t.ID()], st.SetsTrusted = m, st.SetsTrusted+trusted
	}
	return cur, readAt{full: true, gen: gen}, nil
}

// skipElements names the sets whose elements a full sync does not read:
// those not desired (deleted whole) and the big ones (desired or known).
func (a *Applier) skipElements(want map[nft.TableID]*nft.Table) func(nft.TableID, string) bool {
	return func(id nft.TableID, name string) bool {
		var ws *nft.Set
		if t := want[id]; t != nil {
			ws = t.Set(name)
		}
		if ws == nil || len(ws.Elements) >= a.bigSet {
			return true
		}
		m := a.mirror[id]
		return m != nil && m.sets[name] != nil && len(m.sets[name].Elements) >= a.bigSet
	}
}

// markStale: a commit failed without saying whether it applied; the sets
// it touched are not known any more.
func (a *Applier) markStale(b *nft.Batch) {
	for id, m := range a.mirror {
		m.markStale(b, id)
	}
}

// setGeneration records the generation at which the mirror is exact, or
// none while it trusts big sets' elements it did not read (the next full
// syncs read the tables again, and write those sets whole in the end).
func (a *Applier) setGeneration(gen uint32) {
	a.gen = gen
	for _, m := range a.mirror {
		if len(m.trusted) > 0 {
			a.gen = 0
		}
	}
}

// learnHandles reads the handles of the big sets a commit made, while the ruleset generation is
// still the commit's (so that they are those sets): a later full sync can trust their elements
// instead of writing them whole (see mirror.trust). It costs a dump of the tables' set
// declarations, only after a commit that made a big set.
func (a *Applier) learnHandles(ctx context.Context, p *plan, gen uint32) {
	made := map[nft.TableID][]string{}
	var ids []nft.TableID
	for id, ed := range p.edits {
		for name, isNew := range ed.whole {
			if s := ed.sets[name]; isNew && s != nil && len(s.Elements) >= a.bigSet {
				made[id] = append(made[id], name)
			}
		}
		if len(made[id]) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	tables, err := a.backend.Read(ctx, ids, nft.ReadOptions{SetsOnly: true})
	if g, gerr := a.backend.Generation(ctx); err != nil || gerr != nil || g != gen {
		return
	}
	for _, t := range tables {
		m := a.mirror[t.ID()]
		for _, name := range made[t.ID()] {
			if s := t.Set(name); s != nil && m != nil {
				m.handles[name] = s.Handle
			}
		}
	}
}

package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Options configures an Applier.
type Options struct {
	// Tables are the tables the Applier owns. It creates, repairs and
	// deletes these and touches nothing else; an owned table that Apply is
	// not given is deleted.
	Tables []nft.TableID
	Log    zerolog.Logger
	// BigSet is the number of elements from which a set is big: a full
	// sync does not read its elements back (default 16,384; see mirror.trust).
	BigSet int
	// TrustBigSets is how many full syncs in a row may trust a big set's
	// elements without reading them; the next one writes it whole
	// (default 10).
	TrustBigSets int
}

// Applier makes a backend hold the desired tables. It keeps a mirror of
// what the backend holds, so that a normal Apply plans only what changed
// and commits one batch for all its tables. Apply must not be called
// concurrently; RequestFullSync may be called from any goroutine.
type Applier struct {
	backend nft.Backend
	log     zerolog.Logger
	owned   []nft.TableID

	mirror map[nft.TableID]*mirror // nil: unknown, the next sync reads the backend
	// gen is the backend's ruleset generation when the mirror was last known
	// exact (0: unknown). While it has not moved, nothing changed the
	// backend and a full sync need not read it.
	gen      uint32
	bigSet   int
	maxTrust int
	needFull atomic.Bool
	// compareAll: the mirror holds what a refused full sync read; the next
	// sync compares every object with it (journals do not cover that).
	compareAll bool
	last       map[nft.TableID]applied // the tables of the last successful sync
}

// applied identifies a desired table as last written: the Table and its
// journal epoch then. The same Table at the same epoch is planned from its
// journal.
type applied struct {
	t     *nft.Table
	epoch uint64
}

// Stats describes one Apply.
type Stats struct {
	FullSync bool
	// Unchanged: a full sync that read nothing, the ruleset generation not
	// having moved since the mirror was known exact.
	Unchanged       bool
	SetsTrusted     int // big sets whose elements a full sync did not read, trusting the mirror
	SetsRewritten   int // sets whose elements were not known, written whole
	TablesAdded     int
	TablesDeleted   int
	ChainsAdded     int
	ChainsRewritten int // existing chains flushed and refilled
	ChainsDeleted   int
	RulesWritten    int
	SetsAdded       int
	SetsDeleted     int
	MapsAdded       int
	MapsDeleted     int
	ElementsAdded   int // set and map elements
	ElementsRemoved int
	Ops             int // operations in the batch (0: nothing committed)
	Messages        int // netlink messages sent
	Bytes           int // netlink bytes sent
	ReadTime        time.Duration
	PlanTime        time.Duration
	CommitTime      time.Duration // includes EncodeTime
	EncodeTime      time.Duration
}

// New returns an Applier for the owned tables. Its first Apply is a full
// sync.
func New(b nft.Backend, opts Options) *Applier {
	a := &Applier{
		backend:  b,
		log:      opts.Log.With().Str("subcomponent", "nft-applier").Logger(),
		owned:    slices.Clone(opts.Tables),
		bigSet:   cmp.Or(opts.BigSet, 1<<14),
		maxTrust: cmp.Or(opts.TrustBigSets, 10),
	}
	a.needFull.Store(true)
	return a
}

// RequestFullSync makes the next Apply read the backend and repair drift.
func (a *Applier) RequestFullSync() { a.needFull.Store(true) }

// FullSyncPending reports whether the next Apply is a full sync.
func (a *Applier) FullSyncPending() bool { return a.needFull.Load() || a.mirror == nil }

// Apply makes the owned tables hold desired (owned tables not given are
// deleted) in one batch. A refused batch returns a *nft.CommitError naming
// the objects at fault; nothing of it was applied and the Applier still
// knows what the backend holds, so the caller may replace those objects
// and Apply again. Any other failure makes the next Apply a full sync.
func (a *Applier) Apply(ctx context.Context, desired ...*nft.Table) (Stats, error) {
	want, err := a.index(desired)
	if err != nil {
		return Stats{}, err
	}
	full := a.needFull.Load() || a.mirror == nil
	if full {
		a.needFull.Store(false) // a request arriving during this sync is kept
	}
	st, err := a.sync(ctx, want, full)
	if err != nil {
		var ce *nft.CommitError
		if !errors.As(err, &ce) {
			a.needFull.Store(true)
		}
		return st, err
	}
	a.logStats(st)
	return st, nil
}

// index checks that the desired tables are owned and distinct.
func (a *Applier) index(desired []*nft.Table) (map[nft.TableID]*nft.Table, error) {
	want := map[nft.TableID]*nft.Table{}
	for _, t := range desired {
		id := t.ID()
		if !slices.Contains(a.owned, id) {
			return nil, fmt.Errorf("table %s is not owned by this Applier", id)
		}
		if want[id] != nil {
			return nil, fmt.Errorf("table %s given twice", id)
		}
		want[id] = t
	}
	return want, nil
}

func (a *Applier) sync(ctx context.Context, want map[nft.TableID]*nft.Table, full bool) (Stats, error) {
	var st Stats
	cur, read, err := a.current(ctx, want, full, &st)
	if err != nil {
		return st, err
	}
	start := time.Now()
	p := &plan{edits: map[nft.TableID]*edits{}}
	for _, id := range a.owned {
		p.planTable(id, want[id], cur[id], a.scopeOf(id, want[id], cur[id], full))
	}
	p.stats.FullSync, p.stats.Unchanged, p.stats.SetsTrusted = full, st.Unchanged, st.SetsTrusted
	p.stats.ReadTime, p.stats.PlanTime = st.ReadTime, time.Since(start)
	st = p.stats
	if len(p.errs) > 0 {
		a.keepRead(cur, read)
		return st, &nft.CommitError{Objects: p.errs}
	}
	b := p.batch()
	st.Ops = len(b.Ops)
	if len(b.Ops) > 0 {
		start = time.Now()
		info, err := a.backend.Commit(ctx, b)
		st.CommitTime, st.Messages, st.Bytes, st.EncodeTime = time.Since(start), info.Messages, info.Bytes, info.EncodeTime
		if err != nil {
			a.keepRead(cur, read)
			if !errors.As(err, new(*nft.CommitError)) {
				a.markStale(b)
			}
			return st, fmt.Errorf("committing a batch of %d operations: %w", len(b.Ops), err)
		}
		read = readAt{full: true, gen: info.Generation} // the mirror, once edited, is exact at this generation
	}
	a.committed(cur, p, want, read)
	if len(b.Ops) > 0 && read.gen != 0 {
		a.learnHandles(ctx, p, read.gen)
	}
	return st, nil
}

// scopeOf returns the names to plan for one table.
func (a *Applier) scopeOf(id nft.TableID, want *nft.Table, cur *mirror, full bool) scope {
	if want != nil && !full && !a.compareAll {
		if l, ok := a.last[id]; ok && l.t == want && l.epoch == want.Journal().Epoch {
			return journalScope(want)
		}
	}
	return fullScope(want, cur)
}

// keepRead: after a refused full sync, the read is what the backend holds.
func (a *Applier) keepRead(cur map[nft.TableID]*mirror, read readAt) {
	if read.full {
		a.mirror, a.compareAll = cur, true
		a.setGeneration(read.gen)
	}
}

// committed updates the mirror and the journals once a batch committed (or
// there was nothing to commit): after a full read or a commit, the mirror
// is exact at read.gen (see setGeneration).
func (a *Applier) committed(cur map[nft.TableID]*mirror, p *plan, want map[nft.TableID]*nft.Table, read readAt) {
	defer func() {
		if read.full {
			a.setGeneration(read.gen)
		}
	}()
	next := map[nft.TableID]*mirror{}
	for _, id := range a.owned {
		if want[id] == nil {
			continue
		}
		m := cur[id] // edited in place: a partial sync costs what changed
		if m == nil {
			m = newMirror()
		}
		p.edits[id].apply(m)
		next[id] = m
	}
	a.mirror, a.compareAll = next, false
	a.last = map[nft.TableID]applied{}
	for id, t := range want {
		a.last[id] = applied{t: t, epoch: t.ResetJournal()}
	}
}

func (a *Applier) logStats(st Stats) {
	a.log.Info().
		Bool("full", st.FullSync).
		Bool("unchanged", st.Unchanged).
		Int("setsTrusted", st.SetsTrusted).
		Int("setsRewritten", st.SetsRewritten).
		Int("ops", st.Ops).
		Int("chainsAdded", st.ChainsAdded).
		Int("chainsRewritten", st.ChainsRewritten).
		Int("chainsDeleted", st.ChainsDeleted).
		Int("rules", st.RulesWritten).
		Int("elementsAdded", st.ElementsAdded).
		Int("elementsRemoved", st.ElementsRemoved).
		Dur("read", st.ReadTime).
		Dur("plan", st.PlanTime).
		Dur("commit", st.CommitTime).
		Msg("nftables sync")
}

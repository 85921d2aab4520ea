package nft

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Applier keeps the kernel's table equal to the desired Ruleset. It remembers
// what it last wrote (a mirror), so that a normal Apply only sends the
// difference: changed chains are flushed and refilled whole, set and map
// elements are added and deleted one by one, everything in one atomic
// transaction. A full sync reads the kernel first and repairs any drift in
// that same single transaction; it happens on the first Apply, after any
// failed commit and after RequestFullSync.
//
// Apply must not be called concurrently; RequestFullSync may be called from
// any goroutine.
type Applier struct {
	kernel   Kernel
	log      zerolog.Logger
	mirror   *mirror // nil until the first successful sync
	needFull atomic.Bool
	// last is the ruleset of the last successful sync and lastEpoch its
	// journal's epoch then: when the same tracked ruleset comes again, only
	// the objects in its journal are planned.
	last      *Ruleset
	lastEpoch uint64
}

// Stats describes one Apply.
type Stats struct {
	FullSync        bool
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
	Ops             int // operations in the transaction (0: nothing committed)
	Messages        int // netlink messages sent
	Bytes           int // netlink bytes sent
	ReadTime        time.Duration
	PlanTime        time.Duration
	CommitTime      time.Duration // includes EncodeTime
	EncodeTime      time.Duration // turning the transaction into netlink messages
}

// NewApplier returns an Applier writing through k. Its first Apply is a full
// sync.
func NewApplier(k Kernel, log zerolog.Logger) *Applier {
	a := &Applier{kernel: k, log: log.With().Str("component", "nft-applier").Logger()}
	a.needFull.Store(true)
	return a
}

// FullSyncPending reports whether the next Apply is a full sync.
func (a *Applier) FullSyncPending() bool { return a.needFull.Load() || a.mirror == nil }

// RequestFullSync makes the next Apply read the kernel and repair drift.
func (a *Applier) RequestFullSync() { a.needFull.Store(true) }

// Apply makes the table match desired. When a partial sync fails to commit,
// Apply retries at once with a full sync; if that fails too, the error is
// returned and the next Apply is a full sync again.
func (a *Applier) Apply(ctx context.Context, desired *Ruleset) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	if desired == nil {
		desired = NewRuleset()
	}
	full := a.needFull.Load() || a.mirror == nil
	st, committed, err := a.sync(ctx, desired, full)
	if err != nil && !full && committed {
		a.log.Warn().Err(err).Msg("partial nftables sync failed; retrying with a full sync")
		st, _, err = a.sync(ctx, desired, true)
	}
	if err != nil {
		return st, err
	}
	a.logStats(st)
	return st, nil
}

// sync runs one sync. committed reports whether the failure (if any) came
// from the kernel's commit rather than from the desired ruleset.
func (a *Applier) sync(ctx context.Context, desired *Ruleset, full bool) (Stats, bool, error) {
	cur, readTime, err := a.current(ctx, full)
	if err != nil {
		return Stats{FullSync: full}, false, err
	}
	start := time.Now()
	tx, edits, st, err := plan(cur, desired, a.scope(desired, full))
	st.FullSync, st.ReadTime, st.PlanTime = full, readTime, time.Since(start)
	if err != nil {
		if full {
			a.needFull.Store(true)
		}
		return st, false, fmt.Errorf("planning nftables update: %w", err)
	}
	if tx.Len() > 0 {
		if a.log.Debug().Enabled() {
			a.log.Debug().Str("transaction", tx.Script(a.table())).Msg("committing nftables transaction")
		}
		start = time.Now()
		info, err := a.kernel.Commit(ctx, tx)
		st.CommitTime, st.Messages, st.Bytes = time.Since(start), info.Messages, info.Bytes
		st.EncodeTime = info.EncodeTime
		if err != nil {
			a.needFull.Store(true)
			a.mirror = nil
			return st, true, fmt.Errorf("committing nftables transaction of %d operations: %w", tx.Len(), err)
		}
	}
	edits.apply(cur)
	cur.table, cur.read = true, false
	a.mirror = cur
	a.last, a.lastEpoch = desired, desired.resetJournal()
	return st, false, nil
}

// scope returns the journal of changes to plan, or nil to compare every
// object: on a full sync, for a ruleset other than the last one applied,
// and for an untracked ruleset.
func (a *Applier) scope(desired *Ruleset, full bool) *changes {
	if full || desired != a.last {
		return nil
	}
	return desired.journal(a.lastEpoch)
}

// current returns the state to diff against: the mirror, or for a full sync
// a fresh read of the kernel.
func (a *Applier) current(ctx context.Context, full bool) (*mirror, time.Duration, error) {
	if !full {
		return a.mirror, 0, nil
	}
	a.needFull.Store(false) // a request arriving during this sync is kept
	start := time.Now()
	ks, err := a.kernel.Read(ctx)
	if err != nil {
		a.needFull.Store(true)
		return nil, 0, fmt.Errorf("reading nftables state: %w", err)
	}
	return mirrorFromKernel(ks), time.Since(start), nil
}

// table names the kernel's table for logs.
func (a *Applier) table() string {
	if t, ok := a.kernel.(interface{ Table() string }); ok {
		return t.Table()
	}
	return DefaultTable
}

func (a *Applier) logStats(st Stats) {
	a.log.Info().
		Str("table", a.table()).
		Bool("full", st.FullSync).
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

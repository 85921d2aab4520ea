package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/nft"
)

// A quarantine keeps the objects the kernel refused out of the tables, so that one policy,
// profile or set that cannot be programmed does not stop every other change. A refused chain
// is replaced by a chain that drops everything reaching it: the endpoints whose traffic would
// reach the policy fail closed. A refused set is replaced by an empty set of the same type and
// every chain that looks it up is replaced by a drop too (an empty set would make a deny rule
// match nothing). A quarantined object is tried again when the builder renders it anew (its
// policy, profile or set changed) and periodically, with a growing delay.
//
// The builder keeps the true objects: before each build the quarantine puts them back (without
// recording a change, so the builder's incremental updates apply to what it rendered), and after
// the build it replaces those the builder left alone.
//
// A refused static chain cannot be replaced; the user values it holds can (objectSource
// entries, see ruleset/values.go): the builder leaves a quarantined value out of the static
// chains (withheld), and the quarantine tells it which values to render again (changed).
type quarantine struct {
	log     zerolog.Logger
	entries map[qKey]*qEntry
	count   atomic.Int64 // len(entries), for status reports from other goroutines
	names   rulesetNames
	current func(key string) any // a user value's current version (nil: gone)
	changed []string             // user values quarantined or released since takeChanged
}

// rulesetNames is what the quarantine asks of the ruleset builder (ruleset.Builder): what the
// objects of its tables and the user values of its static chains are, and which user values a
// refused static chain holds.
type rulesetNames interface {
	// Describe is an object's metric label and description ("" for one that may not be
	// quarantined).
	Describe(kind nft.ObjectKind, name string) (label, what string)
	// DescribeValue is a user value's metric label and description.
	DescribeValue(key string) (label, what string)
	// ValuesOf lists the user values of refused static chain o holding one of keys (all of them
	// when keys is empty).
	ValuesOf(o nft.Object, keys []nft.Key) []string
}

// objectSource is the kind of the entries of user values of the static chains: they are not
// objects of the tables (their qKey.table is -1).
const objectSource nft.ObjectKind = 0xff

type qKey struct {
	table int // index into the builder's tables
	kind  nft.ObjectKind
	name  string
}

type qEntry struct {
	original    any // *nft.Chain or *nft.Set: what the builder rendered
	replacement any // what the table holds instead
	cause       *qKey
	err         string
	kind, what  string // metric label and the object's description
	retry       backoff.Backoff
	retryAt     time.Time
	trying      bool
}

// maxQuarantineRounds bounds the commits of one apply: each refused commit quarantines at
// least one more object (usually every object at fault: see refused).
const maxQuarantineRounds = 32

func newQuarantine(log zerolog.Logger) *quarantine {
	return &quarantine{log: log, entries: map[qKey]*qEntry{}}
}

// source tells the quarantine about the builder whose objects it quarantines, and how to find
// a user value's current version.
func (q *quarantine) source(names rulesetNames, current func(key string) any) {
	q.names, q.current = names, current
}

// describe is the metric label and description of the object or user value of k.
func (q *quarantine) describe(k qKey) (label, what string) {
	if k.kind == objectSource {
		return q.names.DescribeValue(k.name)
	}
	return q.names.Describe(k.kind, k.name)
}

// restore puts the builder's objects back into the tables before a build.
func (q *quarantine) restore(tables []*nft.Table) {
	for k, e := range q.entries {
		if k.kind == objectSource {
			continue
		}
		t := tables[k.table]
		switch o := e.original.(type) {
		case *nft.Chain:
			if t.Chain(k.name) == e.replacement {
				t.InsertChain(o)
			}
		case *nft.Set:
			if t.Set(k.name) == e.replacement {
				t.InsertSet(o)
			}
		}
	}
}

// enforce replaces, after a build, the quarantined objects the builder left unchanged and whose
// retry is not due; it releases those that changed or went.
func (q *quarantine) enforce(tables []*nft.Table, now time.Time) {
	for _, k := range q.sortedKeys() {
		e := q.entries[k]
		if e.cause != nil || k.kind == objectSource {
			continue
		}
		switch cur := current(tables[k.table], k); {
		case cur == nil:
			delete(q.entries, k)
		case cur != e.original:
			q.log.Info().Str("kind", e.kind).Str("object", e.what).Msg("Quarantined object changed; trying it again")
			delete(q.entries, k)
		case !now.Before(e.retryAt):
			e.trying = true
			putBack(tables[k.table], e)
		default:
			e.trying = false
			q.replace(tables[k.table], k, e)
		}
	}
	q.enforceDependents(tables)
	q.count.Store(int64(len(q.entries)))
}

// enforceDependents drops the chains that look up a quarantined (replaced) set, and releases
// the dependents of sets no longer replaced.
func (q *quarantine) enforceDependents(tables []*nft.Table) {
	for k, e := range q.entries {
		if e.cause == nil {
			continue
		}
		if p := q.entries[*e.cause]; p == nil || p.trying || current(tables[k.table], k) != e.original {
			if current(tables[k.table], k) == e.original {
				putBack(tables[k.table], e)
			}
			delete(q.entries, k)
		}
	}
	for _, k := range q.sortedKeys() {
		e := q.entries[k]
		if k.kind != nft.ObjectSet || e.trying || e.cause != nil {
			continue
		}
		t := tables[k.table]
		for _, u := range t.Users(nft.RefSet, k.name) {
			dk := qKey{table: k.table, kind: nft.ObjectChain, name: u.Name}
			if u.Kind != nft.ObjectChain || q.entries[dk] != nil {
				continue
			}
			kind, what := q.describe(dk)
			d := &qEntry{cause: &k, kind: kind, what: what, err: "looks up quarantined " + e.what}
			d.original = t.Chain(dk.name)
			q.entries[dk] = d
			q.replace(t, dk, d)
		}
	}
	for k, e := range q.entries {
		if e.cause != nil && current(tables[k.table], k) == e.original {
			q.replace(tables[k.table], k, e)
		}
	}
}

func current(t *nft.Table, k qKey) any {
	switch k.kind {
	case nft.ObjectChain:
		if c := t.Chain(k.name); c != nil {
			return c
		}
	case nft.ObjectSet:
		if s := t.Set(k.name); s != nil {
			return s
		}
	}
	return nil
}

// putBack puts the original object again, recording the change (restore did not), so that
// the next apply writes it.
func putBack(t *nft.Table, e *qEntry) {
	switch o := e.original.(type) {
	case *nft.Chain:
		must(t.PutChain(o))
	case *nft.Set:
		must(t.PutSet(o))
	}
}

// replace puts e's replacement into the table (made on first use).
func (q *quarantine) replace(t *nft.Table, k qKey, e *qEntry) {
	switch o := e.original.(type) {
	case *nft.Chain:
		if e.replacement == nil {
			e.replacement = dropChain(o.Name, e.what)
		}
		must(t.PutChain(e.replacement.(*nft.Chain)))
	case *nft.Set:
		if e.replacement == nil {
			e.replacement = &nft.Set{Name: o.Name, Type: o.Type, Interval: o.Interval}
		}
		must(t.PutSet(e.replacement.(*nft.Set)))
	}
}

// must panics on an error that only a bug can cause: a table refusing a chain or set it held.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// dropChain is the stand-in of a quarantined chain: it drops what reaches it.
func dropChain(name, what string) *nft.Chain {
	r := nft.NewRule(nft.Counter(), nft.Drop()).WithComment("Quarantined: " + what + " could not be programmed")
	return &nft.Chain{Name: name, Rules: []nft.Rule{r}}
}

// refused quarantines the objects a refused commit names as causes (nft.CommitError.Causes:
// every object the kernel refused on its own account, so that one round quarantines them all
// whatever their number, and none refused only because of another). It returns false when it
// cannot (nothing new to quarantine, or an object that is not a policy, profile, endpoint or
// set chain or set): the apply then fails as a whole.
func (q *quarantine) refused(tables []*nft.Table, err error, now time.Time) bool {
	var ce *nft.CommitError
	if !errors.As(err, &ce) || len(ce.Objects) == 0 {
		return false
	}
	added, all := false, true
	for _, o := range ce.Causes() {
		if k, ok := q.keyOf(tables, o); ok {
			added = q.add(tables[k.table], k, ce, now) || added
			continue
		}
		values := q.names.ValuesOf(o, refusedKeys(ce, o))
		for _, v := range values {
			added = q.addSource(v, o, ce, now) || added
		}
		all = all && len(values) > 0
	}
	if added {
		q.enforceDependents(tables)
		q.count.Store(int64(len(q.entries)))
	}
	return added && all
}

// keyOf finds the table and key of a refused object, if it may be quarantined.
func (q *quarantine) keyOf(tables []*nft.Table, o nft.Object) (qKey, bool) {
	for i, t := range tables {
		if t.ID() != o.Table {
			continue
		}
		k := qKey{table: i, kind: o.Kind, name: o.Name}
		if kind, _ := q.describe(k); kind == "" || current(t, k) == nil {
			return k, false
		}
		return k, true
	}
	return qKey{}, false
}

// add quarantines k (or, for an object being retried, doubles its delay).
func (q *quarantine) add(t *nft.Table, k qKey, ce *nft.CommitError, now time.Time) bool {
	e := q.hold(k, current(t, k), objectErrors(k, ce.Objects), now)
	if e == nil {
		return false
	}
	q.replace(t, k, e)
	q.log.Error().Str("kind", e.kind).Str("object", e.what).Str("refused_by", refuser(ce)).Str("error", e.err).Time("retryAt", e.retryAt).
		Msg("An object was refused; its endpoints fail closed (traffic reaching it is dropped) until it can be programmed")
	return true
}

// addSource quarantines the user value key of static chain o (or, for a value being retried,
// doubles its delay), for the next build to leave it out.
func (q *quarantine) addSource(key string, o nft.Object, ce *nft.CommitError, now time.Time) bool {
	k := qKey{table: -1, kind: objectSource, name: key}
	e := q.hold(k, q.current(key), objectErrors(qKey{kind: o.Kind, name: o.Name}, ce.Objects), now)
	if e == nil {
		return false
	}
	q.changed = append(q.changed, key)
	q.log.Error().Str("kind", e.kind).Str("object", e.what).Str("chain", o.Name).Str("refused_by", refuser(ce)).
		Str("error", e.err).Time("retryAt", e.retryAt).
		Msg("A static chain holding this value was refused; the value is left out (what it allowed is dropped; an endpoint's traffic is dropped) until it can be programmed")
	return true
}

// refuser says who refused a batch: the kernel, or the encoder before sending it (a value
// that cannot be written at all; its error names the element).
func refuser(ce *nft.CommitError) string {
	if ce.Kernel {
		return "kernel"
	}
	return "encoder, before sending"
}

// hold makes or renews the entry of k, quarantined now with original as its true value; nil
// when k is quarantined already (and not being retried).
func (q *quarantine) hold(k qKey, original any, errText string, now time.Time) *qEntry {
	e := q.entries[k]
	if e != nil && !e.trying {
		return nil
	}
	if e == nil {
		kind, what := q.describe(k)
		e = &qEntry{kind: kind, what: what, retry: backoff.Backoff{Min: 10 * time.Second, Max: 10 * time.Minute, Jitter: 0.2}}
		q.entries[k] = e
	}
	e.original, e.trying, e.err = original, false, errText
	e.retryAt = now.Add(e.retry.Next())
	return e
}

// refusedKeys lists the keys of the elements the kernel named in its refusals of o.
func refusedKeys(ce *nft.CommitError, o nft.Object) []nft.Key {
	var out []nft.Key
	for _, e := range ce.Objects {
		if e.Object.Owner() == o && e.Key.Len() > 0 {
			out = append(out, e.Key)
		}
	}
	return out
}

// objectErrors joins the errors about k (or about rules of chain k).
func objectErrors(k qKey, errs []nft.ObjectError) string {
	var out []string
	for _, e := range errs {
		if e.Object.Owner().Kind == k.kind && e.Object.Name == k.name && len(out) < 3 {
			out = append(out, e.Error())
		}
	}
	return strings.Join(out, "; ")
}

// prepareSources, before a build, releases the quarantined user values that changed or went
// and lets those whose retry is due be tried; the builder renders them again (takeChanged).
func (q *quarantine) prepareSources(now time.Time) {
	for _, k := range q.sortedKeys() {
		e := q.entries[k]
		if k.kind != objectSource {
			continue
		}
		switch cur := q.current(k.name); {
		case cur == nil || cur != e.original:
			q.log.Info().Str("kind", e.kind).Str("object", e.what).Msg("Quarantined value changed; trying it again")
			delete(q.entries, k)
		case !e.trying && !now.Before(e.retryAt):
			e.trying = true
		default:
			continue
		}
		q.changed = append(q.changed, k.name)
	}
	q.count.Store(int64(len(q.entries)))
}

// withheld reports whether user value key is quarantined (to be left out of the static chains).
func (q *quarantine) withheld(key string) bool {
	e := q.entries[qKey{table: -1, kind: objectSource, name: key}]
	return e != nil && !e.trying
}

// takeChanged returns the user values quarantined, released or tried since the last call.
func (q *quarantine) takeChanged() []string {
	out := q.changed
	q.changed = nil
	return out
}

// succeeded forgets the objects tried in an apply that went through.
func (q *quarantine) succeeded() {
	for k, e := range q.entries {
		if e.trying {
			q.log.Info().Str("kind", e.kind).Str("object", e.what).Msg("Quarantined object programmed; released")
			delete(q.entries, k)
		}
	}
	q.count.Store(int64(len(q.entries)))
}

// due reports whether a quarantined object's retry is due.
func (q *quarantine) due(now time.Time) bool {
	for _, e := range q.entries {
		if e.cause == nil && !e.trying && !now.Before(e.retryAt) {
			return true
		}
	}
	return false
}

// byKind counts the quarantined objects by metric label.
func (q *quarantine) byKind() map[string]int {
	out := map[string]int{}
	for _, e := range q.entries {
		out[e.kind]++
	}
	return out
}

// summary describes the quarantined objects (for the STATUS line).
func (q *quarantine) summary() []string {
	var out []string
	for _, k := range q.sortedKeys() {
		e := q.entries[k]
		out = append(out, fmt.Sprintf("%s %s: %s", e.kind, e.what, e.err))
	}
	return out
}

func (q *quarantine) sortedKeys() []qKey {
	return slices.SortedFunc(maps.Keys(q.entries), func(a, b qKey) int {
		if a.table != b.table {
			return a.table - b.table
		}
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.name, b.name)
	})
}

package syncer

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// maxPending is how many updates the syncer buffers for a busy consumer before it stops reading
// the watch (etcd's client then buffers the rest).
const maxPending = 10000

// idleTicks is the number of WatchTimeout/idleTicks periods without traffic after which the watch
// is checked; progress is requested at each earlier tick.
const idleTicks = 3

// watchResult is one watch response (or the end of a watch channel) tagged with its prefix.
type watchResult struct {
	prefix string
	resp   clientv3.WatchResponse
	closed bool
}

// watch watches every prefix from the revision after the one the consumer has, and streams the
// changes until a watch fails. It returns why it stopped and whether the watch worked before that.
func (s *Syncer) watch(ctx context.Context, out chan<- Message) (healthy bool, err error) {
	wctx, cancel := s.watchContext(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	merged := make(chan watchResult)
	from := maps.Clone(s.resume) // the goroutines read it while the loop updates s.resume
	w := &watchLoop{s: s, wctx: wctx, wg: &wg, out: out, from: from, next: maps.Clone(from)}
	w.base = s.listedAt // a list at a rounded revision: etcd was already past it (see watchLoop.base)
	for _, p := range s.cfg.Prefixes {
		w.base = max(w.base, from[p])
		// Watch blocks until etcd created the watch: open it in the forwarding goroutine, so that
		// the loop's liveness checks run meanwhile.
		wg.Go(func() {
			start, end := prefixRange(p)
			wch := s.etcd.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithRev(from[p]+1),
				clientv3.WithPrevKV(), clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
			forward(wctx, p, wch, merged)
		})
	}
	return w.run(ctx, merged)
}

// forward copies one watch channel into merged, then reports its end.
func forward(ctx context.Context, prefix string, wch clientv3.WatchChan, merged chan<- watchResult) {
	for {
		var r watchResult
		select {
		case resp, ok := <-wch:
			r = watchResult{prefix: prefix, resp: resp, closed: !ok}
		case <-ctx.Done():
			return
		}
		select {
		case merged <- r:
		case <-ctx.Done():
			return
		}
		if r.closed {
			return
		}
	}
}

// watchLoop is the state of one watch generation.
type watchLoop struct {
	s    *Syncer
	wctx context.Context
	wg   *sync.WaitGroup
	out  chan<- Message
	// from and next are, per prefix, the revision the consumer had when the watch started and the
	// one it has once everything received so far is delivered.
	from, next map[string]int64
	// base is the highest revision the watch started after, or etcd's revision when the
	// consumer's snapshot was listed if that is higher: until etcd is past it, silence is normal
	// (etcd does not answer progress requests, nor does a grpc-proxy ever; a quiet prefix
	// listed at a rounded revision must not look stuck behind one).
	base      int64
	created   int  // prefixes whose watch etcd confirmed
	confirmed bool // every prefix's watch is confirmed: the stream is live
	pending   Message
	healthy   bool
	idle      int  // ticks without traffic
	armed     bool // etcd is known to be past base, so progress requests must be answered
	live      liveness
}

// run multiplexes watch results, deliveries to the consumer, the silence detector and the
// liveness checks.
func (w *watchLoop) run(ctx context.Context, merged <-chan watchResult) (bool, error) {
	tick := w.s.cfg.WatchTimeout / idleTicks
	timer := time.NewTimer(tick)
	defer timer.Stop()
	// Probes carry neither the watch's stream key nor its leader requirement: they only ask
	// whether etcd answers.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.live = newLiveness(w.s, pctx, w.wg)
	check := time.NewTicker(w.live.period())
	defer check.Stop()
	w.pending = Message{Status: InSync, Revision: w.s.rev}
	for {
		recv, sendCh := w.channels(merged)
		select {
		case <-ctx.Done():
			return w.healthy, ctx.Err()
		case sendCh <- w.pending:
			w.sent(w.pending)
			w.pending = Message{Status: InSync, Revision: w.s.rev}
			w.commit()
		case r := <-recv:
			w.idle, w.armed = 0, false
			timer.Reset(tick)
			w.live.alive()
			if err := w.handle(r); err != nil {
				return w.healthy, w.flush(ctx, err)
			}
		case <-timer.C:
			if recv == nil { // not reading: the consumer is slow, the watch is not silent
				w.idle = 0
				timer.Reset(tick)
				continue
			}
			if err := w.onIdle(ctx); err != nil {
				return w.healthy, w.flush(ctx, err)
			}
			timer.Reset(tick)
		case err := <-w.live.results():
			if err := w.live.answered(err); err != nil {
				return w.healthy, w.flush(ctx, err)
			}
		case <-check.C:
			if err := w.live.check(recv == nil); err != nil {
				return w.healthy, w.flush(ctx, err)
			}
		}
	}
}

// channels returns the watch results to read (nil while the consumer is too far behind) and the
// consumer to send to (nil while there is nothing to send). Nothing is sent before every prefix's
// watch is confirmed; then the pending batch, or the InSync status if the consumer was told
// anything else meanwhile.
func (w *watchLoop) channels(merged <-chan watchResult) (<-chan watchResult, chan<- Message) {
	recv := merged
	if w.confirmed && len(w.pending.Updates) >= maxPending {
		recv = nil
	}
	var sendCh chan<- Message
	w.pending.Status = w.status()
	if w.confirmed && (len(w.pending.Updates) > 0 || w.s.sent != w.pending.Status) {
		sendCh = w.out
	}
	return recv, sendCh
}

// status is the status the next message reports: InSync unless the consumer of a snapshot
// listed at a rounded revision still lacks changes up to the revision etcd had then.
func (w *watchLoop) status() Status {
	if w.s.catch.caughtUp() {
		return InSync
	}
	return ResyncInProgress
}

// sent records a delivered message; the first one in sync ends the catch-up.
func (w *watchLoop) sent(m Message) {
	w.s.delivered(m)
	if m.Status == InSync && w.s.catch != nil {
		w.s.log.Info().Int64("revision", w.s.rev).Int64("listed_before", w.s.catch.target).
			Msg("caught up with the changes since the list; in sync")
		w.s.catch = nil
	}
}

// handle adds one watch response to the pending batch, or returns why the watch is over.
func (w *watchLoop) handle(r watchResult) error {
	if r.closed {
		return fmt.Errorf("watching %s: %w", r.prefix, errWatchClosed)
	}
	if err := r.resp.Err(); err != nil {
		return fmt.Errorf("watching %s from revision %d: %w", r.prefix, w.from[r.prefix]+1, err)
	}
	if r.resp.Created {
		w.onCreated()
		return nil
	}
	w.healthy = true
	if r.resp.IsProgressNotify() {
		w.next[r.prefix] = max(w.next[r.prefix], r.resp.Header.Revision)
		w.s.catch.progress(r.prefix, r.resp.Header.Revision)
	}
	for _, ev := range r.resp.Events {
		w.next[r.prefix] = max(w.next[r.prefix], ev.Kv.ModRevision)
		w.s.catch.observe(r.prefix, ev)
		if u, ok := w.s.eventUpdate(ev, w.from[r.prefix]); ok {
			w.pending.Updates = append(w.pending.Updates, u)
			w.pending.Revision = max(w.pending.Revision, u.Revision)
		}
	}
	w.pending.Revision = max(w.pending.Revision, w.s.rev)
	if len(w.pending.Updates) == 0 {
		w.commit()
	}
	return nil
}

// onCreated counts a confirmed watch. Once every prefix's watch is confirmed the syncer is in
// sync again (the consumer learns it with the next message the loop sends).
func (w *watchLoop) onCreated() {
	w.created++
	if w.confirmed || w.created < len(w.s.cfg.Prefixes) {
		return
	}
	w.confirmed, w.healthy = true, true
	// After a list at a rounded revision, InSync waits until the watch delivered the changes
	// since (see catchUp).
	if w.s.catch.caughtUp() {
		if w.s.Status() != InSync {
			w.s.log.Info().Int64("revision", w.base).Msg("datastore watch resumed; in sync")
		}
		w.s.status.Store(int32(InSync))
	}
	if len(w.pending.Updates) == 0 {
		w.commit()
	}
}

// commit records that the consumer has everything received so far (nothing is pending).
func (w *watchLoop) commit() {
	if w.confirmed {
		maps.Copy(w.s.resume, w.next)
	}
}

// eventUpdate converts one watch event; ok is false for filtered keys and for events the consumer
// already has (at or before revision have).
func (s *Syncer) eventUpdate(ev *clientv3.Event, have int64) (Update, bool) {
	if ev.Kv.ModRevision <= have {
		return Update{}, false
	}
	if ev.Type == mvccpb.PUT {
		return s.decodeKV(ev.Kv)
	}
	id := datastore.IDOf(string(ev.Kv.Key))
	if s.cfg.ignored(id) {
		return Update{}, false
	}
	return Update{ID: id, Revision: ev.Kv.ModRevision}, true
}

// onIdle runs when nothing arrived for a tick. It requests progress from etcd; after idleTicks
// silent ticks it checks etcd, and returns an error if the watch must be restarted.
//
// etcd answers progress requests only when all of the stream's watches have a start revision at
// or below its current one, so while nothing at all has been written since the watch started
// silence is normal. Once etcd is past that, one more request must be answered within a tick.
func (w *watchLoop) onIdle(ctx context.Context) error {
	w.idle++
	if w.idle < idleTicks {
		w.requestProgress()
		return nil
	}
	cur, err := w.s.currentRevision(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("watch silent for %s and etcd did not answer: %w (%w)", w.s.cfg.WatchTimeout, errUnreachable, err)
	case cur <= w.base:
		w.idle = 0
		return nil
	case !w.armed:
		w.armed, w.idle = true, idleTicks-1
		w.requestProgress()
		return nil
	}
	return fmt.Errorf("watch silent for %s (no events, no progress notifications) while etcd is at revision %d",
		w.s.cfg.WatchTimeout, cur)
}

// requestProgress asks etcd for a progress notification on this syncer's watch stream, without
// blocking the loop (the request waits while the client reconnects).
func (w *watchLoop) requestProgress() {
	w.wg.Go(func() {
		rctx, cancel := context.WithTimeout(w.wctx, w.s.cfg.WatchTimeout/idleTicks)
		defer cancel()
		if err := w.s.etcd.RequestProgress(rctx); err != nil && w.wctx.Err() == nil {
			w.s.log.Debug().Err(err).Msg("requesting watch progress")
		}
	})
}

// flush delivers the pending updates of a confirmed watch (they are still valid: the next watch
// or snapshot follows them) and returns cause. Updates of an unconfirmed watch are dropped: the
// consumer's revisions do not include them, so the next watch delivers them again.
func (w *watchLoop) flush(ctx context.Context, cause error) error {
	if w.confirmed && len(w.pending.Updates) > 0 {
		w.pending.Status = w.status()
		select {
		case w.out <- w.pending:
			w.sent(w.pending)
		case <-ctx.Done():
			return ctx.Err()
		}
		w.commit()
	}
	return cause
}

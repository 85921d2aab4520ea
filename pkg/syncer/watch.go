package syncer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// watch watches every prefix from listRev+1 and streams the changes until a watch fails. It
// returns why it stopped and whether the watch delivered anything before that.
func (s *Syncer) watch(ctx context.Context, out chan<- Message, listRev int64) (healthy bool, err error) {
	wctx, cancel := s.watchContext(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	merged := make(chan watchResult)
	for _, p := range s.cfg.Prefixes {
		start, end := prefixRange(p)
		wch := s.etcd.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithRev(listRev+1),
			clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		wg.Go(func() { forward(wctx, p, wch, merged) })
	}
	w := &watchLoop{s: s, wctx: wctx, wg: &wg, listRev: listRev, out: out}
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
	s       *Syncer
	wctx    context.Context
	wg      *sync.WaitGroup
	out     chan<- Message
	listRev int64
	pending Message
	healthy bool
	idle    int  // ticks without traffic
	armed   bool // etcd is known to be past listRev, so progress requests must be answered
}

// run multiplexes watch results, deliveries to the consumer and the silence detector.
func (w *watchLoop) run(ctx context.Context, merged <-chan watchResult) (bool, error) {
	tick := w.s.cfg.WatchTimeout / idleTicks
	timer := time.NewTimer(tick)
	defer timer.Stop()
	w.pending = Message{Status: InSync}
	for {
		var sendCh chan<- Message
		if len(w.pending.Updates) > 0 {
			sendCh = w.out
		}
		recv := merged
		if len(w.pending.Updates) >= maxPending {
			recv = nil
		}
		select {
		case <-ctx.Done():
			return w.healthy, ctx.Err()
		case sendCh <- w.pending:
			w.s.delivered(w.pending)
			w.pending = Message{Status: InSync}
		case r := <-recv:
			w.idle, w.armed = 0, false
			timer.Reset(tick)
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
		}
	}
}

// handle adds one watch response to the pending batch, or returns why the watch is over.
func (w *watchLoop) handle(r watchResult) error {
	if r.closed {
		return fmt.Errorf("watching %s: %w", r.prefix, errWatchClosed)
	}
	if err := r.resp.Err(); err != nil {
		return fmt.Errorf("watching %s: %w", r.prefix, err)
	}
	w.healthy = true
	for _, ev := range r.resp.Events {
		if u, ok := w.s.eventUpdate(ev, w.listRev); ok {
			w.pending.Updates = append(w.pending.Updates, u)
			w.pending.Revision = max(w.pending.Revision, u.Revision)
		}
	}
	w.pending.Revision = max(w.pending.Revision, w.s.rev)
	return nil
}

// eventUpdate converts one watch event; ok is false for filtered keys and for events already
// covered by the snapshot.
func (s *Syncer) eventUpdate(ev *clientv3.Event, listRev int64) (Update, bool) {
	if ev.Kv.ModRevision <= listRev {
		return Update{}, false
	}
	if ev.Type == mvccpb.PUT {
		return s.decodeKV(ev.Kv)
	}
	key := string(ev.Kv.Key)
	if s.cfg.ignored(key) {
		return Update{}, false
	}
	return Update{Key: key, Revision: ev.Kv.ModRevision}, true
}

// onIdle runs when nothing arrived for a tick. It requests progress from etcd; after idleTicks
// silent ticks it checks etcd, and returns an error if the watch must be restarted.
//
// etcd answers progress requests only when all of the stream's watches have a start revision at
// or below its current one, so while nothing at all has been written since listRev silence is
// normal. Once etcd is past listRev, one more request must be answered within a tick.
func (w *watchLoop) onIdle(ctx context.Context) error {
	w.idle++
	if w.idle < idleTicks {
		w.requestProgress()
		return nil
	}
	cur, err := w.s.currentRevision(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("watch silent for %s and etcd unreachable: %w", w.s.cfg.WatchTimeout, err)
	case cur <= w.listRev:
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

// flush delivers the pending updates (they are still valid: the next snapshot follows them) and
// returns cause.
func (w *watchLoop) flush(ctx context.Context, cause error) error {
	if len(w.pending.Updates) > 0 && !w.s.send(ctx, w.out, w.pending) {
		return ctx.Err()
	}
	return cause
}

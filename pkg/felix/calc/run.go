package calc

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// RunConfig configures a Loop. Zero fields take the defaults.
type RunConfig struct {
	// BucketSize is how many flushes may happen back to back (default 10, as felix).
	BucketSize int
	// Refill is the time to earn one flush token (default 10 ms, as felix).
	Refill time.Duration
	// Now and After are the clock (default time.Now and time.After).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// IdleBeat is how often progress is called while no message arrives (default 5 s), so a
	// watchdog does not take an idle loop for a hung one.
	IdleBeat time.Duration
	// Tee, when set, is given every message before the graph applies it, on the loop's
	// goroutine: it must not block (felix's pending verdicts keep a copy this way, without a
	// goroutine between the syncer and calc).
	Tee func(syncer.Message)
}

func (c RunConfig) withDefaults() RunConfig {
	if c.BucketSize <= 0 {
		c.BucketSize = 10
	}
	if c.Refill <= 0 {
		c.Refill = 10 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.IdleBeat <= 0 {
		c.IdleBeat = 5 * time.Second
	}
	return c
}

// Loop drives a Graph from the syncer's messages straight to the dataplane's input, and
// publishes the graph's Facts for felix. It never blocks on the dataplane: while a flushed batch
// waits to be taken, it keeps applying messages and flushes their net effect once the batch is
// taken (before the dataplane exists, the first batch simply waits).
type Loop struct {
	g         *Graph
	cfg       RunConfig
	facts     atomic.Pointer[Facts]
	changed   chan struct{} // one pending signal at most
	observers chan observeRequest
	metrics   *metrics
}

// observeRequest asks the loop to add an observer; done is closed once it was told every
// endpoint sent so far.
type observeRequest struct {
	o     EndpointObserver
	items ItemObserver
	done  chan struct{}
}

// NewLoop returns a loop over g; call Run once.
func NewLoop(g *Graph, cfg RunConfig) *Loop {
	l := &Loop{g: g, cfg: cfg.withDefaults(), changed: make(chan struct{}, 1),
		observers: make(chan observeRequest), metrics: newMetrics()}
	l.facts.Store(&Facts{})
	return l
}

// Facts returns the latest facts. It is safe to call from any goroutine.
func (l *Loop) Facts() Facts { return *l.facts.Load() }

// FactsChanged receives a value after the facts changed (coalesced: one pending value at most).
func (l *Loop) FactsChanged() <-chan struct{} { return l.changed }

// Observe adds an observer of the local endpoints on the loop's goroutine, which tells it about
// every endpoint sent so far before Observe returns, then about each change. It reports false if
// ctx ended first.
func (l *Loop) Observe(ctx context.Context, o EndpointObserver) bool {
	return l.request(ctx, observeRequest{o: o, done: make(chan struct{})})
}

// request hands req to the loop's goroutine and waits until it was served.
func (l *Loop) request(ctx context.Context, req observeRequest) bool {
	select {
	case l.observers <- req:
	case <-ctx.Done():
		return false
	}
	select {
	case <-req.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Collectors are the loop's Prometheus metrics.
func (l *Loop) Collectors() []prometheus.Collector { return l.metrics.collectors() }

// Run feeds the messages from in into the graph and sends each non-empty flush on out, at most
// as often as a token bucket allows (BucketSize flushes in a burst, then one per Refill) and
// only once the previous batch was taken, so bursts of events and a busy dataplane coalesce into
// few batches. progress is called on every loop iteration (and every IdleBeat while idle). Run
// returns when ctx is done or in is closed.
func (l *Loop) Run(ctx context.Context, in <-chan syncer.Message, out chan<- []Update, progress func()) {
	if progress == nil {
		progress = func() {}
	}
	st := &runState{lim: rate.NewLimiter(rate.Every(l.cfg.Refill), l.cfg.BucketSize)}
	for {
		progress()
		if st.idle == nil {
			st.idle = l.cfg.After(l.cfg.IdleBeat)
		}
		if !l.step(ctx, st, in, out) {
			return
		}
		if st.dirty && st.pending == nil && st.retry == nil {
			if delay := takeToken(st.lim, l.cfg.Now()); delay > 0 {
				st.retry = l.cfg.After(delay)
			} else {
				st.dirty, st.pending = false, l.flush()
			}
		}
		l.publish()
	}
}

// runState is Run's state between iterations.
type runState struct {
	lim         *rate.Limiter
	pending     []Update // flushed, not taken yet
	dirty       bool     // messages applied since the last flush
	idle, retry <-chan time.Time
}

// step waits for one event and handles it; it reports false when Run must return.
func (l *Loop) step(ctx context.Context, st *runState, in <-chan syncer.Message, out chan<- []Update) bool {
	var send chan<- []Update
	if st.pending != nil {
		send = out
	}
	select {
	case <-ctx.Done():
		return false
	case m, ok := <-in:
		if !ok {
			return false
		}
		l.onMessage(m)
		st.dirty = true
	case send <- st.pending:
		st.pending = nil
	case req := <-l.observers:
		if req.o != nil {
			l.g.Observe(req.o)
		}
		if req.items != nil {
			l.g.observeItems(req.items)
		}
		close(req.done)
	case <-st.idle:
		st.idle = nil
	case <-st.retry:
		st.retry = nil
	}
	return true
}

func (l *Loop) onMessage(m syncer.Message) {
	if l.cfg.Tee != nil {
		l.cfg.Tee(m)
	}
	l.metrics.onMessage(m)
	if m.Snapshot {
		l.g.log.Info().Int("keys", len(m.Updates)).Int64("revision", m.Revision).Msg("Datastore snapshot received")
	}
	l.g.OnMessage(m)
}

func (l *Loop) flush() []Update {
	batch := l.g.Flush()
	if batch != nil {
		l.metrics.onFlush(len(batch), l.g)
	}
	return batch
}

// publish stores the graph's facts and signals a change.
func (l *Loop) publish() {
	f := l.g.Facts()
	if *l.facts.Load() == f {
		return
	}
	l.facts.Store(&f)
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// takeToken takes a token from lim if it has one (0), or says how long until it will.
func takeToken(lim *rate.Limiter, now time.Time) time.Duration {
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 {
		r.CancelAt(now)
	}
	return wait
}

package calc

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// RunConfig configures Run. Zero fields take the defaults.
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

// takeToken takes a token from lim if it has one (0), or says how long until it will.
func takeToken(lim *rate.Limiter, now time.Time) time.Duration {
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 {
		r.CancelAt(now)
	}
	return wait
}

// Run feeds the messages from in into the graph and sends each non-empty flush on out, at most
// as often as a token bucket allows (BucketSize flushes in a burst, then one per Refill), so a
// burst of events is coalesced into a few batches. progress is called on every loop iteration
// (and every IdleBeat while idle). Run returns when ctx is done or in is closed.
func (g *Graph) Run(ctx context.Context, in <-chan syncer.Message, out chan<- []Update, cfg RunConfig, progress func()) {
	cfg = cfg.withDefaults()
	if progress == nil {
		progress = func() {}
	}
	lim := rate.NewLimiter(rate.Every(cfg.Refill), cfg.BucketSize)
	pending := false
	var idle, retry <-chan time.Time
	for {
		progress()
		if idle == nil {
			idle = cfg.After(cfg.IdleBeat)
		}
		select {
		case <-ctx.Done():
			return
		case m, ok := <-in:
			if !ok {
				return
			}
			g.OnMessage(m)
			pending = true
		case <-idle:
			idle = nil
		case <-retry:
			retry = nil
		}
		if !pending {
			continue
		}
		if delay := takeToken(lim, cfg.Now()); delay > 0 {
			if retry == nil {
				retry = cfg.After(delay)
			}
			continue
		}
		pending = false
		if ups := g.Flush(); ups != nil && !send(ctx, out, ups) {
			return
		}
	}
}

// send delivers a batch unless ctx ends first.
func send(ctx context.Context, out chan<- []Update, ups []Update) bool {
	select {
	case out <- ups:
		return true
	case <-ctx.Done():
		return false
	}
}

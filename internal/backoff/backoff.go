package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential delay: Min, 2*Min, 4*Min, ... up to Max (a Max below Min
// counts as Min). Jitter (0..1) draws each delay uniformly from [d*(1-Jitter), d], so that
// contenders retrying at the same moment spread out: 0.5 gives [d/2, d], 1 gives [0, d].
// The zero state starts at Min; Reset returns to it. Not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	Jitter   float64
	cur      time.Duration // the next delay before jitter; 0 = Min
}

// Delay is the delay before retry number attempt (0 = the first), jittered. It changes nothing,
// so a shared Backoff may serve stateless callers concurrently.
func (b *Backoff) Delay(attempt int) time.Duration {
	d := max(b.Min, 0)
	for i := 0; i < attempt && d < b.Max; i++ {
		d = b.grow(d)
	}
	return b.jitter(d)
}

// Next returns the next delay and doubles the one after it (up to Max).
func (b *Backoff) Next() time.Duration {
	d := b.cur
	if d <= 0 {
		d = max(b.Min, 0)
	}
	b.cur = b.grow(d)
	return b.jitter(d)
}

// Reset makes the next delay Min again (after a success).
func (b *Backoff) Reset() { b.cur = 0 }

// Wait sleeps for the next delay; it returns ctx's error if ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

func (b *Backoff) grow(d time.Duration) time.Duration {
	limit := max(b.Max, b.Min)
	if d > limit/2 {
		return limit
	}
	return 2 * d
}

func (b *Backoff) jitter(d time.Duration) time.Duration {
	j := min(max(b.Jitter, 0), 1)
	if j == 0 || d <= 0 {
		return d
	}
	return d - rand.N(time.Duration(j*float64(d))+1)
}

// Sleep waits for d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

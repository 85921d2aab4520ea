package dataplane

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
)

// Run applies calc's update batches until ctx is done. It drains every pending batch (and
// interface update) before applying, applies only once calc and the interface monitor are
// both in sync, at most Timing.Burst times back to back and then once per Timing.Refill,
// retries failures with exponential backoff, forces a full nftables resync every
// NftablesRefreshInterval and a route resync every RouteRefreshInterval, and sends endpoint
// statuses without ever blocking on the status channel. progress is called on every
// iteration and at least every Timing.IdleBeat. Returning leaves the kernel state in place.
func (d *Dataplane) Run(ctx context.Context, in <-chan []calc.Update, status chan<- EndpointStatus, progress func()) {
	defer d.close()
	ifaceCh := make(chan ifaces.Update, 1024)
	go d.ifaces.Run(ctx, ifaceCh)
	l := &loop{d: d, in: in, ifaceCh: ifaceCh, status: status,
		limiter: rate.NewLimiter(rate.Every(d.timing.Refill), d.timing.Burst),
		retry:   backoff.Backoff{Min: d.timing.RetryMin, Max: d.timing.RetryMax}}
	nftRefresh := time.NewTicker(d.cfg.NftablesRefreshInterval)
	defer nftRefresh.Stop()
	routeRefresh := time.NewTicker(d.cfg.RouteRefreshInterval)
	defer routeRefresh.Stop()
	idle := time.NewTicker(d.timing.IdleBeat)
	defer idle.Stop()
	for {
		progress()
		var statusOut chan<- EndpointStatus
		var next EndpointStatus
		if len(l.pending) > 0 {
			statusOut, next = status, l.pending[0]
		}
		select {
		case <-ctx.Done():
			return
		case batch, ok := <-l.in:
			l.onBatch(batch, ok)
		case u := <-ifaceCh:
			l.onIface(u)
		case ev := <-d.migrations.events:
			if d.migrations.onEvent(ev) {
				l.dirty = true
			}
		case <-nftRefresh.C:
			d.nft.RequestFullSync()
			l.dirty = true
		case <-routeRefresh.C:
			d.routes.RequestResync()
			d.ipip.RequestResync()
			l.dirty, d.model.netChanged = true, true
		case <-l.timer:
			l.timer = nil
		case <-idle.C:
		case statusOut <- next:
			l.pending = l.pending[1:]
		}
		l.maybeApply(ctx)
	}
}

// loop is the state of Run between iterations.
type loop struct {
	d       *Dataplane
	in      <-chan []calc.Update
	ifaceCh chan ifaces.Update
	status  chan<- EndpointStatus
	pending []EndpointStatus
	batches int // batches received so far
	dirty   bool
	limiter *rate.Limiter    // applies: Timing.Burst back to back, then one per Timing.Refill
	timer   <-chan time.Time // armed while an apply waits for a token or a retry
	retryAt time.Time
	retry   backoff.Backoff // delays after failed applies
}

// onBatch records a batch and every batch already waiting behind it.
func (l *loop) onBatch(batch []calc.Update, ok bool) {
	if !ok {
		l.in = nil // calc stopped; keep the kernel as it is until ctx ends
		return
	}
	n := l.record(batch)
	for more := true; more; {
		select {
		case b, ok := <-l.in:
			if !ok {
				l.in, more = nil, false
				continue
			}
			n += l.record(b)
		default:
			more = false
		}
	}
	l.d.metrics.batch(n)
	l.dirty = true
}

func (l *loop) record(batch []calc.Update) int {
	l.batches++
	for _, u := range batch {
		l.d.metrics.message(u)
		if !l.d.model.apply(u) {
			l.d.log.Warn().Type("update", u).Msg("Ignoring an update of unknown type")
		}
		l.d.migrations.observe(u)
	}
	return len(batch)
}

// onIface records an interface update and every one already waiting behind it, telling the
// route and VXLAN pieces about each change first, so that a re-created device gets its routes
// and neighbours back in the next apply rather than at the next periodic resync.
func (l *loop) onIface(u ifaces.Update) {
	l.recordIface(u)
	for more := true; more; {
		select {
		case u := <-l.ifaceCh:
			l.recordIface(u)
		default:
			more = false
		}
	}
	l.dirty = true
}

func (l *loop) recordIface(u ifaces.Update) {
	if !u.InSync {
		l.d.routes.InterfaceChanged(u.Name)
		l.d.vxlan.InterfaceChanged(u.Name)
		l.d.ipip.InterfaceChanged(u.Name)
		l.d.migrations.interfaceChanged(u.Name)
	}
	l.d.model.applyIface(u)
}

// maybeApply applies when there is something to apply, everything is in sync, the last
// failure's backoff has passed and the throttle has a token; otherwise it arms the timer for
// when it may.
func (l *loop) maybeApply(ctx context.Context) {
	m := l.d.model
	if l.d.quar.due(time.Now()) { // a quarantined object's periodic retry (checked at least every IdleBeat)
		l.dirty = true
	}
	if !l.dirty || !m.inSync || !m.ifacesInSync || l.timer != nil {
		return
	}
	now := time.Now()
	if now.Before(l.retryAt) {
		l.timer = time.After(l.retryAt.Sub(now))
		return
	}
	if wait := takeToken(l.limiter, now); wait > 0 {
		l.timer = time.After(wait)
		return
	}
	batches := l.batches
	statuses, err := l.d.apply(ctx)
	if l.status != nil {
		l.pending = append(l.pending, statuses...)
	}
	if l.d.after != nil {
		l.d.after(batches, err)
	}
	if err != nil {
		delay := l.retry.Next()
		l.retryAt = time.Now().Add(delay)
		l.timer = time.After(delay)
		l.d.log.Error().Err(err).Dur("retryIn", delay).Msg("Dataplane apply failed; will retry (with a full resync unless the kernel refused the batch, which changed nothing)")
		return
	}
	l.dirty = false
	l.retry.Reset()
	if l.d.bigCommit { // before READY, so that felix is ready at its steady size
		l.d.bigCommit = false
		l.d.releaseMemory()
	}
	if !l.d.firstApplyDone {
		l.d.firstApplyDone = true
		close(l.d.firstApply)
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

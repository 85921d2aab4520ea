package confd

import (
	"github.com/prometheus/client_golang/prometheus"

	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Source streams datastore messages (a *syncer.Syncer in production).
type Source interface {
	Run(ctx context.Context, out chan<- syncer.Message)
}

// retryDelays are the delays after failed syncs.
var retryDelays = backoff.Backoff{Min: time.Second, Max: 30 * time.Second}

// loopName is the daemon's loop as the watchdog knows it.
const loopName = "confd"

// Daemon is calico-confd: it follows the datastore and keeps BIRD's configuration up to date.
type Daemon struct {
	cfg      *Config
	engine   *Engine
	store    *Store
	src      Source
	notifier *daemon.Notifier
	watchdog *daemon.Watchdog
	log      zerolog.Logger
	now      func() time.Time

	// dsStatus is the datastore's status as the last syncer message reported it.
	dsStatus atomic.Int32
	// summary describes the last successful sync ("" before the first one).
	summary string
	metrics *metrics
}

// NewDaemon builds the daemon for node nodeName.
func NewDaemon(cfg *Config, nodeName string, src Source, run Runner, n *daemon.Notifier, log zerolog.Logger) *Daemon {
	return &Daemon{
		cfg:      cfg,
		engine:   NewEngine(cfg, nodeName, run, log),
		store:    NewStore(nodeName),
		src:      src,
		notifier: n,
		watchdog: daemon.NewWatchdog(n, log, loopName),
		log:      log,
		now:      time.Now,
		metrics:  newMetrics(cfg.BIRDSocket),
	}
}

// Collectors are the daemon's Prometheus metrics.
func (d *Daemon) Collectors() []prometheus.Collector { return d.metrics.Collectors() }

// Watchdog returns the daemon's watchdog (for a health endpoint).
func (d *Daemon) Watchdog() *daemon.Watchdog { return d.watchdog }

// Readiness reports whether confd is ready: BIRD's configuration was applied at least once and
// the datastore is in sync. While etcd is unreachable confd is not ready, and BIRD keeps the last
// configuration it applied. It is safe to call from any goroutine (a daemon.Probe).
func (d *Daemon) Readiness() (bool, string) {
	switch st := syncer.Status(d.dsStatus.Load()); {
	case !d.notifier.IsReady():
		return false, "BGP configuration not applied yet"
	case st != syncer.InSync:
		return false, fmt.Sprintf("not in sync with the datastore: %s; BIRD keeps the last applied configuration", st)
	}
	return true, ""
}

// loop is the state of Run's select loop.
type loop struct {
	// synced: a snapshot arrived and the syncer said InSync since (a snapshot listed at an
	// older revision is followed by the changes since, then InSync: see syncer.Message).
	synced   bool
	dirty    bool // inputs changed since the last successful sync
	timer    *time.Timer
	deadline time.Time // when the armed timer fires (zero: not armed)
	retry    backoff.Backoff
}

// Run follows the datastore until ctx is done. Bursts of changes are debounced into one render;
// a failed render keeps the last good files and is retried with backoff (and at once on the next
// change). READY is sent after the first successful render, check and reload (or when BIRD is
// not running yet).
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // the source and the watchdog end with ctx
	defer cancel()
	msgs := make(chan syncer.Message, 16)
	wg.Go(func() { d.src.Run(ctx, msgs) })
	wg.Go(func() { d.watchdog.Run(ctx) })
	d.notifier.Status("Waiting for the datastore")

	l := &loop{timer: time.NewTimer(time.Hour), retry: retryDelays}
	l.stop()
	beat := time.NewTicker(d.watchdog.Limit() / 3)
	defer beat.Stop()
	resync := d.resyncTicker()
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			d.notifier.Stopping()
			return nil
		case m := <-msgs:
			d.onMessage(l, m)
		case <-l.timer.C:
			l.deadline = time.Time{}
			d.syncNow(ctx, l)
		case <-resync.C:
			if l.synced && l.deadline.IsZero() {
				d.syncNow(ctx, l)
			}
		case <-beat.C:
		}
		d.watchdog.Beat(loopName)
	}
}

// resyncTicker ticks every ResyncInterval (never, when it is negative).
func (d *Daemon) resyncTicker() *time.Ticker {
	if d.cfg.ResyncInterval.Duration <= 0 {
		t := time.NewTicker(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTicker(d.cfg.ResyncInterval.Duration)
}

// onMessage applies one syncer message and schedules a render.
func (d *Daemon) onMessage(l *loop, m syncer.Message) {
	changed := d.store.Apply(m)
	if m.Snapshot {
		l.synced = false
		d.log.Info().Int("keys", len(m.Updates)).Int64("revision", m.Revision).Msg("Datastore snapshot received")
	}
	if m.Status == syncer.InSync && d.store.HasSnapshot() {
		l.synced = true
	}
	d.metrics.onStatus(m.Status)
	if prev := syncer.Status(d.dsStatus.Swap(int32(m.Status))); prev != m.Status {
		d.log.Info().Stringer("status", m.Status).Stringer("was", prev).Msg("Datastore connection status changed")
		d.showStatus()
	}
	if changed {
		l.dirty = true
	}
	if l.synced && l.dirty {
		l.arm(d.now(), d.cfg.Debounce.Duration)
	}
}

// showStatus sets systemd's STATUS from the datastore's status and the last successful sync.
func (d *Daemon) showStatus() {
	st := syncer.Status(d.dsStatus.Load())
	switch {
	case st == syncer.WaitingForDatastore && d.notifier.IsReady():
		d.notifier.Status("Datastore unreachable (%s); BIRD keeps the last applied configuration", st)
	case st != syncer.InSync && d.notifier.IsReady():
		d.notifier.Status("Datastore %s; BIRD keeps the last applied configuration", st)
	case st != syncer.InSync:
		d.notifier.Status("Waiting for the datastore (%s)", st)
	case d.summary != "":
		d.notifier.Status("%s", d.summary)
	}
}

// arm makes the timer fire within delay: it never postpones an earlier deadline.
func (l *loop) arm(now time.Time, delay time.Duration) {
	due := now.Add(delay)
	if !l.deadline.IsZero() && !l.deadline.After(due) {
		return
	}
	l.stop()
	l.timer.Reset(delay)
	l.deadline = due
}

func (l *loop) stop() {
	if !l.timer.Stop() {
		select {
		case <-l.timer.C:
		default:
		}
	}
	l.deadline = time.Time{}
}

// syncTimeout bounds one sync (checks and reload): a hung `bird -p`, reload command or BIRD
// socket fails the sync, which is reported and retried, well before the loop counts as stalled
// for the watchdog (systemd would kill and restart confd, which cannot help a hung BIRD).
func (d *Daemon) syncTimeout() time.Duration { return d.watchdog.Limit() / 2 }

// syncNow renders and applies the current inputs, scheduling a retry on failure.
func (d *Daemon) syncNow(ctx context.Context, l *loop) {
	start := d.now()
	sctx, cancel := context.WithTimeout(ctx, d.syncTimeout())
	res, err := d.engine.Sync(sctx, d.store.Inputs())
	cancel()
	if ctx.Err() != nil {
		return
	}
	d.logResult(res, err, d.now().Sub(start))
	d.metrics.onSync(res, err, d.now().Sub(start))
	if err != nil {
		delay := l.retry.Next()
		// One line: sd_notify takes a line break as the start of another assignment.
		d.notifier.Status("Failed to apply BGP configuration (retrying in %s; BIRD keeps its last good configuration): %s",
			delay, newComment(err.Error()))
		l.arm(d.now(), delay)
		return
	}
	l.dirty = false
	l.retry.Reset()
	d.summary = res.summary(d.now())
	d.showStatus() // before READY=1, so that systemd shows the result with it
	d.notifier.Ready()
	d.showStatus() // the wording while the datastore is unreachable depends on READY
}

func (d *Daemon) logResult(res Result, err error, took time.Duration) {
	for _, w := range res.Warnings {
		d.log.Warn().Str("node", d.engine.nodeName).Msg(w)
	}
	ev := d.log.Info()
	if err != nil {
		ev = d.log.Error().Err(err)
	}
	ev.Dur("duration", took).Strs("changed", res.Changed).Int("ipv4_sessions", res.Sessions[0]).
		Int("ipv6_sessions", res.Sessions[1]).Bool("reloaded", res.Reloaded).
		Bool("bird_not_running", res.BIRDNotRunning).Str("bird", res.ReloadMessage).Msg("BGP configuration sync")
}

// RunOnce waits until the datastore is in sync (a snapshot, and the changes since it was listed:
// what etcd held when RunOnce started, or newer), renders and applies it once, and returns
// (--onetime). BIRD not running is not an error.
func (d *Daemon) RunOnce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	msgs := make(chan syncer.Message, 16)
	wg.Go(func() { d.src.Run(ctx, msgs) })
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the datastore: %w", context.Cause(ctx))
		case m := <-msgs:
			d.store.Apply(m)
			if m.Status != syncer.InSync || !d.store.HasSnapshot() {
				continue
			}
			start := d.now()
			res, err := d.engine.Sync(ctx, d.store.Inputs())
			d.logResult(res, err, d.now().Sub(start))
			if err != nil && !errors.Is(err, ErrBIRDNotRunning) {
				return err
			}
			return nil
		}
	}
}

package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// AgentReport is the value of felix's status keys (libcalico-go model.StatusReport).
type AgentReport struct {
	Time        string  `json:"time"`   // RFC 3339, UTC
	Uptime      float64 `json:"uptime"` // seconds since felix started
	FirstUpdate bool    `json:"first_update"`
}

// AgentConfig configures the agent status reporter.
type AgentConfig struct {
	Hostname string
	Region   string // datastore.Region(OpenstackRegion)
	// Interval between reports (ReportingIntervalSecs); 0 disables reporting.
	Interval time.Duration
	// TTL of the lease on the status key (ReportingTTLSecs).
	TTL time.Duration
	// Started is when felix started (for uptime).
	Started time.Time
	// WriteTimeout bounds each etcd request; default 5 s.
	WriteTimeout time.Duration
}

// Agent keeps felix's liveness report in etcd: the status key on a lease that is kept alive
// (one lease, re-granted only when lost or when the TTL changes) and rewritten every Interval
// (each rewrite is a heartbeat for networking-calico), and the lease-less last_reported_status.
type Agent struct {
	ds      *datastore.Client
	log     zerolog.Logger
	key     string
	lastKey string
	started time.Time
	timeout time.Duration
	now     func() time.Time
	metrics *Metrics

	mu       sync.Mutex
	interval time.Duration
	ttl      time.Duration
	changed  chan struct{}

	// Owned by Run.
	w           *writer
	lease       clientv3.LeaseID
	leaseTTL    time.Duration
	leaseLost   chan struct{} // closed when the lease's keep-alive stops; nil without a lease
	stopKeep    context.CancelFunc
	firstUpdate bool
	failed      bool // the last report failed
}

// NewAgent returns a reporter; call Run.
func NewAgent(ds *datastore.Client, cfg AgentConfig, m *Metrics, log zerolog.Logger) *Agent {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.Started.IsZero() {
		cfg.Started = time.Now()
	}
	return &Agent{
		ds: ds, log: log, metrics: m,
		key:     datastore.AgentStatusKey(cfg.Region, cfg.Hostname),
		lastKey: datastore.LastReportedStatusKey(cfg.Region, cfg.Hostname),
		started: cfg.Started, timeout: cfg.WriteTimeout, now: time.Now,
		interval: cfg.Interval, ttl: cfg.TTL, changed: make(chan struct{}, 1),
		w: newWriter(ds), firstUpdate: true,
	}
}

// SetIntervals changes the reporting interval and TTL while running.
func (a *Agent) SetIntervals(interval, ttl time.Duration) {
	a.mu.Lock()
	a.interval, a.ttl = interval, ttl
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *Agent) intervals() (time.Duration, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.interval, a.ttl
}

// Run reports at once, then every interval, until ctx is done. A failed report is retried after
// a second, and a lease whose keep-alive stopped (etcd unreachable for its TTL) is replaced at
// once, so that the status is rewritten as soon as etcd is back. It leaves the lease to expire on
// exit (a restarting felix does not look dead to networking-calico in between).
func (a *Agent) Run(ctx context.Context) {
	defer a.dropLease()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-a.leaseLost:
			a.tryReport(ctx)
		case <-t.C:
			a.tryReport(ctx)
		}
		if interval, _ := a.intervals(); interval > 0 {
			t.Reset(a.nextDelay(interval))
		} else {
			a.dropLease() // reporting disabled: let the status key expire
		}
	}
}

// tryReport reports once, logging a failure.
func (a *Agent) tryReport(ctx context.Context) {
	err := a.report(ctx)
	a.failed = err != nil
	if err != nil && ctx.Err() == nil {
		a.metrics.errors.WithLabelValues("agent").Inc()
		a.log.Warn().Err(err).Str("key", a.key).Msg("Failed to write agent status; will retry")
	}
}

// retryDelay is how soon a failed report is retried (each attempt itself waits up to the write
// timeout while etcd is unreachable).
const retryDelay = time.Second

// nextDelay is the interval, or a short retry before the first success and after a failure.
func (a *Agent) nextDelay(interval time.Duration) time.Duration {
	if a.firstUpdate || a.failed {
		return min(interval, retryDelay)
	}
	return interval
}

// report writes both keys once.
func (a *Agent) report(ctx context.Context) error {
	interval, ttl := a.intervals()
	if interval <= 0 {
		return nil
	}
	now := a.now()
	val, _ := json.Marshal(AgentReport{
		Time:        now.UTC().Format(time.RFC3339),
		Uptime:      now.Sub(a.started).Seconds(),
		FirstUpdate: a.firstUpdate,
	})
	if err := a.putLeased(ctx, val, ttl); err != nil {
		return err
	}
	a.firstUpdate = false
	a.metrics.writes.WithLabelValues("agent").Inc()
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := a.w.put(rctx, a.lastKey, val); err != nil {
		return fmt.Errorf("writing %s: %w", a.lastKey, err)
	}
	return nil
}

// putLeased writes the status key on the current lease, granting one first if needed, and
// once more on a fresh lease if etcd says the lease is gone.
func (a *Agent) putLeased(ctx context.Context, val []byte, ttl time.Duration) error {
	for attempt := 0; ; attempt++ {
		if err := a.ensureLease(ctx, ttl); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, a.timeout)
		err := a.w.put(rctx, a.key, val, clientv3.WithLease(a.lease))
		cancel()
		if err == nil {
			return nil
		}
		if attempt > 0 || !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("writing %s: %w", a.key, err)
		}
		a.log.Info().Msg("Status lease expired; granting a new one")
		a.dropLease()
	}
}

// ensureLease grants a lease and starts keeping it alive, unless the current one is alive and
// has the wanted TTL.
func (a *Agent) ensureLease(ctx context.Context, ttl time.Duration) error {
	if a.lease != 0 {
		select {
		case <-a.leaseLost:
			a.log.Info().Int64("lease", int64(a.lease)).Msg("Status lease keep-alive stopped; granting a new one")
			a.dropLease()
		default:
			if a.leaseTTL == ttl {
				return nil
			}
			a.dropLease() // the key moves to the new lease with the next put
		}
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	resp, err := a.ds.Etcd().Grant(rctx, secs)
	if err != nil {
		return fmt.Errorf("granting a %ds status lease: %w", secs, err)
	}
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	ch, err := a.ds.Etcd().KeepAlive(kctx, resp.ID)
	if err != nil {
		stop()
		return fmt.Errorf("keeping status lease %x alive: %w", resp.ID, err)
	}
	lost := make(chan struct{})
	go func() { // drain the keep-alive responses; the channel closes when the lease is lost
		for range ch {
		}
		close(lost)
	}()
	a.lease, a.leaseTTL, a.leaseLost, a.stopKeep = resp.ID, ttl, lost, stop
	a.metrics.leases.Inc()
	a.log.Debug().Int64("lease", int64(resp.ID)).Int64("ttl", secs).Msg("Granted status lease")
	return nil
}

// dropLease stops keeping the current lease alive. The lease then expires after its TTL, taking
// the status key with it unless a put has moved the key to a newer lease.
func (a *Agent) dropLease() {
	if a.lease == 0 {
		return
	}
	a.stopKeep()
	a.lease, a.leaseLost = 0, nil
}

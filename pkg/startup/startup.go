package startup

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/compat/report"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// opTimeout bounds one round of datastore work (registration, the first reconcile; the running
// loops use a shorter bound, see Startup.loopTimeout).
const opTimeout = 60 * time.Second

// WatchFunc streams the keys under prefixes to out until ctx is done (a syncer's Run).
type WatchFunc func(ctx context.Context, prefixes []string, out chan<- syncer.Message)

// Deps are what the Startup component works with.
type Deps struct {
	Datastore *datastore.Client
	Kernel    Kernel
	IPAM      TunnelIPAM
	Notifier  *daemon.Notifier
	// Watch streams datastore changes for the tunnel address loop; nil uses pkg/syncer.
	Watch WatchFunc
	Log   zerolog.Logger
	// Env and Hostname decide the node name when none is configured (default OS environment and hostname).
	Env      config.Env
	Hostname func() (string, error)
}

// Startup registers this host and keeps its Node up to date.
type Startup struct {
	cfg    Config
	name   string
	ds     *datastore.Client
	kernel Kernel
	ipam   TunnelIPAM
	notify *daemon.Notifier
	line   *statusLine // STATUS once registered
	// metrics are the Prometheus metrics (served by ServeMetrics).
	metrics *metrics
	watch   WatchFunc
	log     zerolog.Logger
	// unimplemented logs the pools' and the Node's Project Calico settings that calico-host
	// does not implement, once each.
	unimplemented *report.Reporter
	// ipipLogged is the IPIP device state and pools last logged (see checkIPIP).
	ipipLogged string

	// retry is the backoff for waiting on the datastore and retrying failed reconciles; each
	// loop uses its own copy.
	retry backoff.Backoff
	// tunnelResync is how often tunnel addresses are reconciled without any trigger.
	tunnelResync time.Duration
	// debounce coalesces bursts of address events.
	debounce time.Duration
	// pingTimeout bounds each datastore probe while waiting for it.
	pingTimeout time.Duration
	// loopTimeout bounds one round of datastore work in the running loops (an address update, a
	// tunnel reconcile): half the watchdog's staleness limit, so that an unreachable etcd fails
	// the round (retried later) instead of stalling the loop until systemd kills the service.
	loopTimeout time.Duration
}

// New builds the component. It determines the node name (which can fail: an invalid hostname)
// but touches neither the datastore nor the kernel.
func New(cfg Config, d Deps) (*Startup, error) {
	if d.Env == nil {
		d.Env = config.OSEnv
	}
	if d.Hostname == nil {
		d.Hostname = os.Hostname
	}
	name, err := DetermineNodeName(cfg.NodeName, cfg.NodenameFile, d.Env, d.Hostname)
	if err != nil {
		return nil, err
	}
	s := &Startup{cfg: cfg, name: name, ds: d.Datastore, kernel: d.Kernel, ipam: d.IPAM, notify: d.Notifier,
		watch: d.Watch, log: d.Log.With().Str("node", name).Logger(),
		retry: backoff.Backoff{Min: time.Second, Max: 30 * time.Second}, tunnelResync: 5 * time.Minute, debounce: 250 * time.Millisecond,
		pingTimeout: 5 * time.Second, loopTimeout: opTimeout, unimplemented: report.New("startup", d.Log), metrics: newMetrics()}
	if s.watch == nil {
		s.watch = func(ctx context.Context, prefixes []string, out chan<- syncer.Message) {
			syncer.New(d.Datastore, syncer.Config{Prefixes: prefixes}, d.Log.With().Str("subcomponent", "syncer").Logger()).Run(ctx, out)
		}
	}
	if s.notify == nil {
		s.notify = daemon.NewNotifier(d.Log)
	}
	s.line = &statusLine{notify: s.notify}
	return s, nil
}

// NodeName is the name this host registers under.
func (s *Startup) NodeName() string { return s.name }

// Register runs the startup sequence once: wait for the datastore, create or update the Node,
// create the default pools and cluster defaults, and write the nodename file. Running it again
// changes nothing that is already right.
func (s *Startup) Register(ctx context.Context) error {
	start := time.Now()
	s.log.Info().Str("version", buildinfo.Version).Str("backend", s.cfg.Backend).Msg("Starting node registration")
	if err := s.waitForDatastore(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ifaces, err := s.kernel.Interfaces()
	if err != nil {
		return err
	}
	s.notify.Status("Registering node %s", s.name)
	if err := s.registerNode(ctx, ifaces); err != nil {
		return fmt.Errorf("registering node %s: %w", s.name, err)
	}
	s.notify.Status("Ensuring default IP pools and configuration")
	if err := s.ensureDefaultPools(ctx, hostAddrs(ifaces)); err != nil {
		return err
	}
	if err := s.ensureClusterDefaults(ctx); err != nil {
		return err
	}
	if err := writeNodeName(s.cfg.NodenameFile, s.name); err != nil {
		return err
	}
	s.log.Info().Dur("took", time.Since(start)).Str("nodenameFile", s.cfg.NodenameFile).Msg("Node registered")
	return nil
}

func hostAddrs(ifaces []Interface) []netip.Prefix {
	var out []netip.Prefix
	for _, i := range ifaces {
		out = append(out, i.Addrs...)
	}
	return out
}

// RunOnce registers the node, reconciles the tunnel addresses and returns.
func (s *Startup) RunOnce(ctx context.Context) error {
	if err := s.Register(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return s.ReconcileTunnels(ctx)
}

// waitForDatastore blocks until etcd answers, retrying with capped exponential backoff and
// reporting progress in the systemd status.
func (s *Startup) waitForDatastore(ctx context.Context) error {
	retry := s.retry
	s.metrics.onStatus(syncer.WaitingForDatastore) // until the tunnel loop's syncer reports
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, s.pingTimeout)
		err := s.ds.Ping(pctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				s.log.Info().Int("attempts", attempt).Msg("Datastore is reachable")
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the datastore: %w", ctx.Err())
		}
		s.notify.Status("Waiting for the datastore (attempt %d): %v", attempt, err)
		delay := retry.Next()
		s.log.Warn().Err(err).Int("attempt", attempt).Dur("retryIn", delay).Msg("Datastore not reachable yet")
		if err := backoff.Sleep(ctx, delay); err != nil {
			return fmt.Errorf("waiting for the datastore: %w", err)
		}
	}
}

// Run registers the node, tells systemd it is ready, and then keeps the Node's addresses and
// tunnel address up to date until ctx is done. It returns nil on a clean shutdown.
func (s *Startup) Run(ctx context.Context) error {
	if err := s.Register(ctx); err != nil {
		if ctx.Err() != nil {
			s.log.Info().Msg("Stopped before registration completed")
			return nil
		}
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, opTimeout)
	tunnelErr := s.ReconcileTunnels(tctx)
	cancel()
	if tunnelErr != nil {
		s.log.Warn().Err(tunnelErr).Msg("Tunnel address not reconciled yet; will retry")
	}
	s.notify.Ready()
	s.line.event("node %s registered; monitoring addresses and tunnel", s.name)
	err := s.runLoops(ctx)
	s.notify.Stopping()
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return nil
	}
	return err
}

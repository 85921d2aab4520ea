package felix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat/report"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/status"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// ErrRestart is returned (wrapped, with the reason) by Run when the configuration changed in a
// way that needs a restart; the process should exit with ExitRestart.
var ErrRestart = errors.New("configuration changed: restart needed")

// ExitRestart is the exit status that asks systemd for a restart (Project Calico's felix uses 129).
const ExitRestart = 129

// Options are the daemon's inputs.
type Options struct {
	// Local is the configuration from the environment and the config file.
	Local *config.Local
	// Datastore is the etcd client used by the syncer and for status reports.
	Datastore *datastore.Client
	// Syncer streams the datastore; default pkg/syncer over Datastore.
	Syncer Syncer
	// NewDataplane builds the dataplane; default pkg/felix/dataplane (it opens its kernel pieces).
	NewDataplane NewDataplane
	Log          zerolog.Logger
	// SetLogLevel applies LogSeverityScreen (the process-wide level); optional.
	SetLogLevel func(zerolog.Level)
	// Notifier talks to systemd; default daemon.NewNotifier.
	Notifier *daemon.Notifier
	// Started is when the process started (for the uptime in status reports); default now.
	Started time.Time
	// IdleBeat is how often idle loops report progress; default a quarter of the watchdog's
	// staleness limit.
	IdleBeat time.Duration
	// Calc tunes the calculation graph's loop (its clock, its throttle); IdleBeat defaults to
	// the one above.
	Calc calc.RunConfig
	// ShutdownTimeout bounds the wait for the loops to return; default 10 s.
	ShutdownTimeout time.Duration

	// afterFirstApply runs once the dataplane completed its first apply; default pokeDatastore.
	afterFirstApply func(context.Context)
}

// Daemon is one run of calico-felix.
type Daemon struct {
	o        Options
	log      zerolog.Logger
	notifier *daemon.Notifier
	wd       *daemon.Watchdog
	metrics  *metrics
	reg      *prometheus.Registry
	// unimplemented reports the Project Calico settings calico-host does not implement.
	unimplemented *report.Reporter
	graph         *calc.Graph
	calc          *calc.Loop // on graph, built by Run
	dp            Dataplane  // set by start before the status goroutines run
	wg            sync.WaitGroup

	// Owned by the Run goroutine.
	cfg      *config.Config
	dsCfg    calc.DatastoreConfig // what cfg was resolved from
	dpCfg    dataplane.Config
	problems map[string]bool
	// clusterRoutes is what checkClusterRoutes last said.
	clusterRoutes clusterRoutesState

	flowLogs  *flowLogs    // nil when flow logs are off
	pending   *pendingFeed // the syncer's messages for staged policies' pending verdicts
	agent     *status.Agent
	endpoints *status.Endpoints // nil unless EndpointReportingEnabled
	files     *status.Files     // nil when EndpointStatusPathPrefix is empty

	ready atomic.Bool
	// dpProblems, when the dataplane reports any, says what it cannot program although the
	// datastore asks for it (shown in the status line and the readiness probe).
	dpProblems atomic.Pointer[func() string]
	programmed atomic.Int64
	up         atomic.Int64
	// quarantined counts the objects the dataplane could not program (failing closed), when it
	// reports them (dataplane.Dataplane.Quarantined).
	quarantined func() int
}

// New checks the options and returns a daemon; call Run once.
func New(o Options) (*Daemon, error) {
	if o.Local == nil || o.Datastore == nil {
		return nil, fmt.Errorf("felix: Local and Datastore are required")
	}
	if o.Notifier == nil {
		o.Notifier = daemon.NewNotifier(o.Log)
	}
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.Syncer == nil {
		o.Syncer = syncer.New(o.Datastore, syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix},
			Decoder: syncer.FailClosedDecoder},
			o.Log.With().Str("subcomponent", LoopSyncer).Logger())
	}
	if o.afterFirstApply == nil {
		o.afterFirstApply = pokeDatastore(o.Datastore, o.Log)
	}
	local, _ := o.Local.Resolve(nil) // FelixHostname is local-only: the datastore cannot change it
	graph := calc.New(local.FelixHostname, o.Log.With().Str("subcomponent", LoopCalc).Logger())
	graph.SetRouteSource(func(dc calc.DatastoreConfig) calc.RouteSource {
		c, _ := o.Local.Resolve(datastoreConfig(dc)) // its problems are logged when felix resolves it
		return c.RouteSource
	})
	return &Daemon{
		o: o, log: o.Log, notifier: o.Notifier, metrics: newMetrics(), reg: prometheus.NewRegistry(),
		graph: graph, problems: map[string]bool{}, unimplemented: report.New("felix", o.Log),
	}, nil
}

// Registry is the daemon's Prometheus registry (served when PrometheusMetricsEnabled).
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }

// Run runs felix until ctx is done (then it returns nil, leaving the dataplane in place) or the
// configuration needs a restart (an error wrapping ErrRestart). Other errors are fatal.
//
// The pipeline: the syncer sends to calc on one channel (calc gives each message to the pending
// feed first), calc to the dataplane on another.
func (d *Daemon) Run(parent context.Context) error {
	defer setGCPercent()()
	local, _ := d.o.Local.Resolve(nil) // the datastore's configuration is known once start runs
	setHeapSampling(wantsHeapProfiles(local))
	ctx, cancel := context.WithCancel(parent)
	defer d.shutdown(cancel)
	d.wd = daemon.NewWatchdog(d.notifier, d.log, LoopCalc)
	if d.o.IdleBeat <= 0 {
		d.o.IdleBeat = d.wd.Limit() / 4
	}
	d.wg.Go(func() { d.wd.Run(ctx) })
	d.pending = newPendingFeed()
	calcCfg := d.o.Calc
	if calcCfg.IdleBeat <= 0 {
		calcCfg.IdleBeat = d.o.IdleBeat
	}
	calcCfg.OnMessage = d.pending.add
	d.calc = calc.NewLoop(d.graph, calcCfg)

	calcIn := make(chan syncer.Message, 8)
	dpIn := make(chan []calc.Update) // calc holds a batch until the dataplane takes it
	d.wg.Go(func() { d.o.Syncer.Run(ctx, calcIn) })
	d.wg.Go(func() { d.runCalc(ctx, calcIn, dpIn) })

	if !d.awaitDatastore(ctx) {
		return nil
	}
	if err := d.start(ctx, dpIn); err != nil {
		return err
	}
	return d.follow(ctx)
}

// runCalc runs the calculation graph's loop, which beats for the watchdog.
func (d *Daemon) runCalc(ctx context.Context, in <-chan syncer.Message, out chan<- []calc.Update) {
	d.calc.Run(ctx, in, out, func() { d.wd.Beat(LoopCalc) })
}

// follow applies calc's facts until ctx is done or a change needs a restart.
func (d *Daemon) follow(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.calc.FactsChanged():
			if err := d.checkConfig(d.calc.Facts()); err != nil {
				return err
			}
		}
	}
}

// shutdown stops every loop and waits (bounded) for them to return.
func (d *Daemon) shutdown(cancel context.CancelFunc) {
	d.notifier.Stopping()
	cancel()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		d.log.Info().Msg("Stopped; the dataplane stays programmed")
	case <-time.After(d.o.ShutdownTimeout):
		d.log.Warn().Dur("timeout", d.o.ShutdownTimeout).Msg("Loops did not stop in time; exiting anyway")
	}
}

// restart builds the error that makes felix exit for a restart.
func (d *Daemon) restart(reason string) error {
	d.metrics.restartNeeded.Set(1)
	d.log.Warn().Str("reason", reason).Int("exit_status", ExitRestart).Msg("Configuration change needs a restart; exiting")
	return fmt.Errorf("%w: %s", ErrRestart, reason)
}

package felix

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/status"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// awaitDatastore waits until calc's facts say the datastore is in sync and ClusterInformation
// default says datastoreReady, reporting the wait to systemd. Meanwhile calc keeps its first
// batch for the dataplane. It returns false when ctx ended first.
func (d *Daemon) awaitDatastore(ctx context.Context) bool {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		f := d.calc.Facts()
		d.notifier.Status("%s", d.startupStatus(f))
		if f.InSync && f.Config.DatastoreReady {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		case <-d.calc.FactsChanged():
		}
	}
}

func (d *Daemon) startupStatus(f calc.Facts) string {
	switch {
	case d.o.Syncer.Status() == syncer.WaitingForDatastore && !f.InSync:
		return "Waiting for the datastore (etcd)"
	case !f.InSync:
		return "Resyncing with the datastore"
	case !f.Config.ClusterInfo:
		return "Waiting for ClusterInformation default in the datastore"
	}
	return "Waiting for ClusterInformation default to have datastoreReady: true"
}

// datastoreConfig is calc's view of the datastore's configuration, for config.Resolve.
func datastoreConfig(c calc.DatastoreConfig) *config.Datastore {
	return &config.Datastore{Global: c.Global, Node: c.Node, Scoped: c.Scoped, ScopedName: c.ScopedName, Cluster: config.Cluster{
		Type: c.ClusterType, GUID: c.ClusterGUID, CalicoVersion: c.CalicoVersion,
		DatastoreReady: c.DatastoreReady, VXLANTunnelMAC: c.VXLANTunnelMAC,
	}}
}

// resolve computes the configuration from the local sources and the datastore's part, logging
// each ignored value once, and each Project Calico setting calico-host does not implement once
// (see compat; counted in calico_host_unimplemented_settings).
func (d *Daemon) resolve(ds *config.Datastore) *config.Config {
	cfg, problems := d.o.Local.Resolve(ds)
	d.unimplemented.Replace(cfg.NotImplemented)
	seen := map[string]bool{}
	for _, p := range problems {
		msg := p.Error()
		seen[msg] = true
		if d.problems[msg] {
			continue
		}
		d.metrics.configErrors.Inc()
		d.log.Warn().Str("param", p.Param).Str("value", p.Value).Stringer("source", p.Source).Str("origin", p.Origin).
			Str("key", p.Key).AnErr("reason", p.Err).Msg("Ignoring configuration value")
	}
	d.problems = seen
	return cfg
}

// start resolves the configuration and starts the dataplane on calc's output, the status
// reporters and the HTTP servers.
func (d *Daemon) start(ctx context.Context, dpIn <-chan []calc.Update) error {
	f := d.calc.Facts()
	d.logScoped(calc.DatastoreConfig{}, f.Config)
	d.dsCfg = f.Config
	d.cfg = d.resolve(datastoreConfig(f.Config))
	setHeapSampling(wantsHeapProfiles(d.cfg))
	d.applyLogLevel()
	d.dpCfg = dataplane.NewConfig(d.cfg, f.PoolsUseVXLAN)
	d.checkClusterRoutes(f)
	d.log.Info().Str("hostname", d.cfg.FelixHostname).Strs("interface_prefix", d.cfg.InterfacePrefix).
		Bool("vxlan", d.dpCfg.VXLANEnabled).Bool("openstack", d.dpCfg.OpenStack).Msg("Configuration resolved; starting the dataplane")
	if err := d.prepareWireguard(ctx); err != nil {
		return err
	}
	d.startFlowLogs(ctx)
	dp, err := d.newDataplane()(d.dpCfg, d.log)
	if err != nil {
		return fmt.Errorf("starting the dataplane: %w", err)
	}
	if q, ok := dp.(interface{ Quarantined() int }); ok {
		d.quarantined = q.Quarantined
	}
	if p, ok := dp.(interface{ Problems() string }); ok {
		f := p.Problems
		d.dpProblems.Store(&f)
	}
	d.dp = dp
	statusMetrics := d.startStatus(ctx)
	d.registerMetrics(dp, statusMetrics)
	d.startServers(ctx)

	statusCh := make(chan dataplane.EndpointStatus, 256)
	d.wd.Beat(LoopDataplane) // from now on the dataplane loop must keep beating
	d.wg.Go(func() { dp.Run(ctx, dpIn, statusCh, func() { d.wd.Beat(LoopDataplane) }) })
	d.wg.Go(func() { d.consumeStatuses(ctx, statusCh) })
	d.wg.Go(func() { d.awaitFirstApply(ctx, dp) })
	d.wg.Go(func() { d.reportStatus(ctx) })
	return nil
}

// newDataplane is the dataplane builder: Options.NewDataplane, or pkg/felix/dataplane with
// felix's idle beat.
func (d *Daemon) newDataplane() NewDataplane {
	if d.o.NewDataplane != nil {
		return d.o.NewDataplane
	}
	return func(cfg dataplane.Config, log zerolog.Logger) (Dataplane, error) {
		opts := []dataplane.Option{dataplane.WithTiming(dataplane.Timing{IdleBeat: d.o.IdleBeat})}
		if d.flowLogs != nil {
			opts = append(opts, dataplane.WithFlowLogTables(d.flowLogs.publish))
		}
		dp, err := dataplane.New(cfg, log, opts...)
		if err != nil {
			return nil, err
		}
		return dp, nil
	}
}

// startStatus starts the agent status reporter and, when enabled, the endpoint reporter (etcd)
// and the endpoint status files.
func (d *Daemon) startStatus(ctx context.Context) *status.Metrics {
	m := status.NewMetrics()
	region := datastore.Region(d.cfg.OpenstackRegion)
	log := d.log.With().Str("subcomponent", "status").Logger()
	d.agent = status.NewAgent(d.o.Datastore, status.AgentConfig{
		Hostname: d.cfg.FelixHostname, Region: region, Started: d.o.Started,
		Interval: d.cfg.ReportingInterval, TTL: d.cfg.ReportingTTL,
	}, m, log)
	d.wg.Go(func() { d.agent.Run(ctx) })
	if d.cfg.EndpointReportingEnabled {
		d.endpoints = status.NewEndpoints(d.o.Datastore, status.EndpointsConfig{
			Hostname: d.cfg.FelixHostname, Region: region, Delay: d.cfg.EndpointReportingDelay,
		}, m, log)
		d.calc.Observe(ctx, d.endpoints)
		d.wg.Go(func() { d.endpoints.Run(ctx) })
	}
	if d.cfg.EndpointStatusPathPrefix != "" {
		d.files = status.NewFiles(status.FilesConfig{PathPrefix: d.cfg.EndpointStatusPathPrefix}, m, log)
		d.calc.Observe(ctx, d.files)
		d.wg.Go(func() { d.files.Run(ctx) })
	}
	return m
}

func (d *Daemon) registerMetrics(dp Dataplane, sm *status.Metrics) {
	d.metrics.register(d.reg, d.cfg)
	cs := slices.Concat(d.calc.Collectors(), dp.Collectors(), sm.Collectors(), []prometheus.Collector{d.unimplemented.Collector()})
	if d.flowLogs != nil {
		cs = append(cs, d.flowLogs.collectors()...)
	}
	for _, c := range cs {
		if err := d.reg.Register(c); err != nil {
			d.log.Warn().Err(err).Msg("Skipping a metric that cannot be registered")
		}
	}
}

// startServers starts the health and metrics servers when enabled. A server that cannot listen
// is logged; felix keeps running without it.
func (d *Daemon) startServers(ctx context.Context) {
	if d.cfg.HealthEnabled {
		addr := net.JoinHostPort(d.cfg.HealthHost, strconv.Itoa(d.cfg.HealthPort))
		if _, err := daemon.Serve(ctx, addr, daemon.HealthHandler(d.live, d.readiness), d.log); err != nil {
			d.log.Error().Err(err).Msg("Health server not started")
		}
	}
	if d.cfg.PrometheusMetricsEnabled {
		d.startMetricsServer(ctx)
	}
	if d.cfg.DebugPort != 0 {
		addr := net.JoinHostPort(d.cfg.DebugHost, strconv.Itoa(d.cfg.DebugPort))
		if _, err := daemon.Serve(ctx, addr, daemon.PprofHandler(), d.log); err != nil {
			d.log.Error().Err(err).Msg("pprof debug server not started")
		}
	}
	daemon.ProfileOnSignals(ctx, daemon.Profiles{Memory: d.cfg.DebugMemoryProfilePath, CPU: d.cfg.DebugCPUProfilePath},
		d.log.With().Str("subcomponent", "profiles").Logger())
}

// startMetricsServer serves /metrics over HTTPS when PrometheusMetricsCertFile or KeyFile is
// set (as Project Calico's felix), else over HTTP.
func (d *Daemon) startMetricsServer(ctx context.Context) {
	addr := net.JoinHostPort(d.cfg.PrometheusMetricsHost, strconv.Itoa(d.cfg.PrometheusMetricsPort))
	st := daemon.ServerTLS{CertFile: d.cfg.PrometheusMetricsCertFile, KeyFile: d.cfg.PrometheusMetricsKeyFile,
		CAFile: d.cfg.PrometheusMetricsCAFile, ClientAuth: d.cfg.PrometheusMetricsClientAuth}
	var err error
	if st.Enabled() {
		_, err = daemon.ServeTLS(ctx, addr, daemon.MetricsHandler(d.reg), st, d.log)
	} else {
		_, err = daemon.Serve(ctx, addr, daemon.MetricsHandler(d.reg), d.log)
	}
	if err != nil {
		d.log.Error().Err(err).Msg("Metrics server not started")
	}
}

// live is the liveness probe: every loop made progress recently.
func (d *Daemon) live() (bool, string) {
	if stale := d.wd.Stale(); len(stale) > 0 {
		return false, fmt.Sprintf("loops made no progress for %s: %v", d.wd.Limit(), stale)
	}
	return true, ""
}

// readiness is the readiness probe: the first apply is done and the datastore is in sync. While
// etcd is unreachable felix is not ready, but keeps enforcing the last state it applied.
func (d *Daemon) readiness() (bool, string) {
	switch st := d.o.Syncer.Status(); {
	case !d.ready.Load():
		return false, "the dataplane has not completed its first apply"
	case st == syncer.WaitingForDatastore:
		return false, "not in sync with the datastore: " + st.String() + " (etcd unreachable; the dataplane keeps the last applied state)"
	case st != syncer.InSync:
		return false, "not in sync with the datastore: " + st.String()
	}
	if p := d.dataplaneProblems(); p != "" {
		return false, p
	}
	return true, ""
}

// dataplaneProblems is what the dataplane cannot program although asked to ("" when nothing).
func (d *Daemon) dataplaneProblems() string {
	if f := d.dpProblems.Load(); f != nil {
		return (*f)()
	}
	return ""
}

// applyLogLevel applies LogSeverityScreen.
func (d *Daemon) applyLogLevel() {
	if d.o.SetLogLevel != nil {
		d.o.SetLogLevel(d.cfg.LogSeverityScreen)
	}
}

package confd

import (
	"context"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Options are calico-confd's command-line settings.
type Options struct {
	ConfigFile    string // default DefaultConfigFile
	DatastoreFile string // default config.DefaultDatastoreFile
	Onetime       bool   // render once and exit
	Env           config.Env
}

// Main runs calico-confd until ctx is done (or, with Onetime, after one render).
func Main(ctx context.Context, opts Options, stderr io.Writer) error {
	if opts.Env == nil {
		opts.Env = config.OSEnv
	}
	cfg, err := LoadConfig(orDefault(opts.ConfigFile, DefaultConfigFile), opts.Env)
	if err != nil {
		return fmt.Errorf("loading configuration: %w", daemon.ConfigError(err))
	}
	level, err := daemon.ParseLevel(cfg.LogSeverity)
	if err != nil {
		return daemon.ConfigError(err)
	}
	log := daemon.NewLogger(stderr, "calico-confd", level, daemon.FormatAuto)
	nodeName, err := cfg.ResolveNodeName()
	if err != nil {
		return err
	}
	dsCfg, err := config.LoadDatastore(orDefault(opts.DatastoreFile, config.DefaultDatastoreFile), opts.Env)
	if err != nil {
		return fmt.Errorf("loading datastore configuration: %w", daemon.ConfigError(err))
	}
	ds, err := datastore.New(dsCfg)
	if err != nil {
		return fmt.Errorf("connecting to etcd: %w", err)
	}
	defer ds.Close()
	log.Info().Str("version", buildinfo.Version).Str("node", nodeName).Strs("etcd", dsCfg.Etcd.Endpoints).
		Str("output_dir", cfg.OutputDir).Bool("onetime", opts.Onetime).Msg("Starting calico-confd")
	src := syncer.New(ds, SyncerConfig(nodeName), log.With().Str("subcomponent", "syncer").Logger())
	d := NewDaemon(&cfg, nodeName, src, ExecRunner, daemon.NewNotifier(log), log)
	if cfg.MetricsAddress != "" && !opts.Onetime {
		if err := serveMetrics(ctx, cfg.MetricsAddress, d, log); err != nil {
			log.Error().Err(err).Msg("Metrics server not started")
		}
	}
	if opts.Onetime {
		ctx, cancel := context.WithTimeout(ctx, DefaultSnapshotTimeout)
		defer cancel()
		return d.RunOnce(ctx)
	}
	return d.Run(ctx)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serveMetrics serves the daemon's metrics, with the Go and process collectors, on addr.
func serveMetrics(ctx context.Context, addr string, d *Daemon, log zerolog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(append(d.Collectors(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))...)
	_, err := daemon.Serve(ctx, addr, daemon.MetricsHandler(reg), log)
	return err
}

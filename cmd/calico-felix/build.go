package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// started is when the process started (for the uptime in felix's status reports).
var started = time.Now()

// build loads the local configuration and wires the real syncer, calculation graph and
// dataplane into a felix daemon.
func build(configFile string, stderr io.Writer) (*felix.Daemon, zerolog.Logger, error) {
	// The loggers log everything; the process-wide level (LogSeverityScreen) filters.
	log := daemon.NewLogger(stderr, "felix", zerolog.TraceLevel, daemon.FormatAuto)
	local, err := config.LoadLocal(config.LoadOptions{ConfigFile: configFile})
	if err != nil {
		return nil, log, daemon.ConfigError(err)
	}
	cfg, _ := local.Resolve(nil) // problems are logged once the datastore's part is known
	setLevel(cfg.LogSeverityScreen)
	dsCfg, err := local.Datastore(cfg)
	if err != nil {
		return nil, log, daemon.ConfigError(err)
	}
	ds, err := datastore.New(dsCfg)
	if err != nil {
		return nil, log, fmt.Errorf("connecting to etcd: %w", err)
	}
	log.Info().Str("version", versionString()).Str("hostname", cfg.FelixHostname).Strs("etcd", dsCfg.Etcd.Endpoints).
		Str("config_file", configFile).Msg("Starting calico-felix")
	notifier := daemon.NewNotifier(log)
	limit := notifier.WatchdogInterval() / 2
	if limit == 0 {
		limit = daemon.DefaultStaleness
	}
	graph := calc.New(cfg.FelixHostname, log.With().Str("loop", felix.LoopCalc).Logger())
	d, err := felix.New(felix.Options{
		Local:     local,
		Datastore: ds,
		Syncer: syncer.New(ds, syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}},
			log.With().Str("loop", felix.LoopSyncer).Logger()),
		Calc:         calcLoop{graph: graph, cfg: calc.RunConfig{IdleBeat: limit / 4}},
		NewDataplane: afterFirstApply(newDataplane(limit/4), pokeDatastore(ds, log)),
		Log:          log,
		SetLogLevel:  zerolog.SetGlobalLevel,
		Notifier:     notifier,
		Started:      started,
	})
	return d, log, err
}

func setLevel(severity string) {
	if l, err := daemon.ParseLevel(severity); err == nil {
		zerolog.SetGlobalLevel(l)
	}
}

// calcLoop binds the calculation graph's RunConfig.
type calcLoop struct {
	graph *calc.Graph
	cfg   calc.RunConfig
}

func (c calcLoop) Run(ctx context.Context, in <-chan syncer.Message, out chan<- []calc.Update, progress func()) {
	c.graph.Run(ctx, in, out, c.cfg, progress)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/startup"
)

func main() {
	ctx, stop := daemon.SignalContext()
	code := run(ctx, os.Args[1:], config.OSEnv, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	configPath, dsPath string
	runOnce, version   bool
}

// parseFlags parses the command line; ok is false after a usage error or -help (code to return).
func parseFlags(args []string, stderr io.Writer) (o options, code int, ok bool) {
	fs := flag.NewFlagSet("calico-startup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.configPath, "config", startup.DefaultConfigFile, "node settings (TOML)")
	fs.StringVar(&o.dsPath, "datastore-config", config.DefaultDatastoreFile, "datastore connection settings (TOML)")
	fs.BoolVar(&o.runOnce, "run-once", false, "register the node, allocate the tunnel address and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0, false
		}
		return o, 2, false
	}
	return o, 0, true
}

// run is the whole program; it returns the exit code: 0 on success or clean shutdown,
// daemon.ExitConfig (78) on invalid configuration (systemd does not restart the unit: see
// RestartPreventExitStatus= in calico-startup.service), 1 on other failures (restarted), 2 on bad
// command-line usage.
func run(ctx context.Context, args []string, env config.Env, stderr io.Writer) int {
	o, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	if o.version {
		fmt.Fprintln(stderr, buildinfo.Version, buildinfo.GitCommit)
		return 0
	}
	cfg, err := startup.LoadConfig(o.configPath, env)
	if err == nil {
		var ds config.Datastore
		if ds, err = config.LoadDatastore(o.dsPath, env); err == nil {
			return serve(ctx, cfg, ds, o.runOnce, stderr)
		}
	}
	fmt.Fprintf(stderr, "calico-startup: invalid configuration: %v\n", err)
	return daemon.ExitConfig
}

// serve builds the component and runs it once or as a daemon.
func serve(ctx context.Context, cfg startup.Config, ds config.Datastore, runOnce bool, stderr io.Writer) int {
	level, _ := daemon.ParseLevel(cfg.LogSeverity) // validated by LoadConfig
	log := daemon.NewLogger(stderr, "startup", level, daemon.FormatAuto)
	s, closeFn, err := startup.Open(cfg, ds, log)
	if err != nil {
		log.Error().Err(err).Msg("calico-startup cannot start")
		return daemon.ExitFailure
	}
	defer closeFn()
	if cfg.MetricsAddress != "" && !runOnce {
		if _, err := startup.ServeMetrics(ctx, cfg.MetricsAddress, s, log); err != nil {
			log.Error().Err(err).Msg("Metrics server not started")
		}
	}
	if runOnce {
		err = s.RunOnce(ctx)
	} else {
		err = s.Run(ctx)
	}
	if err != nil {
		log.Error().Err(err).Msg("calico-startup failed")
		return daemon.ExitFailure
	}
	return 0
}

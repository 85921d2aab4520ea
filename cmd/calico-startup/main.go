// Command calico-startup registers this host in the datastore (Node, addresses, default pools,
// cluster defaults, tunnel address) and then keeps its Node up to date as a systemd notify service.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/calico-host/calico-host/pkg/buildinfo"
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

// run is the whole program; it returns the exit code: 0 on success or clean shutdown, 1 on
// invalid configuration or failure, 2 on bad command-line usage.
func run(ctx context.Context, args []string, env config.Env, stderr io.Writer) int {
	fs := flag.NewFlagSet("calico-startup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", startup.DefaultConfigFile, "node settings (TOML)")
	dsPath := fs.String("datastore-config", config.DefaultDatastoreFile, "datastore connection settings (TOML)")
	runOnce := fs.Bool("run-once", false, "register the node, allocate the tunnel address and exit")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		fmt.Fprintln(stderr, buildinfo.Version, buildinfo.GitCommit)
		return 0
	}
	cfg, err := startup.LoadConfig(*configPath, env)
	if err != nil {
		fmt.Fprintf(stderr, "calico-startup: %v\n", err)
		return 1
	}
	ds, err := config.LoadDatastore(*dsPath, env)
	if err != nil {
		fmt.Fprintf(stderr, "calico-startup: %v\n", err)
		return 1
	}
	level, _ := daemon.ParseLevel(cfg.LogSeverity) // validated by LoadConfig
	log := daemon.NewLogger(stderr, "startup", level, daemon.FormatAuto)
	s, closeFn, err := startup.Open(cfg, ds, log)
	if err != nil {
		log.Error().Err(err).Msg("calico-startup cannot start")
		return 1
	}
	defer closeFn()
	if *runOnce {
		err = s.RunOnce(ctx)
	} else {
		err = s.Run(ctx)
	}
	if err != nil {
		log.Error().Err(err).Msg("calico-startup failed")
		return 1
	}
	return 0
}

// Command calico-felix is the per-host policy and routing agent: it syncs Project Calico's
// resources from etcd and programs nftables, routes and the VXLAN device, reporting its status
// to etcd and to systemd.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/calico-host/calico-host/pkg/buildinfo"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/config"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run parses the flags, builds felix and runs it until SIGTERM/SIGINT; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("calico-felix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", config.DefaultConfigFile, "felix configuration `file` (TOML)")
	fs.StringVar(configFile, "config-file", config.DefaultConfigFile, "same as --config (Project Calico's name)")
	fs.StringVar(configFile, "c", config.DefaultConfigFile, "same as --config")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { usage(stdout, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version {
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	d, log, err := build(*configFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "calico-felix: %v\n", err)
		return daemon.ExitCode(err) // ExitConfig (78) for a bad configuration: systemd does not restart
	}
	err = d.Run(ctx)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, felix.ErrRestart):
		return felix.ExitRestart
	}
	log.Error().Err(err).Msg("calico-felix failed")
	return 1
}

func versionString() string {
	if buildinfo.GitCommit != "" {
		return fmt.Sprintf("calico-felix %s (commit %s)", buildinfo.Version, buildinfo.GitCommit)
	}
	return "calico-felix " + buildinfo.Version
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: calico-felix [--config FILE]

calico-host's felix: enforces Project Calico policy for the workloads and host endpoints of this
host (nftables), programs VXLAN routes, and reports agent and endpoint status to etcd.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, `
Configuration, highest precedence first: environment FELIX_<PARAMETER>, the config file
(default %s), FelixConfiguration node.<hostname> then default in etcd, defaults.
The etcd connection comes from %s and ETCD_* variables,
overridden by FELIX_ETCDENDPOINTS, FELIX_ETCDCAFILE, FELIX_ETCDCERTFILE, FELIX_ETCDKEYFILE.

Main parameters (config key, environment variable, default):
%s
Exit status: 0 after SIGTERM/SIGINT (the dataplane stays programmed), %d when a configuration
change needs a restart, %d when the configuration file or environment is invalid, 1 on other errors.
`, config.DefaultConfigFile, "/etc/calico/datastore.toml", config.Usage(), felix.ExitRestart, daemon.ExitConfig)
}

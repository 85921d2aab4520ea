package felix

import (
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/config"
)

// DefaultConfigFile is felix's configuration file unless --config names another.
const DefaultConfigFile = config.DefaultConfigFile

// Build loads the local configuration (configFile, the environment, /etc/calico/datastore.toml),
// connects to etcd and returns the daemon on the real syncer, calculation graph and dataplane,
// with a logger on stderr. version is logged at start.
func Build(configFile string, stderr io.Writer, version string) (*Daemon, zerolog.Logger, error) {
	// The loggers log everything; the process-wide level (LogSeverityScreen) filters.
	log := daemon.NewLogger(stderr, "felix", zerolog.TraceLevel, daemon.FormatAuto)
	local, err := config.LoadLocal(config.LoadOptions{ConfigFile: configFile})
	if err != nil {
		return nil, log, daemon.ConfigError(err)
	}
	cfg, _ := local.Resolve(nil) // problems are logged once the datastore's part is known
	zerolog.SetGlobalLevel(cfg.LogSeverityScreen)
	dsCfg, err := local.Datastore(cfg)
	if err != nil {
		return nil, log, daemon.ConfigError(err)
	}
	ds, err := datastore.New(dsCfg)
	if err != nil {
		return nil, log, fmt.Errorf("connecting to etcd: %w", err)
	}
	log.Info().Str("version", version).Str("hostname", cfg.FelixHostname).Strs("etcd", dsCfg.Etcd.Endpoints).
		Str("config_file", configFile).Msg("Starting calico-felix")
	d, err := New(Options{Local: local, Datastore: ds, Log: log, SetLogLevel: zerolog.SetGlobalLevel})
	return d, log, err
}

// ExitStatus is the process exit status for Run's result: 0 after a stop, ExitRestart when the
// configuration needs a restart, 1 (logged) on errors.
func ExitStatus(err error, log zerolog.Logger) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrRestart):
		return ExitRestart
	}
	log.Error().Err(err).Msg("calico-felix failed")
	return 1
}

// Usage writes calico-felix's help: what it does, its flags (printed by flags), where its
// configuration comes from, the main parameters and the exit statuses.
func Usage(w io.Writer, flags func()) {
	fmt.Fprintf(w, `Usage: calico-felix [--config FILE]

calico-host's felix: enforces Project Calico policy for the workloads and host endpoints of this
host (nftables), programs VXLAN routes, and reports agent and endpoint status to etcd.

Flags:
`)
	flags()
	fmt.Fprintf(w, `
Configuration, highest precedence first: environment FELIX_<PARAMETER>, the config file
(default %s), FelixConfiguration node.<hostname>, then the selector-scoped one
matching this host's Node labels (spec.nodeSelector), then default in etcd, defaults.
The etcd connection comes from %s and ETCD_* variables,
overridden by FELIX_ETCDENDPOINTS, FELIX_ETCDCAFILE, FELIX_ETCDCERTFILE, FELIX_ETCDKEYFILE.

Main parameters (config key, environment variable, default):
%s
Exit status: 0 after SIGTERM/SIGINT (the dataplane stays programmed), %d when a configuration
change needs a restart, %d when the configuration file or environment is invalid, 1 on other errors.
`, config.DefaultConfigFile, "/etc/calico/datastore.toml", config.Usage(), ExitRestart, daemon.ExitConfig)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/felix"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run parses the flags, builds felix and runs it until SIGTERM/SIGINT; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("calico-felix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", felix.DefaultConfigFile, "felix configuration `file` (TOML)")
	fs.StringVar(configFile, "config-file", felix.DefaultConfigFile, "same as --config (Project Calico's name)")
	fs.StringVar(configFile, "c", felix.DefaultConfigFile, "same as --config")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { fs.SetOutput(stdout); felix.Usage(stdout, fs.PrintDefaults) }
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
	d, log, err := felix.Build(*configFile, stderr, versionString())
	if err != nil {
		fmt.Fprintf(stderr, "calico-felix: %v\n", err)
		return daemon.ExitCode(err) // ExitConfig (78) for a bad configuration: systemd does not restart
	}
	return felix.ExitStatus(d.Run(ctx), log)
}

func versionString() string {
	if buildinfo.GitCommit != "" {
		return fmt.Sprintf("calico-felix %s (commit %s)", buildinfo.Version, buildinfo.GitCommit)
	}
	return "calico-felix " + buildinfo.Version
}

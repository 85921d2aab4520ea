package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/confd"
	"github.com/calico-host/calico-host/pkg/daemon"
)

func main() {
	var opts confd.Options
	flag.StringVar(&opts.ConfigFile, "config", confd.DefaultConfigFile, "configuration file")
	flag.StringVar(&opts.DatastoreFile, "datastore-config", "", "datastore configuration file (default /etc/calico/datastore.toml)")
	flag.BoolVar(&opts.Onetime, "onetime", false, "render the configuration once and exit")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println(buildinfo.Version)
		return
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	if err := confd.Main(ctx, opts, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "calico-confd:", err)
		stop()
		// ExitConfig (78) for an invalid configuration: calico-confd.service does not restart it.
		os.Exit(daemon.ExitCode(err))
	}
}

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/test/e2e/topo"
	"github.com/calico-host/calico-host/test/fleet"
)

func main() {
	var o fleet.Options
	var logPath string
	flag.IntVar(&o.Hosts, "hosts", 100, "hosts (agents)")
	flag.IntVar(&o.Policies, "policies", 2000, "policies")
	flag.IntVar(&o.NetSets, "netsets", 100, "network sets")
	flag.IntVar(&o.Proxies, "proxies", -1, "grpc-proxies (-1: one per 100 hosts; 0: agents on the members directly)")
	flag.IntVar(&o.FullAgents, "calc", -1, "agents running felix's calc graph and confd's store (-1: all up to 100 hosts, else 20)")
	flag.Float64Var(&o.StartRate, "start-rate", 0, "agents started per second in the cold start (0: all at once)")
	flag.Float64Var(&o.ChurnRate, "churn", 0, "changes per second (0: one per 100 hosts, at least 1)")
	flag.DurationVar(&o.ChurnFor, "churn-for", 30*time.Second, "length of the measured churn phase")
	flag.DurationVar(&o.LivenessTimeout, "liveness", 0, "the agents' syncer liveness timeout (0: the syncer's default, 4s)")
	flag.DurationVar(&o.ProgressInterval, "progress", 10*time.Second, "etcd's watch progress notify interval (0: etcd's default, 10m)")
	flag.BoolVar(&o.Disruptions, "disruptions", true, "run the leader loss, compaction and proxy restart phases")
	flag.BoolVar(&o.KeepDir, "keep", false, "keep the etcd data and logs")
	flag.StringVar(&logPath, "log", "", "file for the agents' warnings (default: discarded)")
	flag.Parse()
	if os.Geteuid() != 0 || !fleet.EtcdAvailable() {
		fmt.Fprintln(os.Stderr, "fleet: run as root with the etcd binary on PATH (Debian package etcd-server)")
		os.Exit(2)
	}
	if o.Proxies < 0 {
		o.Proxies = (o.Hosts + 99) / 100
	}
	if o.FullAgents < 0 && o.Hosts > 100 {
		o.FullAgents = 20
	}
	o.Log = zerolog.Nop()
	if logPath != "" {
		lf, err := os.Create(logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(1)
		}
		defer lf.Close()
		o.Log = zerolog.New(lf).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	}
	o.Logf = func(format string, args ...any) {
		fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	// Not topo.HandleSignals: it treats SIGPIPE as fatal, and the proxy restart breaks connections.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	topo.SweepLeftovers("ccfleet")
	r, err := fleet.Run(ctx, o)
	if r != nil {
		r.Print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	if len(r.Diffs) > 0 {
		os.Exit(1)
	}
}

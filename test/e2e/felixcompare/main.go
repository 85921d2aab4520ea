package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

type options struct {
	ours, theirs                     string // the two calico-felix binaries
	data                             string // "calcbench" or a JSON (.gz) file
	host                             string // the felix host of the data set
	prefix                           string // the workload interface prefix
	local, remote, policies, netsets int    // calcbench's shape
	ipv6                             bool
	runs, changes                    int
	gap                              time.Duration
	profile                          string // directory for our felix's heap profiles ("": none)
	keep                             bool
}

func main() {
	var o options
	flag.StringVar(&o.ours, "ours", "", "our calico-felix binary")
	flag.StringVar(&o.theirs, "theirs", "", "Project Calico's calico-felix binary (\"\": measure ours only)")
	flag.StringVar(&o.data, "data", "calcbench", `"calcbench", or a JSON array of {"key", "value"} (gzipped if it ends in .gz)`)
	flag.StringVar(&o.host, "host", "bench-host", "the host felix runs as")
	flag.StringVar(&o.prefix, "prefix", "cali", "workload interface prefix (FELIX_INTERFACEPREFIX)")
	flag.IntVar(&o.local, "local", 1000, "calcbench: local workload endpoints")
	flag.IntVar(&o.remote, "remote", 10000, "calcbench: remote workload endpoints")
	flag.IntVar(&o.policies, "policies", 1000, "calcbench: policies")
	flag.IntVar(&o.netsets, "netsets", 100, "calcbench: network sets")
	flag.BoolVar(&o.ipv6, "ipv6", false, "IPv6 support in both felixes")
	flag.IntVar(&o.runs, "runs", 3, "runs (each measures both felixes)")
	flag.IntVar(&o.changes, "changes", 60, "changes after ready")
	flag.DurationVar(&o.gap, "gap", 300*time.Millisecond, "pause between a change showing in the kernel and the next change")
	flag.StringVar(&o.profile, "profile", "", "write our felix's heap profiles (after ready, after the changes) into this directory")
	flag.BoolVar(&o.keep, "keep", false, "keep the state and log directory")
	flag.Parse()
	if o.ours == "" || os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "felixcompare: run as root with -ours (use scripts/felix-compare.sh)")
		os.Exit(2)
	}
	topo.HandleSignals()
	topo.SweepLeftovers("fc")
	err := run(context.Background(), o)
	topo.CloseAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "felixcompare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "felixcompare.")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Printf("state and logs: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	ds, err := prepare(ctx, o, dir)
	if err != nil {
		return fmt.Errorf("preparing the data set: %w", err)
	}
	fmt.Printf("data set %s: %d keys, %d local workload interfaces, %d changes prepared; machine: %s\n",
		o.data, ds.keys, len(ds.ifaces), len(ds.changes), machine())
	sides := []side{{name: "ours", bin: o.ours, ours: true}}
	if o.theirs != "" {
		sides = append(sides, side{name: "calico", bin: o.theirs})
	}
	results := map[string][]result{}
	for r := 1; r <= o.runs; r++ {
		order := sides
		if r%2 == 0 && len(sides) == 2 {
			order = []side{sides[1], sides[0]}
		}
		for _, s := range order {
			res, err := s.measure(ctx, o, ds, dir, r)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", r, s.name, err)
			}
			fmt.Printf("run %d %-6s %s\n", r, s.name, res)
			results[s.name] = append(results[s.name], res)
		}
	}
	summarize(results)
	return nil
}

// machine describes the machine: CPUs, memory, kernel.
func machine() string {
	out, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d CPUs, %.1f GiB, kernel %s", numCPU(), memGiB(), string(trimNL(out)))
}

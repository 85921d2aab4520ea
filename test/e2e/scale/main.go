package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

type options struct {
	bin                              string
	local, remote, policies, netsets int
	changes, syncers, burst          int
	gap                              time.Duration
	skipFelix, keep                  bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "directory with the built binaries (calico-felix with its dataplane, devetcd)")
	flag.IntVar(&o.local, "local", 1000, "local workload endpoints")
	flag.IntVar(&o.remote, "remote", 10000, "remote workload endpoints")
	flag.IntVar(&o.policies, "policies", 1000, "policies")
	flag.IntVar(&o.netsets, "netsets", 100, "network sets")
	flag.IntVar(&o.changes, "changes", 200, "changes timed from etcd to the kernel (in each series)")
	flag.DurationVar(&o.gap, "gap", 300*time.Millisecond, "pause between changes of the paced series")
	flag.IntVar(&o.syncers, "syncers", 50, "felix syncers for the etcd load test (0: skip)")
	flag.IntVar(&o.burst, "burst", 500, "changes written while the syncers watch")
	flag.BoolVar(&o.skipFelix, "skip-felix", false, "skip the felix measurements")
	flag.BoolVar(&o.keep, "keep", false, "keep the state and log directory")
	flag.Parse()
	if o.bin == "" || os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "scale: run as root with -bin (use scripts/scale.sh)")
		os.Exit(2)
	}
	topo.HandleSignals()
	topo.SweepLeftovers("ccscale")
	err := run(context.Background(), o)
	topo.CloseAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	f, err := topo.New(ctx, topo.Options{Tag: "ccscale", Hosts: 1, Bin: o.bin, Mode: topo.ModeVXLAN, KeepDir: o.keep})
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Printf("state and logs: %s\n", f.Dir)
	}
	shape := calcbench.Shape{Host: f.Host(1).Name, Local: o.local, Remote: o.remote, Policies: o.policies, NetSets: o.netsets}
	cli, err := f.Etcd.Client(10 * time.Second)
	if err != nil {
		return err
	}
	defer cli.Close()
	start := time.Now()
	keys, ifaces, err := loadBenchData(ctx, cli, shape)
	if err != nil {
		return fmt.Errorf("loading the bench data: %w", err)
	}
	fmt.Printf("data set: %d local + %d remote workload endpoints, %d policies, %d network sets: %d keys loaded in %s\n",
		o.local, o.remote, o.policies, o.netsets, keys, time.Since(start).Round(10*time.Millisecond))
	if !o.skipFelix {
		if err := measureFelix(ctx, f, shape, ifaces, o); err != nil {
			return err
		}
	}
	if o.syncers > 0 {
		return measureSyncers(ctx, f, o)
	}
	return nil
}

func measureFelix(ctx context.Context, f *topo.Fabric, shape calcbench.Shape, ifaces []string, o options) error {
	h := f.Host(1)
	if err := plugInterfaces(ctx, h, ifaces); err != nil {
		return fmt.Errorf("creating %d workload interfaces: %w", len(ifaces), err)
	}
	// nft monitor starts before felix: started later, it would first read felix's whole ruleset
	// (seconds) before reporting anything.
	m, err := topo.StartNftMonitor(h.NS)
	if err != nil {
		return err
	}
	defer m.Stop()
	start := time.Now()
	if err := h.LaunchFelix(); err != nil {
		return err
	}
	ready, err := waitReady(ctx, h, start, 10*time.Minute)
	if err != nil {
		return err
	}
	chains, _ := h.Metric(ctx, "felix_dataplane_nft_chains")
	sets, _ := h.Metric(ctx, "felix_dataplane_nft_sets")
	fmt.Printf("felix: ready (dataplane programmed) %s after start; RSS %.1f MiB (peak %.1f MiB); %v chains, %v sets\n",
		ready.Round(10*time.Millisecond), float64(h.Felix.Rss())/(1<<20), float64(h.Felix.PeakRss())/(1<<20), chains, sets)
	return measureLatency(ctx, f, m, shape, o.changes, o.gap)
}

// measureLatency times changes from etcd to the kernel: the first ones right after ready, then
// a paced series (gap between changes: the pipeline's own latency) and a back-to-back series
// (each change written as soon as the previous one is in the kernel: latency under a steady
// stream, including felix's rate limiting).
func measureLatency(ctx context.Context, f *topo.Fabric, m *topo.NftMonitor, shape calcbench.Shape, n int, gap time.Duration) error {
	ds, err := f.Datastore()
	if err != nil {
		return err
	}
	const warm = 6
	cs, err := changes(ctx, ds, shape, 2*n+warm)
	if err != nil {
		return err
	}
	if err := m.Quiet(ctx, time.Second); err != nil {
		return err
	}
	// The first changes right after ready, waiting as long as it takes (up to a minute).
	first, missed, err := latencies(ctx, ds, m, cs[:warm], time.Minute, 0)
	if err != nil {
		return err
	}
	fmt.Printf("first %d changes right after ready (%d never seen): policy %v, endpoint %v\n", warm, missed,
		round(first["policy"]), round(first["endpoint"]))
	for _, series := range []struct {
		name string
		gap  time.Duration
		cs   []change
	}{{fmt.Sprintf("paced, %s apart", gap), gap, cs[warm : warm+n]}, {"back to back", 0, cs[warm+n:]}} {
		lat, missed, err := latencies(ctx, ds, m, series.cs, 5*time.Second, series.gap)
		if err != nil {
			return err
		}
		fmt.Printf("etcd -> kernel latency, %d changes %s (%d never seen):\n", len(series.cs), series.name, missed)
		for _, kind := range []string{"policy", "endpoint", "all"} {
			d := lat[kind]
			fmt.Printf("  %-9s n=%-4d p50 %-9s p99 %-9s max %s\n", kind, len(d), percentile(d, 50).Round(100*time.Microsecond),
				percentile(d, 99).Round(100*time.Microsecond), percentile(d, 100).Round(100*time.Microsecond))
		}
	}
	if rss := f.Host(1).Felix.Rss(); rss > 0 {
		fmt.Printf("felix RSS after the changes: %.1f MiB\n", float64(rss)/(1<<20))
	}
	return nil
}

func measureSyncers(ctx context.Context, f *topo.Fabric, o options) error {
	if h := f.Host(1); h.Felix != nil {
		h.Felix.Stop() // the syncers alone load etcd
	}
	direct, err := runSyncers(ctx, f, "direct", f.Etcd.Endpoints[0], o.syncers, o.burst, nil)
	if err != nil {
		return fmt.Errorf("syncers on etcd: %w", err)
	}
	proxy, endpoint, err := startProxy(ctx, f)
	if err != nil {
		return fmt.Errorf("starting etcd grpc-proxy: %w", err)
	}
	viaProxy, err := runSyncers(ctx, f, "grpc-proxy", endpoint, o.syncers, o.burst, proxy)
	if err != nil {
		return fmt.Errorf("syncers through grpc-proxy: %w", err)
	}
	fmt.Printf("%d felix syncers (felix's prefixes, one connection each), then a burst of %d changes:\n", o.syncers, o.burst)
	fmt.Printf("  %-10s %-8s %-8s | %-8s %-9s %-9s %-9s | %-9s %-9s %-9s %-9s | %s\n", "via", "watchers", "streams",
		"in sync", "etcd CPU", "etcd sent", "proxy CPU", "caught up", "etcd CPU", "etcd sent", "proxy CPU", "etcd RSS")
	for _, r := range []syncerReport{direct, viaProxy} {
		fmt.Printf("  %-10s %-8.0f %-8.0f | %-8s %-9s %-9s %-9s | %-9s %-9s %-9s %-9s | %.0f MiB\n", r.Via, r.Watchers, r.Streams,
			r.InSync.Round(10*time.Millisecond), secs(r.Sync.ServerCPU), mb(r.Sync.SentMB), secs(r.Sync.ProxyCPU),
			r.CaughtUp.Round(10*time.Millisecond), secs(r.BurstUse.ServerCPU), mb(r.BurstUse.SentMB), secs(r.BurstUse.ProxyCPU),
			float64(r.ServerRSS)/(1<<20))
	}
	return nil
}

func secs(v float64) string { return fmt.Sprintf("%.2fs", v) }

func mb(v float64) string { return fmt.Sprintf("%.1fMB", v) }

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

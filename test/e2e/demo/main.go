package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

func main() {
	bin := flag.String("bin", "", "directory with the built binaries (calico*, devetcd)")
	mode := flag.String("mode", "bgp", "routing mode: bgp or vxlan")
	hosts := flag.Int("hosts", 3, "number of hosts")
	keep := flag.Bool("keep-running", false, "wait for Ctrl-C before cleaning up (explore with ip netns exec)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demo: needs root (it creates network namespaces)")
		os.Exit(1)
	}
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "demo: -bin is required (use scripts/demo.sh)")
		os.Exit(2)
	}
	topo.HandleSignals()
	topo.SweepLeftovers("ccdemo")
	d := &demo{out: os.Stdout, start: time.Now(), bin: *bin, mode: topo.Mode(*mode), hosts: *hosts, keep: *keep}
	err := d.run(context.Background())
	topo.CloseAll()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		if d.f != nil {
			fmt.Fprintf(os.Stderr, "logs: %s\n", d.f.LogDir())
		}
		os.Exit(1)
	}
	fmt.Fprintf(d.out, "\nEverything the demo created is gone (namespaces, processes, etcd). Total %s.\n", d.since())
}

type demo struct {
	out   io.Writer
	start time.Time
	bin   string
	mode  topo.Mode
	hosts int
	keep  bool
	f     *topo.Fabric
	wls   []*topo.Workload
}

func (d *demo) since() string { return time.Since(d.start).Round(100 * time.Millisecond).String() }

func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.out, "[%6s] %s\n", d.since(), fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context) error {
	logs, err := os.MkdirTemp("", "calico-demo-")
	if err != nil {
		return err
	}
	d.step("Building the fabric: etcd + %d hosts (%s), state and logs in %s", d.hosts, d.mode, logs)
	d.f, err = topo.New(ctx, topo.Options{Tag: "ccdemo", Hosts: d.hosts, Dir: logs, KeepDir: true, Bin: d.bin, Mode: d.mode,
		FlowLogsFlush: flowFlush})
	if err != nil {
		return err
	}
	if err := d.startHosts(ctx); err != nil {
		return err
	}
	if err := d.addWorkloads(ctx); err != nil {
		return err
	}
	d.printWorkloads()
	if d.mode == topo.ModeBGP {
		d.printBGP(ctx)
	}
	if err := d.connectivity(ctx, "before any policy: the network's profile allows all workload traffic", false); err != nil {
		return err
	}
	if err := d.applyPolicy(ctx); err != nil {
		return err
	}
	if err := d.connectivity(ctx, "with the policy", true); err != nil {
		return err
	}
	if err := d.explainConnections(ctx); err != nil {
		return err
	}
	d.printDaemons()
	d.printLogs()
	if d.keep {
		d.step("Running; press Ctrl-C to clean up. Try: ip netns exec %s birdc -s %s show protocols", d.f.Host(1).NS.Name, d.f.Host(1).BirdSocket())
		select {}
	}
	return nil
}

func (d *demo) startHosts(ctx context.Context) error {
	what := "calico-startup, calico-confd + BIRD, calico-felix"
	if d.mode == topo.ModeVXLAN {
		what = "calico-startup, calico-felix (VXLAN, no BGP)"
	}
	d.step("Starting on every host: %s", what)
	if err := d.f.Start(ctx, topo.StartOptions{Felix: true}); err != nil {
		return err
	}
	d.step("All hosts up")
	return nil
}

// The workloads: a web server and a database on each host.
func (d *demo) addWorkloads(ctx context.Context) error {
	d.step("Creating 2 workloads per host with the calico CNI plugin (ADD)")
	for _, h := range d.f.Hosts {
		for _, role := range []string{"web", "db"} {
			name := fmt.Sprintf("%s-%d", role, h.Index)
			w, err := h.AddWorkload(ctx, name, map[string]string{"role": role})
			if err != nil {
				return err
			}
			// The servers live until the demo exits (their namespaces go with the fabric).
			if _, err := w.NS.Serve(name, 80, 5432); err != nil {
				return err
			}
			d.wls = append(d.wls, w)
		}
	}
	return nil
}

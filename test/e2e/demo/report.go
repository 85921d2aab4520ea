package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

const policyYAML = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web-ingress}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, destination: {ports: [80]}}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: db-ingress}
spec:
  selector: role == 'db'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'web'}, destination: {ports: [5432]}}
`

var ports = []int{80, 5432}

func (d *demo) applyPolicy(ctx context.Context) error {
	d.step("Applying a policy with calicoctl: web accepts TCP 80 from anyone; db accepts TCP 5432 from web only")
	for _, l := range strings.Split(strings.TrimSpace(policyYAML), "\n") {
		fmt.Fprintf(d.out, "           | %s\n", l)
	}
	return d.f.Apply(ctx, policyYAML)
}

// allowed is the demo policy's verdict for a connection to dst on port.
func allowed(withPolicy bool, src, dst *topo.Workload, port int) bool {
	if !withPolicy {
		return true
	}
	if strings.HasPrefix(dst.Name, "web") {
		return port == 80
	}
	return port == 5432 && strings.HasPrefix(src.Name, "web")
}

// probes lists every workload-to-workload connection on both ports, and each workload to the
// outside (NAT outgoing: the outside must see the host's address).
func (d *demo) probes(withPolicy bool) []topo.Probe {
	var out []topo.Probe
	for _, src := range d.wls {
		for _, dst := range d.wls {
			if src == dst {
				continue
			}
			for _, p := range ports {
				out = append(out, topo.Probe{From: src.NS, FromName: src.Name, To: dst.IP(4), ToName: dst.Name, Proto: "tcp", Port: p,
					Want: allowed(withPolicy, src, dst, p)})
			}
		}
		out = append(out, topo.Probe{From: src.NS, FromName: src.Name, To: topo.OutsideAddr, ToName: "outside", Proto: "tcp", Port: 80,
			Want: true, WantClient: src.Host.Addr})
	}
	return out
}

func (d *demo) connectivity(ctx context.Context, title string, withPolicy bool) error {
	srv, err := d.f.Outside.Serve("outside", 80)
	if err != nil {
		return err
	}
	defer srv.Close()
	start := time.Now()
	results, err := topo.WaitProbes(ctx, d.probes(withPolicy), 30*time.Second, time.Second)
	fmt.Fprintf(d.out, "\nConnectivity %s (TCP; checked in %s):\n", title, time.Since(start).Round(100*time.Millisecond))
	d.printMatrix(results)
	if err != nil {
		return fmt.Errorf("connectivity is not what the policy says: %w", err)
	}
	return nil
}

// printMatrix prints one row per source: for each destination workload "80 5432" marks, then
// the outside.
func (d *demo) printMatrix(results []topo.Result) {
	cell := map[string]topo.Result{}
	for _, r := range results {
		cell[fmt.Sprintf("%s>%s:%d", r.FromName, r.ToName, r.Port)] = r
	}
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  from \\ to\t")
	for _, w := range d.wls {
		fmt.Fprintf(tw, "%s\t", w.Name)
	}
	fmt.Fprint(tw, "outside (NAT)\t\n  \t")
	for range d.wls {
		fmt.Fprint(tw, "80 5432\t")
	}
	fmt.Fprint(tw, "80\t\n")
	for _, src := range d.wls {
		fmt.Fprintf(tw, "  %s\t", src.Name)
		for _, dst := range d.wls {
			if src == dst {
				fmt.Fprint(tw, "-   -  \t")
				continue
			}
			fmt.Fprintf(tw, "%s  %s \t", mark(cell[fmt.Sprintf("%s>%s:80", src.Name, dst.Name)]), mark(cell[fmt.Sprintf("%s>%s:5432", src.Name, dst.Name)]))
		}
		out := cell[fmt.Sprintf("%s>outside:80", src.Name)]
		seen := ""
		if out.OK {
			seen = " seen as " + out.Greeting.Client.String()
		}
		fmt.Fprintf(tw, "%s%s\t\n", mark(out), seen)
	}
	tw.Flush()
	fmt.Fprintln(d.out, "  ✓ connected   ✗ denied (timed out)   ! differs from what the policy says")
}

func mark(r topo.Result) string {
	m := "✗"
	if r.OK {
		m = "✓"
	}
	if !r.Matches() {
		m += "!"
	} else {
		m += " "
	}
	return m
}

func (d *demo) printWorkloads() {
	fmt.Fprintln(d.out, "\nWorkloads (WorkloadEndpoints written by the CNI plugin):")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tHOST\tADDRESS\tHOST INTERFACE\tNETNS\t")
	for _, w := range d.wls {
		var ips []string
		for _, a := range w.IPs {
			ips = append(ips, a.String())
		}
		fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\t%s\t%s\t\n", w.Name, w.Host.Name, w.Host.Addr, strings.Join(ips, ","), w.HostIface, w.NS.Name)
	}
	tw.Flush()
}

// printDaemons shows what each daemon last told systemd (READY=1 and STATUS=).
func (d *demo) printDaemons() {
	fmt.Fprintln(d.out, "\nDaemons (their sd_notify READY and STATUS, as systemctl status would show):")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  DAEMON\tREADY\tSTATUS\t")
	for _, h := range d.f.Hosts {
		for _, p := range []*topo.Proc{h.Startup, h.Confd, h.Felix} {
			if p != nil && p.Notify != nil {
				fmt.Fprintf(tw, "  %s\t%v\t%s\t\n", p.Name, p.Notify.Ready(), p.Notify.Status())
			}
		}
	}
	tw.Flush()
}

func (d *demo) printBGP(ctx context.Context) {
	fmt.Fprintln(d.out, "\nBGP sessions (BIRD, configured by calico-confd; node-to-node mesh):")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  HOST\tPROTOCOL\tNEIGHBOR\tSTATE\tSINCE\t")
	for _, h := range d.f.Hosts {
		sessions, err := h.BGPSessions(ctx)
		if err != nil {
			fmt.Fprintf(tw, "  %s\t(error: %v)\t\t\t\t\n", h.Name, err)
			continue
		}
		names := make([]string, 0, len(sessions))
		for n := range sessions {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := sessions[n]
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", h.Name, n, p.NeighborAddress, p.BGPState, p.Since)
		}
	}
	tw.Flush()
}

func (d *demo) printLogs() {
	fmt.Fprintf(d.out, "\nLogs (kept after the demo): %s\n", d.f.LogDir())
	filepath.Walk(d.f.LogDir(), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintf(d.out, "  %s\n", strings.TrimPrefix(path, d.f.LogDir()+"/"))
		}
		return nil
	})
	fmt.Fprintf(d.out, "Configs per host: %s/hosts/<host>/{node,confd,felix,datastore}.toml\n", d.f.Dir)
}

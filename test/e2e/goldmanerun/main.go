package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// goldmaneAddr is where Goldmane listens: the fabric's address, reached by the hosts as they
// reach etcd. The server certificate names it and "goldmane" (the stream client's name).
var goldmaneAddr = net.JoinHostPort(topo.FabricAddr.String(), "7443")

// flush is felix's FlowLogsFlushInterval in this run.
const flush = 5 * time.Second

type options struct {
	bin, goldmane, stream, pki string
	wait                       time.Duration
}

// run is one check: it returns an error when Goldmane did not show what felix sent.
type run struct {
	o   options
	f   *topo.Fabric
	gm  *topo.Proc
	wls map[string]*topo.Workload // by friendly name
	// cleanup undoes what the fabric does not (the stream client's hosts file).
	cleanup []func()
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "directory with our binaries (calico*, devetcd)")
	flag.StringVar(&o.goldmane, "goldmane", "", "Project Calico's goldmane daemon (daemon.Run with its environment), with its subcommand if any")
	flag.StringVar(&o.stream, "stream", "", "Project Calico's goldmane/cmd/stream client")
	flag.StringVar(&o.pki, "pki", "", "directory with ca.crt, server.crt, server.key, client.crt, client.key")
	flag.DurationVar(&o.wait, "wait", 90*time.Second, "how long to wait for the flows at Goldmane")
	flag.Parse()
	if o.bin == "" || o.goldmane == "" || o.stream == "" || o.pki == "" {
		fmt.Fprintln(os.Stderr, "goldmanerun: -bin, -goldmane, -stream and -pki are required (use scripts/goldmane-pc.sh)")
		os.Exit(2)
	}
	topo.HandleSignals()
	topo.SweepLeftovers("ccgm")
	r := &run{o: o, wls: map[string]*topo.Workload{}}
	err := r.run(context.Background())
	topo.CloseAll()
	for _, c := range r.cleanup {
		c()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nFAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("\nPASS: Project Calico's Goldmane showed every expected flow as felix sent it")
}

func (r *run) run(ctx context.Context) error {
	logs, err := os.MkdirTemp("", "calico-goldmane-")
	if err != nil {
		return err
	}
	fmt.Printf("state and logs in %s\n", logs)
	r.f, err = topo.New(ctx, topo.Options{Tag: "ccgm", Hosts: 2, IPv6: true, Dir: logs, KeepDir: true, Bin: r.o.bin})
	if err != nil {
		return err
	}
	if err := r.startGoldmane(ctx); err != nil {
		return err
	}
	for _, h := range r.f.Hosts {
		h.FelixEnv = append(h.FelixEnv, r.felixEnv(h)...)
	}
	if err := r.f.Start(ctx, topo.StartOptions{Felix: true}); err != nil {
		return err
	}
	if err := r.workloads(ctx); err != nil {
		return err
	}
	if err := r.f.Apply(ctx, policies); err != nil {
		return err
	}
	if err := r.traffic(ctx); err != nil {
		return err
	}
	return r.check(ctx)
}

// startGoldmane runs Goldmane in the fabric namespace, configured as its daemon reads its
// environment, and waits until it accepts connections.
func (r *run) startGoldmane(ctx context.Context) error {
	args := append([]string{"env", "PORT=7443", "HEALTH_PORT=18080", "LOG_LEVEL=info",
		"SERVER_CERT_PATH=" + filepath.Join(r.o.pki, "server.crt"), "SERVER_KEY_PATH=" + filepath.Join(r.o.pki, "server.key"),
		"CA_CERT_PATH=" + filepath.Join(r.o.pki, "ca.crt")}, strings.Fields(r.o.goldmane)...)
	r.gm = r.f.NewProc("goldmane", args...)
	if err := r.gm.Start(); err != nil {
		return err
	}
	err := topo.Eventually(ctx, 30*time.Second, 200*time.Millisecond, func() error {
		if !r.gm.Running() {
			return errors.New("goldmane exited: " + r.gm.LogTail(10))
		}
		c, err := r.f.NS.DialContext(ctx, "tcp", goldmaneAddr)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		fmt.Printf("Goldmane listening on %s (mutual TLS), log %s\n", goldmaneAddr, r.gm.LogPath)
	}
	return err
}

// felixEnv: flow logs to a file (to compare) and to Goldmane, felix presenting the client
// certificate and checking Goldmane's against the CA.
func (r *run) felixEnv(h *topo.Host) []string {
	return []string{
		"FELIX_FLOWLOGSGOLDMANESERVER=" + goldmaneAddr,
		"FELIX_TYPHACAFILE=" + filepath.Join(r.o.pki, "ca.crt"),
		"FELIX_TYPHACERTFILE=" + filepath.Join(r.o.pki, "client.crt"),
		"FELIX_TYPHAKEYFILE=" + filepath.Join(r.o.pki, "client.key"),
		"FELIX_FLOWLOGSFILEENABLED=true", "FELIX_FLOWLOGSFILEDIRECTORY=" + filepath.Join(h.Dir, "flowlogs"),
		fmt.Sprintf("FELIX_FLOWLOGSFLUSHINTERVAL=%d", int(flush.Seconds())),
	}
}

// workloads: web on host 1, client and other on host 2, each serving TCP and UDP port 80.
func (r *run) workloads(ctx context.Context) error {
	for _, w := range []struct {
		host       int
		name, role string
	}{{1, "web", "web"}, {2, "client", "client"}, {2, "other", "other"}} {
		wl, err := r.f.Host(w.host).AddWorkload(ctx, w.name, map[string]string{"role": w.role})
		if err != nil {
			return err
		}
		if _, err := wl.NS.Serve(w.name, 80); err != nil {
			return err
		}
		r.wls[w.name] = wl
		fmt.Printf("workload %-6s on host-%d: %v, container %s\n", w.name, w.host, wl.IPs, wl.ContainerID)
	}
	return nil
}

// policies: web's ingress (a namespaced NetworkPolicy for ICMP, a GlobalNetworkPolicy for TCP
// and UDP, a staged deny of UDP from client), client's egress, and host 1's eth0 as a host
// endpoint whose policy denies port 8081 and allows the rest (the workloads reach it from
// host 2's address: the pool's NAT outgoing applies to addresses outside the pools).
const policies = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web-ping, namespace: default}
spec:
  order: 10
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
  - {action: Allow, protocol: ICMPv6, source: {selector: role == 'client'}}
---
apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: staged-deny-udp}
spec:
  order: 50
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Deny, protocol: UDP, source: {selector: role == 'client'}}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web-ingress}
spec:
  order: 100
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Deny, protocol: TCP, source: {selector: role == 'other'}, destination: {ports: [80]}}
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
  - {action: Allow, protocol: UDP, source: {selector: role == 'client'}, destination: {ports: [80]}}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: client-egress}
spec:
  order: 100
  selector: role == 'client'
  types: [Egress]
  egress:
  - {action: Deny, protocol: TCP, destination: {selector: role == 'other', ports: [80]}}
  - {action: Allow}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: host-1-eth0, labels: {role: host}}
spec: {node: host-1, interfaceName: eth0, expectedIPs: [198.18.0.1]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: host-1}
spec:
  order: 100
  selector: role == 'host'
  types: [Ingress, Egress]
  ingress:
  - {action: Deny, protocol: TCP, destination: {ports: [8081]}}
  - {action: Allow}
  egress:
  - {action: Allow}
`

// traffic makes the connections until each has the outcome the policies give it, then once
// more to the outside (whose outcome depends on the pool's NAT, not on policy).
func (r *run) traffic(ctx context.Context) error {
	c, w, o, h1 := r.wls["client"], r.wls["web"], r.wls["other"], r.f.Host(1).Addr
	host, err := r.f.Host(1).NS.Serve("host-1", 8080, 8081)
	if err != nil {
		return err
	}
	defer host.Close()
	probe := func(from, to *topo.Workload, family int, proto string, port int, want bool) topo.Probe {
		return topo.Probe{From: from.NS, FromName: from.Name, To: to.IP(family), ToName: to.Name, Proto: proto, Port: port, Want: want}
	}
	probes := []topo.Probe{
		probe(c, w, 4, "tcp", 80, true), probe(c, w, 4, "udp", 80, true), probe(c, w, 4, "icmp", 0, true),
		probe(o, w, 4, "tcp", 80, false), probe(o, w, 4, "udp", 80, false), probe(o, w, 4, "icmp", 0, false),
		probe(c, o, 4, "tcp", 80, false),
		{From: c.NS, FromName: "client", To: h1, ToName: "host-1", Proto: "tcp", Port: 8080, Want: true},
		{From: c.NS, FromName: "client", To: h1, ToName: "host-1", Proto: "tcp", Port: 8081},
		probe(c, w, 6, "tcp", 80, true), probe(c, w, 6, "icmp", 0, true), probe(o, w, 6, "icmp", 0, false),
	}
	// Once every probe has its outcome, both hosts enforce every policy: run them all once
	// more, so that the allowed ones (which may have passed before a policy was in place) are
	// decided by the policies the flows should name.
	if _, err := topo.WaitProbes(ctx, probes, 60*time.Second, 2*time.Second); err != nil {
		return err
	}
	for _, res := range topo.RunProbes(ctx, probes, 2*time.Second) {
		fmt.Printf("  %-55s ok=%v\n", res.Probe.String(), res.OK)
		if !res.Matches() {
			return fmt.Errorf("%s: ok=%v the second time, want %v", res.Probe, res.OK, res.Want)
		}
	}
	srv, err := r.f.Outside.Serve("outside", 80)
	if err != nil {
		return err
	}
	defer srv.Close()
	out := topo.Probe{From: c.NS, FromName: c.Name, To: topo.OutsideAddr, ToName: "outside", Proto: "tcp", Port: 80}
	fmt.Printf("  %-55s ok=%v\n", out.String(), out.Run(ctx, 2*time.Second).OK)
	return nil
}

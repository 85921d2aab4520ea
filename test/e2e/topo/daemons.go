package topo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/birdctl"
)

// StartOptions choose which daemons Fabric.Start runs.
type StartOptions struct {
	Felix bool // run calico-felix (needs a felix built with the dataplane)
	// Timeout bounds the whole start (default 90 s).
	Timeout time.Duration
}

// Start brings every host up: calico-startup (host 1 first: it creates the pools and cluster
// defaults), then in parallel calico-confd and BIRD (BGP mode) and calico-felix, and waits until
// felix is ready everywhere and, in BGP mode, every mesh session is established.
func (f *Fabric) Start(ctx context.Context, o StartOptions) error {
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := f.Hosts[0].StartStartup(ctx); err != nil {
		return err
	}
	return f.eachHost(func(h *Host) error {
		if h.ProjectCalico {
			return h.startProjectCalico(ctx, f.meshSessions())
		}
		if h.Index != 1 {
			if err := h.StartStartup(ctx); err != nil {
				return err
			}
		}
		if f.Opts.Mode == ModeBGP {
			if err := h.StartBGP(ctx); err != nil {
				return err
			}
		}
		if o.Felix {
			if err := h.StartFelix(ctx); err != nil {
				return err
			}
		}
		if f.Opts.Mode == ModeBGP {
			return h.WaitBGPEstablished(ctx, f.meshSessions())
		}
		return nil
	})
}

// meshSessions is the number of BGP sessions of each host: one per peer and family.
func (f *Fabric) meshSessions() int {
	return (len(f.Hosts) - 1) * len(f.Families())
}

// Families are the IP versions the hosts have: 4 and/or 6.
func (f *Fabric) Families() []int {
	switch {
	case f.Opts.IPv6Only:
		return []int{6}
	case f.Opts.IPv6:
		return []int{4, 6}
	}
	return []int{4}
}

// eachHost runs fn for every host in parallel and returns the first error.
func (f *Fabric) eachHost(fn func(h *Host) error) error {
	errs := make(chan error, len(f.Hosts))
	for _, h := range f.Hosts {
		go func() { errs <- fn(h) }()
	}
	var first error
	for range f.Hosts {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// StartStartup runs calico-startup --run-once (registers the Node, creates pools and cluster
// defaults, allocates the tunnel address), then calico-startup as a daemon.
func (h *Host) StartStartup(ctx context.Context) error {
	args := []string{h.bin("calico-startup"), "--config", h.path("node.toml"), "--datastore-config", h.path("datastore.toml")}
	once := newProc(h.Name+"/startup-once", h.NS, filepath.Join(h.Logs, "startup.log"), h.env(), append(args, "--run-once")...)
	if err := once.Start(); err != nil {
		return err
	}
	if err := once.WaitExit(ctx); err != nil {
		return fmt.Errorf("%s: calico-startup --run-once: %w\n%s", h.Name, err, once.LogTail(2000))
	}
	var err error
	if h.Startup, err = h.daemon("startup", args...); err != nil {
		return err
	}
	return h.Startup.Start()
}

// daemon describes one of the host's daemons: its log is <logs>/<name>.log, its systemd
// notifications go to a socket of the harness; it is stopped on Close.
func (h *Host) daemon(name string, args ...string) (*Proc, error) {
	n, err := listenNotify(h.path(name + ".notify"))
	if err != nil {
		return nil, err
	}
	p := newProc(h.Name+"/"+name, h.NS, filepath.Join(h.Logs, name+".log"), h.env(), args...)
	p.Notify = n
	h.f.undo.push(func() { p.Stop(); n.Close() })
	return p, nil
}

func (h *Host) bin(name string) string { return filepath.Join(h.f.Opts.Bin, name) }

// StartBGP runs calico-confd, waits for its first render and starts BIRD on it.
func (h *Host) StartBGP(ctx context.Context) error {
	var err error
	h.Confd, err = h.daemon("confd", h.bin("calico-confd"), "--config", h.path("confd.toml"), "--datastore-config", h.path("datastore.toml"))
	if err != nil {
		return err
	}
	if err := h.Confd.Start(); err != nil {
		return err
	}
	cfg := filepath.Join(h.path("bird"), "bird.cfg")
	if err := Eventually(ctx, 30*time.Second, 100*time.Millisecond, func() error {
		if !h.Confd.Running() {
			return fmt.Errorf("calico-confd exited: %v\n%s", h.Confd.ExitErr(), h.Confd.LogTail(2000))
		}
		_, err := os.Stat(cfg)
		return err
	}); err != nil {
		return fmt.Errorf("%s: first BIRD config: %w", h.Name, err)
	}
	h.Bird = newProc(h.Name+"/bird", h.NS, filepath.Join(h.Logs, "bird.log"), nil,
		"bird", "-f", "-c", cfg, "-s", h.BirdSocket(), "-P", h.path("bird.pid"))
	h.f.undo.push(func() { h.Bird.Stop() })
	return h.Bird.Start()
}

// privateVarLib wraps a command so that it sees the host's own directory as /var/lib/calico
// (felix writes the workload MTU there): a tmpfs over /var/lib with a bind mount, in the mount
// namespace "ip netns exec" gives each process (its mounts never reach the machine's).
func (h *Host) privateVarLib(args ...string) []string {
	dir := h.path("var-lib-calico")
	os.MkdirAll(dir, 0o755)
	script := `mount -t tmpfs -o size=1m,mode=755 calico-e2e /var/lib && mkdir /var/lib/calico && ` +
		`mount --bind "$0" /var/lib/calico && exec "$@"`
	return append([]string{"sh", "-c", script, dir}, args...)
}

// BGPSessions returns the host's BGP protocols: name -> "<state> <info>" (e.g. "up
// Established").
func (h *Host) BGPSessions(ctx context.Context) (map[string]birdctl.Protocol, error) {
	return bgpSessions(ctx, h.BirdSocket())
}

// bgpSessions returns the BGP protocols of the BIRD listening on socket, by name.
func bgpSessions(ctx context.Context, socket string) (map[string]birdctl.Protocol, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := birdctl.Dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	protos, err := c.Protocols(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]birdctl.Protocol{}
	for _, p := range protos {
		if p.Proto == "BGP" {
			out[p.Name] = p
		}
	}
	return out, nil
}

// WaitBGPEstablished waits until the host has n BGP sessions, all Established.
func (h *Host) WaitBGPEstablished(ctx context.Context, n int) error {
	return Eventually(ctx, 60*time.Second, 250*time.Millisecond, func() error {
		s, err := h.BGPSessions(ctx)
		if err != nil {
			return err
		}
		return checkEstablished(h.Name, s, n)
	})
}

// checkEstablished fails unless there are n sessions, all Established.
func checkEstablished(who string, s map[string]birdctl.Protocol, n int) error {
	var bad []string
	for name, p := range s {
		if p.BGPState != "Established" {
			bad = append(bad, name+"="+p.BGPState)
		}
	}
	sort.Strings(bad)
	if len(s) != n || len(bad) > 0 {
		return fmt.Errorf("%s: %d BGP sessions (want %d), not established: %s", who, len(s), n, strings.Join(bad, " "))
	}
	return nil
}

// StartFelix runs calico-felix and waits until it reports ready.
func (h *Host) StartFelix(ctx context.Context) error {
	if err := h.LaunchFelix(); err != nil {
		return err
	}
	return h.WaitFelixReady(ctx, 60*time.Second)
}

// LaunchFelix starts calico-felix without waiting for it.
func (h *Host) LaunchFelix() error {
	if h.Felix == nil {
		var err error
		if h.Felix, err = h.daemon("felix", h.privateVarLib(h.bin("calico-felix"), "--config", h.path("felix.toml"))...); err != nil {
			return err
		}
		h.Felix.env = append(h.Felix.env, h.FelixEnv...)
	}
	return h.Felix.Start()
}

// FelixReady asks felix's health server whether it is ready.
func (h *Host) FelixReady(ctx context.Context) error {
	if h.Felix == nil || !h.Felix.Running() {
		msg := "not started"
		if h.Felix != nil {
			msg = fmt.Sprintf("exited (%v): %s", h.Felix.ExitErr(), h.Felix.LogTail(1500))
		}
		return fmt.Errorf("%s: calico-felix %s", h.Name, msg)
	}
	code, body, err := h.NS.HTTPGet(ctx, FelixHealthAddr, "/readiness")
	if err != nil {
		return fmt.Errorf("%s: felix readiness: %w", h.Name, err)
	}
	if code != 200 {
		return fmt.Errorf("%s: felix readiness %d: %s", h.Name, code, strings.TrimSpace(body))
	}
	return nil
}

// WaitFelixReady polls the readiness endpoint.
func (h *Host) WaitFelixReady(ctx context.Context, timeout time.Duration) error {
	return Eventually(ctx, timeout, 200*time.Millisecond, func() error { return h.FelixReady(ctx) })
}

// Metrics fetches felix's Prometheus metrics text.
func (h *Host) Metrics(ctx context.Context) (string, error) {
	code, body, err := h.NS.HTTPGet(ctx, FelixMetricsAddr, "/metrics")
	if err != nil {
		return "", err
	}
	if code != 200 {
		return "", fmt.Errorf("metrics: HTTP %d", code)
	}
	return body, nil
}

// BlockEtcd cuts the host off from etcd (a drop rule in a table of our own in the host's
// namespace, beside felix's); UnblockEtcd removes it.
func (h *Host) BlockEtcd(ctx context.Context) error {
	rules := "table inet e2e-partition {\n chain out {\n  type filter hook output priority -400; policy accept;\n" +
		"  tcp dport 2379 drop\n }\n chain in {\n  type filter hook input priority -400; policy accept;\n  tcp sport 2379 drop\n }\n}\n"
	_, err := h.NS.ExecInput(ctx, []byte(rules), nil, "nft", "-f", "-")
	return err
}

// UnblockEtcd undoes BlockEtcd.
func (h *Host) UnblockEtcd(ctx context.Context) error {
	_, err := h.Exec(ctx, "nft", "delete", "table", "inet", "e2e-partition")
	return err
}

// Metric returns the sum of every sample of a felix metric (all label sets).
func (h *Host) Metric(ctx context.Context, name string) (float64, error) {
	text, err := h.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return SumMetric(text, name)
}

// SumMetric adds up the samples of one metric in Prometheus text format.
func SumMetric(text, name string) (float64, error) {
	var sum float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer metric name
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(f[0], &v); err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("no metric %s", name)
	}
	return sum, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// side is one felix under measurement.
type side struct {
	name string
	bin  string
	ours bool
}

// result is what one run measured of one felix.
type result struct {
	ready              time.Duration
	readyHWM, readyRSS int64 // bytes
	lines              int   // nft list ruleset
	readyLoad          float64
	seen, missed       int
	p50, max           time.Duration
	afterHWM, afterRSS int64
	afterLoad          float64
}

func (r result) String() string {
	return fmt.Sprintf("ready %6.2fs peak %6.1f MiB rss %6.1f MiB lines %6d (load %4.1f) | %d changes seen (%d missed) p50 %5.1f ms max %6.1f ms | after: peak %6.1f MiB rss %6.1f MiB (load %4.1f)",
		r.ready.Seconds(), mib(r.readyHWM), mib(r.readyRSS), r.lines, r.readyLoad, r.seen, r.missed,
		ms(r.p50), ms(r.max), mib(r.afterHWM), mib(r.afterRSS), r.afterLoad)
}

func mib(b int64) float64           { return float64(b) / (1 << 20) }
func ms(d time.Duration) float64    { return float64(d.Microseconds()) / 1000 }
func trimNL(b []byte) []byte        { return []byte(strings.TrimSpace(string(b))) }
func numCPU() int                   { return runtime.NumCPU() }
func memGiB() float64               { return float64(procMeminfo("MemTotal")) / (1 << 30) }
func loadavg() float64              { return loadavgField(0) }
func nsName(s string, r int) string { return fmt.Sprintf("fc%d-%s%d", os.Getpid(), s, r) }

// measure runs the felix once: a fresh namespace with the local interfaces and an etcd on a copy
// of the data set, the felix until ready, then the changes.
func (s side) measure(ctx context.Context, o options, ds *dataSet, dir string, run int) (result, error) {
	var res result
	ns, err := topo.NewNetns(ctx, nsName(s.name, run))
	if err != nil {
		return res, err
	}
	defer ns.Delete()
	runDir := filepath.Join(dir, fmt.Sprintf("%s-%d", s.name, run))
	if err := ds.plug(ctx, ns, runDir); err != nil {
		return res, err
	}
	etcd, err := startEtcd(ctx, ns, ds.template, runDir)
	if err != nil {
		return res, err
	}
	defer etcd.Stop()
	felix := topo.NewProc(s.name+"/felix", ns, filepath.Join(runDir, "felix.log"), s.command(o, runDir)...)
	start := time.Now()
	if err := felix.Start(); err != nil {
		return res, err
	}
	defer felix.Stop()
	if err := waitReady(ctx, ns, felix); err != nil {
		return res, fmt.Errorf("%w\n%s", err, felix.LogTail(20))
	}
	res.ready, res.readyHWM, res.readyRSS, res.readyLoad = time.Since(start), felix.PeakRss(), felix.Rss(), loadavg()
	s.heapProfile(ctx, o, ns, "ready", run)
	if res.lines, err = rulesetLines(ctx, ns); err != nil {
		return res, err
	}
	if err := s.change(ctx, o, ds, ns, &res); err != nil {
		return res, err
	}
	res.afterHWM, res.afterRSS, res.afterLoad = felix.PeakRss(), felix.Rss(), loadavg()
	s.heapProfile(ctx, o, ns, "after", run)
	return res, nil
}

// command is the felix's command line: the same settings for both, each in its own terms.
func (s side) command(o options, runDir string) []string {
	env := []string{"env", "FELIX_FELIXHOSTNAME=" + o.host, "FELIX_HEALTHENABLED=true", "FELIX_HEALTHHOST=127.0.0.1",
		"FELIX_HEALTHPORT=9099", "FELIX_IPV6SUPPORT=" + strconv.FormatBool(o.ipv6), "FELIX_INTERFACEPREFIX=" + o.prefix,
		"FELIX_LOGSEVERITYSCREEN=Info"}
	if s.ours {
		env = append(env, "ETCD_ENDPOINTS=http://127.0.0.1:2379", "CALICO_LOG_FORMAT=text")
		if o.profile != "" {
			env = append(env, "FELIX_DEBUGPORT=6060", "FELIX_DEBUGHOST=127.0.0.1")
		}
		empty := filepath.Join(runDir, "felix.toml")
		_ = os.WriteFile(empty, nil, 0o644)
		return append(env, s.bin, "--config", empty)
	}
	return append(env, "DATASTORE_TYPE=etcdv3", "ETCD_ENDPOINTS=http://127.0.0.1:2379",
		"FELIX_DATASTORETYPE=etcdv3", "FELIX_ETCDENDPOINTS=http://127.0.0.1:2379",
		"FELIX_NFTABLESMODE=Enabled", "FELIX_LOGFILEPATH=none", "FELIX_LOGSEVERITYSYS=none",
		"FELIX_USAGEREPORTINGENABLED=false", s.bin)
}

// waitReady polls /readiness until it answers 200 (every 20 ms, up to 10 minutes).
func waitReady(ctx context.Context, ns *topo.Netns, felix *topo.Proc) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if !felix.Running() {
			return fmt.Errorf("felix exited: %v", felix.ExitErr())
		}
		if code, _, err := ns.HTTPGet(ctx, "127.0.0.1:9099", "/readiness"); err == nil && code == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("felix not ready within 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rulesetLines counts the lines of `nft list ruleset` in ns.
func rulesetLines(ctx context.Context, ns *topo.Netns) (int, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, "nft", "list", "ruleset").Output()
	if err != nil {
		return 0, fmt.Errorf("nft list ruleset: %w", err)
	}
	return strings.Count(string(out), "\n"), nil
}

// heapProfile saves our felix's heap profile (after a GC) as <profile>/heap-<what>-<run>.pprof.
func (s side) heapProfile(ctx context.Context, o options, ns *topo.Netns, what string, run int) {
	if !s.ours || o.profile == "" {
		return
	}
	code, body, err := ns.HTTPGet(ctx, "127.0.0.1:6060", "/debug/pprof/heap?gc=1")
	if err != nil || code != 200 {
		fmt.Fprintf(os.Stderr, "felixcompare: heap profile: %d %v\n", code, err)
		return
	}
	path := filepath.Join(o.profile, fmt.Sprintf("heap-%s-%d.pprof", what, run))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "felixcompare:", err)
	}
	s.memStats(ctx, ns, strings.TrimSuffix(path, ".pprof")+".memstats")
}

// memStats saves the runtime's memory statistics (the "# " lines of the text heap profile but
// the pause history): how the RSS divides into heap, stacks and the runtime's own structures.
func (s side) memStats(ctx context.Context, ns *topo.Netns, path string) {
	code, body, err := ns.HTTPGet(ctx, "127.0.0.1:6060", "/debug/pprof/heap?debug=1")
	if err != nil || code != 200 {
		fmt.Fprintf(os.Stderr, "felixcompare: memory statistics: %d %v\n", code, err)
		return
	}
	var stats []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "# Pause") {
			stats = append(stats, l)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(stats, "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "felixcompare:", err)
	}
}

package cni_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"github.com/calico-host/calico-host/pkg/api"
)

// BenchmarkCNIAddDel runs ADD for CNI_BENCH_CONTAINERS containers (default 100) one after another
// through libcni (each a fresh plugin process, as a runtime does), then DEL for each, and reports
// median and p99 latencies. CNI_BENCH_REFERENCE_DIR names directories (separated by ":") that
// each hold another build of the calico and calico-ipam plugins (Project Calico's, an older
// build of ours): each round runs the same ADDs and DELs with each against the same etcd, taking
// turns container by container, and reports theirs too ("ref-", or "ref1-", "ref2-"... with
// several) and the ratios of our medians to theirs. Run it with scripts/bench-cni.sh (or -bench CNIAddDel -benchtime 1x).
func BenchmarkCNIAddDel(b *testing.B) {
	containers := 100
	if s := os.Getenv("CNI_BENCH_CONTAINERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CNI_BENCH_CONTAINERS=%q: want a positive number", s)
		}
		containers = n
	}
	r := newRig(b)
	r.conf["log_level"] = "info"
	// Project Calico's plugin wants the nodename file unless told otherwise, and the Node.
	r.conf["nodename_file_optional"] = true
	r.create(&api.Node{ObjectMeta: api.ObjectMeta{Name: "host-a"}})
	runs := []*benchRun{{name: "", cni: r.cni}}
	dirs := filepath.SplitList(os.Getenv("CNI_BENCH_REFERENCE_DIR"))
	for i, dir := range dirs {
		name := "ref-"
		if len(dirs) > 1 {
			name = fmt.Sprintf("ref%d-", i+1)
		}
		runs = append(runs, &benchRun{name: name, cni: libcni.NewCNIConfigWithCacheDir([]string{dir}, filepath.Join(r.dir, name+"cache"), nil)})
	}
	for n := 0; n < b.N; n++ {
		r.addDelRound(b, runs, n, containers)
	}
	for _, run := range runs {
		report(b, run.name+"add", run.adds)
		report(b, run.name+"del", run.dels)
		if run.name != "" {
			b.ReportMetric(quantile(runs[0].adds, 0.5)/quantile(run.adds, 0.5), run.name+"add-ratio")
			b.ReportMetric(quantile(runs[0].dels, 0.5)/quantile(run.dels, 0.5), run.name+"del-ratio")
		}
	}
}

// benchRun is one set of plugins in BenchmarkCNIAddDel and its latencies.
type benchRun struct {
	name       string // metric prefix
	cni        *libcni.CNIConfig
	adds, dels []time.Duration
}

// addDelRound ADDs containers one after another, then DELs them, recording the latency of each.
// With several sets of plugins it takes turns: container i of each set, then container i+1, so
// that a passing load on the machine falls on every set alike. The namespaces are made before the
// clock starts.
func (r *rig) addDelRound(b *testing.B, runs []*benchRun, round, containers int) {
	b.StopTimer()
	paths := make([][]string, len(runs))
	for k := range runs {
		for range containers {
			paths[k] = append(paths[k], "/var/run/netns/"+r.netns("b"))
		}
	}
	b.StartTimer()
	for i := range containers {
		for k, run := range runs {
			r.cni = run.cni
			id := benchContainer(round, k, i)
			start := time.Now()
			if _, err := r.add("1.0.0", rt(id, paths[k][i])); err != nil {
				b.Fatalf("ADD %s: %v", id, err)
			}
			run.adds = append(run.adds, time.Since(start))
		}
	}
	for i := range containers {
		for k, run := range runs {
			r.cni = run.cni
			id := benchContainer(round, k, i)
			start := time.Now()
			if err := r.del("1.0.0", rt(id, paths[k][i])); err != nil {
				b.Fatalf("DEL %s: %v", id, err)
			}
			run.dels = append(run.dels, time.Since(start))
		}
	}
}

// benchContainer is the ID of container i of a set of plugins in a round: unique in its first 11
// characters (the host veth's name) among the containers that exist together.
func benchContainer(round, set, i int) string { return fmt.Sprintf("b%ds%d-%d", i, set, round) }

func report(b *testing.B, name string, d []time.Duration) {
	b.ReportMetric(quantile(d, 0.5), name+"-p50-ms")
	b.ReportMetric(quantile(d, 0.99), name+"-p99-ms")
	b.ReportMetric(quantile(d, 1.0), name+"-max-ms")
}

// quantile q of latencies, in ms.
func quantile(d []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}

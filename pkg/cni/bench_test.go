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
// median and p99 latencies. With CNI_BENCH_REFERENCE_DIR naming a directory that holds another
// build of the calico and calico-ipam plugins (Project Calico's, say), each round runs the same
// ADDs and DELs with those against the same etcd and reports theirs too (ref-*) and the ratios of
// the medians. Run it with scripts/bench-cni.sh (or -bench CNIAddDel -benchtime 1x).
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
	ours := r.cni
	var ref *libcni.CNIConfig
	if dir := os.Getenv("CNI_BENCH_REFERENCE_DIR"); dir != "" {
		ref = libcni.NewCNIConfigWithCacheDir([]string{dir}, filepath.Join(r.dir, "ref-cache"), nil)
	}
	var adds, dels, refAdds, refDels []time.Duration
	for n := 0; n < b.N; n++ {
		a, d := r.addDelRound(b, ours, fmt.Sprintf("bench-%d", n), containers)
		adds, dels = append(adds, a...), append(dels, d...)
		if ref != nil {
			a, d := r.addDelRound(b, ref, fmt.Sprintf("ref-%d", n), containers)
			refAdds, refDels = append(refAdds, a...), append(refDels, d...)
		}
	}
	report(b, "add", adds)
	report(b, "del", dels)
	if ref != nil {
		report(b, "ref-add", refAdds)
		report(b, "ref-del", refDels)
		b.ReportMetric(quantile(adds, 0.5)/quantile(refAdds, 0.5), "add-ratio")
		b.ReportMetric(quantile(dels, 0.5)/quantile(refDels, 0.5), "del-ratio")
	}
}

// addDelRound ADDs containers one after another with the plugins of cni, then DELs them, and
// returns the latency of each (the namespaces are made before the clock starts).
func (r *rig) addDelRound(b *testing.B, cni *libcni.CNIConfig, prefix string, containers int) (adds, dels []time.Duration) {
	b.StopTimer()
	r.cni = cni
	paths := make([]string, containers)
	for i := range paths {
		paths[i] = "/var/run/netns/" + r.netns("b")
	}
	b.StartTimer()
	for i, p := range paths {
		start := time.Now()
		if _, err := r.add("1.0.0", rt(fmt.Sprintf("%s-%d", prefix, i), p)); err != nil {
			b.Fatalf("ADD %s-%d: %v", prefix, i, err)
		}
		adds = append(adds, time.Since(start))
	}
	for i, p := range paths {
		start := time.Now()
		if err := r.del("1.0.0", rt(fmt.Sprintf("%s-%d", prefix, i), p)); err != nil {
			b.Fatalf("DEL %s-%d: %v", prefix, i, err)
		}
		dels = append(dels, time.Since(start))
	}
	return adds, dels
}

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

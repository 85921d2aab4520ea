package cni_test

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkCNIAddDel runs ADD for 100 containers one after another through libcni (each a fresh
// plugin process, as a runtime does), then DEL for each, and reports median and p99 latencies.
// Run it with scripts/bench-cni.sh (or -bench CNIAddDel -benchtime 1x).
func BenchmarkCNIAddDel(b *testing.B) {
	const containers = 100
	r := newRig(b)
	r.conf["log_level"] = "info"
	var adds, dels []time.Duration
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		paths := make([]string, containers)
		for i := range paths {
			paths[i] = "/var/run/netns/" + r.netns("b")
		}
		b.StartTimer()
		for i, p := range paths {
			start := time.Now()
			if _, err := r.add("1.0.0", rt(fmt.Sprintf("bench-%d-%d", n, i), p)); err != nil {
				b.Fatalf("ADD %d: %v", i, err)
			}
			adds = append(adds, time.Since(start))
		}
		for i, p := range paths {
			start := time.Now()
			if err := r.del("1.0.0", rt(fmt.Sprintf("bench-%d-%d", n, i), p)); err != nil {
				b.Fatalf("DEL %d: %v", i, err)
			}
			dels = append(dels, time.Since(start))
		}
	}
	report(b, "add", adds)
	report(b, "del", dels)
}

func report(b *testing.B, name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(q float64) float64 {
		i := int(q*float64(len(d))+0.5) - 1
		i = max(0, min(i, len(d)-1))
		return float64(d[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), name+"-p50-ms")
	b.ReportMetric(ms(0.99), name+"-p99-ms")
	b.ReportMetric(ms(1.0), name+"-max-ms")
}

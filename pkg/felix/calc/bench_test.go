package calc

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
	"github.com/calico-host/calico-host/pkg/syncer"
)

const benchHost = "bench-host"

type benchSize struct{ local, remote, policies, netsets int }

func (s benchSize) String() string {
	return fmt.Sprintf("local=%d/remote=%d/policies=%d/netsets=%d", s.local, s.remote, s.policies, s.netsets)
}

var benchSizes = []benchSize{{100, 1000, 100, 10}, {1000, 10000, 1000, 100}}

func (s benchSize) shape() calcbench.Shape {
	return calcbench.Shape{Host: benchHost, Local: s.local, Remote: s.remote, Policies: s.policies, NetSets: s.netsets}
}

func loadedGraph(s benchSize) (*Graph, []Update) {
	ups := calcbench.BenchData(benchHost, s.local, s.remote, s.policies, s.netsets)
	g := New(benchHost, zerolog.Nop())
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups})
	return g, g.Flush()
}

// BenchmarkInitialSnapshot: a fresh graph takes a whole datastore and emits everything.
func BenchmarkInitialSnapshot(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.String(), func(b *testing.B) {
			ups := calcbench.BenchData(benchHost, s.local, s.remote, s.policies, s.netsets)
			msg := syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups}
			var out []Update
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				g := New(benchHost, zerolog.Nop())
				g.OnMessage(msg)
				out = g.Flush()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(len(out)), "updates")
			b.ReportMetric(liveHeapMB(func() any { g, o := loadedGraph(s); return []any{g, o} }), "live-MB")
		})
	}
}

// cpuTime is the process's user+system CPU time (all threads, so GC work counts).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeapMB measures the heap that stays live while build's result is held.
func liveHeapMB(build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
}

// BenchmarkLabelChange: one endpoint's role label flips with the state loaded; its cost should
// not grow with the size of the state.
func BenchmarkLabelChange(b *testing.B) {
	for _, s := range benchSizes {
		g, _ := loadedGraph(s)
		for _, c := range []struct {
			name string
			ups  [2]syncer.Update
		}{
			{"local", [2]syncer.Update{s.shape().LocalEndpoint(7, "web"), s.shape().LocalEndpoint(7, "api")}},
			{"remote", [2]syncer.Update{s.shape().RemoteEndpoint(7, "web"), s.shape().RemoteEndpoint(7, "api")}},
		} {
			b.Run(s.String()+"/"+c.name, func(b *testing.B) {
				// Start from the second value, so that every iteration is a change.
				g.OnMessage(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{c.ups[1]}})
				g.Flush()
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					g.OnMessage(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{c.ups[i%2]}})
					if g.Flush() == nil {
						b.Fatal("label change produced no update")
					}
					i++
				}
			})
		}
	}
}

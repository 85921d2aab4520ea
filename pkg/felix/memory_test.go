package felix

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/config"
)

// TestGCPercent: felix's GC target is gcPercent unless GOGC is set in the environment.
func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		want int
	}{
		{"default", "", gcPercent},
		{"GOGC in the environment", "200", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			restore := setGCPercent()
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GOGC %d, want %d", got, tc.want)
			}
			restore()
		})
	}
}

// TestHeapSampling: allocations are sampled for heap profiles only while something can ask for
// one (the pprof server, a SIGUSR1 profile path).
func TestHeapSampling(t *testing.T) {
	if memProfileRateAtStart != defaultMemProfileRate {
		t.Skip("GODEBUG=memprofilerate is set: felix leaves the rate alone")
	}
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want int
	}{
		{"no profiles", config.Config{}, 0},
		{"pprof server", config.Config{DebugPort: 6060}, defaultMemProfileRate},
		{"SIGUSR1 profile path", config.Config{DebugMemoryProfilePath: "/tmp/heap.pprof"}, defaultMemProfileRate},
		{"off again", config.Config{}, 0},
	} {
		setHeapSampling(wantsHeapProfiles(&tc.cfg))
		if runtime.MemProfileRate != tc.want {
			t.Errorf("%s: MemProfileRate %d, want %d", tc.name, runtime.MemProfileRate, tc.want)
		}
	}
}

package felix

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/calico-host/calico-host/pkg/felix/config"
)

// gcPercent is felix's garbage collector target (GOGC) unless GOGC is set in the environment.
// Felix's heap is mostly what it keeps (the calculation graph, the desired ruleset) and it
// allocates little once it runs, so a low target costs little CPU. Measured with
// scripts/felix-compare.sh (calc bench shape: 1,000 local and 10,000 remote endpoints, 1,000
// policies; 3 runs of start, then 60 changes; a loaded 2-core machine), with the live heap
// about 60 MB: at Go's default of 100 the RSS peaked at 140-155 MiB at start (the heap peaks
// while the datastore's snapshot becomes the calculation graph) and grew from 105 to 150 MiB
// over the changes; at 40 (Project Calico's GoGCThreshold default, a setting calico-host does
// not read from the datastore) it peaked at 138-141 MiB; at 25 at 122 MiB, start and changes
// alike (RSS 112 MiB after the changes), ready in 4.3-7.5 s against Project Calico's 29-52 s.
// At 10 the start took twice as long, for 116 MiB. Once calc held its state more compactly (live
// heap about 48 MB at ready), 15 peaked at 88-92 MiB against 94-99 MiB at 25, for a start of
// 4.5-7.3 s against 3.7-4.2 s (runs taking turns, load 9-10; Project Calico's felix takes 28-58 s
// on this machine): a second of start for 6 MiB less at the peak, which is where felix's memory
// is highest.
const gcPercent = 15

// setGCPercent sets GOGC to gcPercent, unless GOGC is set in the environment. It returns the
// function that restores the previous target (for tests).
func setGCPercent() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(old) }
}

// defaultMemProfileRate is Go's runtime.MemProfileRate unless GODEBUG=memprofilerate is set.
const defaultMemProfileRate = 512 * 1024

// setHeapSampling turns the runtime's sampling of allocations for heap profiles on or off,
// unless GODEBUG=memprofilerate chose a rate. Felix turns it off while nothing can ask it for a
// heap profile (no pprof server, no SIGUSR1 profile path): the samples' stack records fill a
// hash table of the runtime (1.4 MB) for the calculation graph's many allocation sites. When
// the datastore's configuration turns profiles on, they show allocations from then on.
func setHeapSampling(on bool) {
	if memProfileRateAtStart != defaultMemProfileRate {
		return
	}
	runtime.MemProfileRate = 0
	if on {
		runtime.MemProfileRate = defaultMemProfileRate
	}
}

// memProfileRateAtStart is the rate before felix changed it (GODEBUG applies it before init).
var memProfileRateAtStart = runtime.MemProfileRate

// wantsHeapProfiles reports whether felix can be asked for a heap profile under c.
func wantsHeapProfiles(c *config.Config) bool {
	return c.DebugPort != 0 || c.DebugMemoryProfilePath != ""
}

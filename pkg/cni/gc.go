package cni

import (
	"os"
	"runtime/debug"
)

// commandMemoryLimit is the heap size at which the garbage collector runs in a plugin command
// (see RunWithoutGC).
const commandMemoryLimit = 256 << 20

// RunWithoutGC turns off the garbage collector for the command a plugin process runs, unless the
// environment sets GOGC or GOMEMLIMIT: a command allocates a few MB and exits, and the one
// collection cycle it used to run cost milliseconds of every ADD. A command that ever grows to
// commandMemoryLimit is collected again.
func RunWithoutGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(commandMemoryLimit)
	debug.SetGCPercent(-1)
}

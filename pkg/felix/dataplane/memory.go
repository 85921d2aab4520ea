package dataplane

import (
	"runtime/debug"
	"time"
)

// bigCommitOps is the size of an nftables transaction after which the dataplane hands the
// memory it used back to the kernel.
//
// A full sync of a big host builds its whole transaction in memory at once: for the calc bench
// shape (1,000 local endpoints, 1,000 policies; 55,000 operations) the netlink messages and the
// planner's state are about 150 MB that are garbage a moment later, while what felix keeps is
// about 70 MB. Go's scavenger returns such a peak to the kernel only over minutes, so the
// process stayed at 2.5-5x its live heap after startup (and after every full resync that
// rewrote the table). Big commits are rare (startup, recovery from errors or drift); partial
// syncs never come near this size and are not slowed down.
const bigCommitOps = 10000

// releaseMemory runs a garbage collection and returns the freed memory to the kernel
// (a few tens of milliseconds for felix's heap).
func (d *Dataplane) releaseMemory() {
	start := time.Now()
	debug.FreeOSMemory()
	d.log.Debug().Dur("duration", time.Since(start)).Msg("Returned the memory of a big commit to the kernel")
}

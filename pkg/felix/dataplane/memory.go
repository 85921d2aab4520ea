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
const bigCommitOps = 5000

// fullSyncGCPercent is the garbage collector's target (GOGC) while a full sync runs. With the
// default 100 the heap of the first sync of a big host peaked at about 4x what felix keeps
// (290 MiB RSS for the calc bench shape); at 50 it peaks at 230 MiB, and the sync takes no
// longer. (At 25 the collector ran so often that the first sync took 2.5 s longer.)
const fullSyncGCPercent = 50

// releaseMemory runs a garbage collection and returns the freed memory to the kernel
// (a few tens of milliseconds for felix's heap).
func (d *Dataplane) releaseMemory() {
	start := time.Now()
	debug.FreeOSMemory()
	d.log.Debug().Dur("duration", time.Since(start)).Msg("Returned the memory of a big commit to the kernel")
}

// tightenGC lowers the garbage collector's target while the full sync about to run builds its
// transaction (see fullSyncGCPercent); the returned function restores it. It changes nothing
// for partial syncs, or when GOGC is already at or below that target (or off).
func (d *Dataplane) tightenGC() (restore func()) {
	if !d.nft.FullSyncPending() {
		return func() {}
	}
	old := debug.SetGCPercent(fullSyncGCPercent)
	if old <= fullSyncGCPercent { // also GOGC=off (-1): leave it off
		debug.SetGCPercent(old)
		return func() {}
	}
	return func() { debug.SetGCPercent(old) }
}

package cni

import (
	"context"
	"time"

	"github.com/calico-host/calico-host/pkg/filelock"
)

// ipamLockTimeout is how long an IPAM request waits for the host-wide lock, as Project Calico.
const ipamLockTimeout = 90 * time.Second

// lockIPAM takes the host-wide IPAM file lock (flock), waiting up to 90 s or until ctx ends.
func lockIPAM(ctx context.Context, lockPath FilePath) (unlock func(), err error) {
	l, err := filelock.Acquire(ctx, string(lockPath), ipamLockTimeout, nil)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

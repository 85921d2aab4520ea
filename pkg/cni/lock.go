package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ipamLockTimeout is how long an IPAM request waits for the host-wide lock, as Project Calico.
const ipamLockTimeout = 90 * time.Second

// lockIPAM takes the host-wide IPAM file lock (flock), waiting up to 90 s or until ctx ends.
func lockIPAM(ctx context.Context, lockPath FilePath) (unlock func(), err error) {
	path := string(lockPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the directory of the IPAM lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the IPAM lock %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ipamLockTimeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the IPAM lock %s: %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}

package topo

import (
	"context"
	"fmt"
	"time"
)

// Eventually calls check every interval until it returns nil, the timeout passes or ctx ends;
// the error then names the last failure.
func Eventually(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// Consistently calls check every interval for the whole duration and fails on the first error.
func Consistently(ctx context.Context, duration, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(duration)
	for {
		if err := check(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

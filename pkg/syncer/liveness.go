package syncer

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// liveness decides, during a watch, whether etcd is still there (see Config.LivenessTimeout).
// Signs of life are watch traffic and answers to probes; the gRPC connection being down for a
// quarter of the timeout, a failed probe, or no sign of life for the whole timeout mean etcd is
// lost. A probe is a serializable count of one key: etcd answers it from the member's own store
// without a raft round trip, and the loop sends one only after half the timeout without traffic.
type liveness struct {
	s         *Syncer
	ctx       context.Context // cancelled when the watch ends
	wg        *sync.WaitGroup
	last      time.Time // the last sign of life
	downSince time.Time // when the connection was first seen down (zero while it is up)
	probing   bool
	probeSent time.Time
	done      chan error // a probe's answer
}

func newLiveness(s *Syncer, ctx context.Context, wg *sync.WaitGroup) liveness {
	return liveness{s: s, ctx: ctx, wg: wg, last: time.Now(), done: make(chan error, 1)}
}

// period is how often check runs.
func (l *liveness) period() time.Duration { return max(l.s.cfg.LivenessTimeout/8, time.Millisecond) }

// alive records a sign of life.
func (l *liveness) alive() { l.last = time.Now() }

// results delivers the answers of probes.
func (l *liveness) results() <-chan error { return l.done }

// answered records a probe's outcome; an error wrapping errUnreachable means etcd is lost.
func (l *liveness) answered(err error) error {
	l.probing = false
	switch {
	case err == nil:
		l.alive()
	case l.last.Before(l.probeSent): // no sign of life since the probe was sent either
		return fmt.Errorf("%w: probe failed: %w", errUnreachable, err)
	}
	return nil
}

// check returns an error wrapping errUnreachable when etcd is lost, and sends a probe when the
// watch has been silent for half the timeout. busy means the loop is not reading the watch (the
// consumer is behind): silence then means nothing, only the connection counts.
func (l *liveness) check(busy bool) error {
	now, timeout := time.Now(), l.s.cfg.LivenessTimeout
	if !l.s.connDown() {
		l.downSince = time.Time{}
	} else if l.downSince.IsZero() {
		l.downSince = now
	} else if down := now.Sub(l.downSince); down >= timeout/4 {
		return fmt.Errorf("connection to etcd down for %s: %w", down.Round(time.Millisecond), errUnreachable)
	}
	if busy {
		l.alive()
		return nil
	}
	switch silent := now.Sub(l.last); {
	case silent > timeout:
		return fmt.Errorf("no answer from etcd for %s: %w", silent.Round(time.Millisecond), errUnreachable)
	case silent >= timeout/2 && !l.probing:
		l.probe()
	}
	return nil
}

// probe asks etcd for a count of one key. It must be answered before the timeout runs out since
// the last sign of life.
func (l *liveness) probe() {
	l.probing, l.probeSent = true, time.Now()
	deadline := l.last.Add(l.s.cfg.LivenessTimeout)
	l.wg.Go(func() {
		ctx, cancel := context.WithDeadline(l.ctx, deadline)
		defer cancel()
		key, _ := prefixRange(l.s.cfg.Prefixes[0])
		_, err := l.s.etcd.Get(ctx, key, clientv3.WithCountOnly(), clientv3.WithSerializable())
		if l.ctx.Err() == nil {
			l.done <- err
		}
	})
}

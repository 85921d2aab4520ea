package syncer

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// catchUp follows a consumer whose snapshot was listed at a rounded revision (see
// Config.ListQuantum) until it has every change up to target, etcd's revision when the list
// started: only then is the syncer InSync, so that a daemon's first render (and READY, and
// calico-confd --onetime) reflects a revision at least as new as the moment it started.
//
// It needs no progress notification (a grpc-proxy never sends one). Per prefix, one keys-only
// read at target tells how many keys are live then and which live keys changed after the list
// (with the revision of their last change). A prefix is caught up once the watch delivered a
// change at or after each of those revisions and the live keys it counts (the list's count,
// plus creations, minus deletions) are as many as at target: changes not yet delivered are
// then only keys created and deleted again, which the consumer never needs. An event after
// target, or a progress notification at or after it, also proves every earlier change arrived.
type catchUp struct {
	target   int64
	prefixes map[string]*prefixCatchUp
}

type prefixCatchUp struct {
	count, want int64            // live keys: the consumer's (as delivered), etcd's at target
	changed     map[string]int64 // live keys changed after the list: the revision of their last change
	done        bool
}

// readCatchUp reads what the consumer of a snapshot listed at rev (counts: keys per prefix)
// needs to reach target.
func (s *Syncer) readCatchUp(ctx context.Context, rev, target int64, counts map[string]int64) (*catchUp, error) {
	c := &catchUp{target: target, prefixes: make(map[string]*prefixCatchUp, len(s.cfg.Prefixes))}
	for _, prefix := range s.cfg.Prefixes {
		resp, err := s.changedSince(ctx, prefix, rev, target)
		if err != nil {
			return nil, fmt.Errorf("reading %s at revision %d: %w", prefix, target, err)
		}
		p := &prefixCatchUp{count: counts[prefix], want: resp.Count, changed: make(map[string]int64, len(resp.Kvs))}
		for _, kv := range resp.Kvs {
			p.changed[string(kv.Key)] = kv.ModRevision
		}
		p.check()
		c.prefixes[prefix] = p
	}
	return c, nil
}

// changedSince reads, at revision target, the keys of prefix changed after rev (keys only) and
// the number of keys under prefix (etcd counts before it filters by revision).
func (s *Syncer) changedSince(ctx context.Context, prefix string, rev, target int64) (*clientv3.GetResponse, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	key, end := prefixRange(prefix)
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(target), clientv3.WithMinModRev(rev + 1),
		clientv3.WithKeysOnly()}
	resp, err := s.etcd.Get(rctx, key, append(opts, clientv3.WithSerializable())...)
	if errors.Is(err, rpctypes.ErrFutureRev) {
		resp, err = s.etcd.Get(rctx, key, opts...)
	}
	return resp, err
}

// observe counts one watch event of prefix.
func (c *catchUp) observe(prefix string, ev *clientv3.Event) {
	if c == nil {
		return
	}
	p := c.prefixes[prefix]
	if p == nil || p.done {
		return
	}
	if ev.Kv.ModRevision > c.target { // events come in revision order: all earlier ones arrived
		p.done = true
		return
	}
	switch {
	case ev.Type == mvccpb.DELETE:
		p.count--
	case ev.Kv.Version == 1:
		p.count++
	}
	key := string(ev.Kv.Key)
	if last, ok := p.changed[key]; ok && ev.Kv.ModRevision >= last {
		delete(p.changed, key)
	}
	p.check()
}

// progress records a progress notification: prefix has every change up to rev.
func (c *catchUp) progress(prefix string, rev int64) {
	if c == nil {
		return
	}
	if p := c.prefixes[prefix]; p != nil && rev >= c.target {
		p.done = true
	}
}

func (p *prefixCatchUp) check() {
	p.done = p.done || (p.count == p.want && len(p.changed) == 0)
}

// caughtUp reports whether every prefix is caught up (true for nil: nothing to catch up).
func (c *catchUp) caughtUp() bool {
	if c == nil {
		return true
	}
	for _, p := range c.prefixes {
		if !p.done {
			return false
		}
	}
	return true
}

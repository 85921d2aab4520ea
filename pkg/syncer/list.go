package syncer

import (
	"context"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// list reads every prefix at revision rev, page by page, and returns the decoded snapshot: every
// key that is not filtered out and decodes to a non-nil value, in key order per prefix.
func (s *Syncer) list(ctx context.Context, rev int64) ([]Update, error) {
	var snap []Update
	for _, p := range s.cfg.Prefixes {
		var err error
		if snap, err = s.listPrefix(ctx, p, rev, snap); err != nil {
			return nil, fmt.Errorf("listing %s at revision %d: %w", p, rev, err)
		}
	}
	return snap, nil
}

// listPrefix appends the decoded keys of one prefix to snap.
func (s *Syncer) listPrefix(ctx context.Context, prefix string, rev int64, snap []Update) ([]Update, error) {
	key, end := prefixRange(prefix)
	for first := true; ; first = false {
		resp, err := s.getPage(ctx, key, end, rev)
		if err != nil {
			return nil, err
		}
		if first {
			snap = slices.Grow(snap, int(resp.Count))
		}
		for _, kv := range resp.Kvs {
			if u, ok := s.decodeKV(kv); ok && u.Value != nil {
				snap = append(snap, u)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return snap, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// getPage reads up to PageSize keys of [key, end) at rev.
func (s *Syncer) getPage(ctx context.Context, key, end string, rev int64) (*clientv3.GetResponse, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return s.etcd.Get(rctx, key, clientv3.WithRange(end), clientv3.WithRev(rev),
		clientv3.WithLimit(s.cfg.PageSize))
}

// decodeKV turns a stored key into an Update. ok is false for filtered keys; a value that fails
// to decode is logged and returned with a nil Value (absent).
func (s *Syncer) decodeKV(kv *mvccpb.KeyValue) (u Update, ok bool) {
	key := string(kv.Key)
	if s.cfg.ignored(key) {
		return Update{}, false
	}
	v, err := s.cfg.Decoder(key, kv.Value, kv.ModRevision)
	if err != nil {
		s.log.Warn().Str("key", key).Int64("revision", kv.ModRevision).Err(err).
			Msg("ignoring bad value in datastore (treated as absent)")
		v = nil
	}
	return Update{Key: key, Value: v, Revision: kv.ModRevision}, true
}

// prefixRange is the [start, end) key range of a prefix ("" means every key).
func prefixRange(prefix string) (start, end string) {
	if prefix == "" {
		return "\x00", "\x00"
	}
	return prefix, clientv3.GetPrefixRangeEnd(prefix)
}

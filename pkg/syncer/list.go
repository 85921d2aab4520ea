package syncer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// page is one list response. Workers decode pages while the next ones are fetched; the snapshot
// is assembled in fetch order.
type page struct {
	prefix  string
	kvs     []*mvccpb.KeyValue
	total   int64 // on a prefix's first page: the number of keys under the prefix
	updates []Update
	err     error
	done    chan struct{} // closed once updates (or err) is set
}

// list reads every prefix at revision rev, page by page, and returns the decoded snapshot: every
// key that is not filtered out and decodes to a non-nil value, in key order per prefix; and the
// number of keys under each prefix (filtered and undecodable ones too). Pages are decoded in
// parallel with fetching (a few pages in flight at most).
func (s *Syncer) list(ctx context.Context, rev int64) ([]Update, map[string]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	workers := runtime.GOMAXPROCS(0)
	todo, ordered := make(chan *page, workers), make(chan *page, workers)
	wg.Go(func() { s.fetchPages(ctx, rev, todo, ordered) })
	for range workers {
		wg.Go(func() {
			for p := range todo {
				s.decodePage(p)
			}
		})
	}
	var snap []Update
	counts := make(map[string]int64, len(s.cfg.Prefixes))
	for p := range ordered {
		<-p.done
		if p.err != nil {
			return nil, nil, p.err
		}
		snap = slices.Grow(snap, int(p.total))
		snap = append(snap, p.updates...)
		counts[p.prefix] += p.total
	}
	return snap, counts, ctx.Err()
}

// fetchPages reads every prefix page by page, queueing each page for decoding and, in order, for
// assembly. A failure ends the stream with an error page.
func (s *Syncer) fetchPages(ctx context.Context, rev int64, todo, ordered chan<- *page) {
	defer close(ordered)
	defer close(todo)
	for _, prefix := range s.cfg.Prefixes {
		key, end := prefixRange(prefix)
		for first := true; ; first = false {
			resp, err := s.getPage(ctx, key, end, rev)
			if err != nil {
				p := &page{err: fmt.Errorf("listing %s at revision %d: %w", prefix, rev, err), done: make(chan struct{})}
				close(p.done)
				sendPage(ctx, ordered, p)
				return
			}
			p := &page{prefix: prefix, kvs: resp.Kvs, done: make(chan struct{})}
			if first {
				p.total = resp.Count
			}
			if !sendPage(ctx, todo, p) || !sendPage(ctx, ordered, p) {
				return
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
}

func sendPage(ctx context.Context, ch chan<- *page, p *page) bool {
	select {
	case ch <- p:
		return true
	case <-ctx.Done():
		return false
	}
}

// decodePage decodes a page's keys, keeping those with a value.
func (s *Syncer) decodePage(p *page) {
	defer close(p.done)
	p.updates = make([]Update, 0, len(p.kvs))
	for _, kv := range p.kvs {
		if u, ok := s.decodeKV(kv); ok && u.Value != nil {
			p.updates = append(p.updates, u)
		}
	}
	p.kvs = nil
}

// getPage reads up to PageSize keys of [key, end) at rev. The read is serializable: pinned to a
// revision, it returns the same keys on every member that has applied rev, and an etcd
// grpc-proxy answers it from its cache when another client read the same page. A member that
// has not applied rev yet refuses it (future revision): the page is then read linearizably,
// which waits until the member caught up.
func (s *Syncer) getPage(ctx context.Context, key, end string, rev int64) (*clientv3.GetResponse, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(s.cfg.PageSize)}
	resp, err := s.etcd.Get(rctx, key, append(opts, clientv3.WithSerializable())...)
	if errors.Is(err, rpctypes.ErrFutureRev) {
		resp, err = s.etcd.Get(rctx, key, opts...)
	}
	return resp, err
}

// listRevision is the revision to list at when etcd is at cur: cur rounded down to a multiple
// of ListQuantum, unless that is not after the consumer's revision (see Config.ListQuantum).
func (s *Syncer) listRevision(cur int64) int64 {
	q := cur - cur%s.cfg.ListQuantum
	if q <= s.rev || q <= 0 {
		return cur
	}
	return q
}

// decodeKV turns a stored key into an Update: the key is parsed here, once. ok is false for
// filtered keys; a key that names no object and a value that fails to decode are logged and
// returned with a nil Value (absent).
func (s *Syncer) decodeKV(kv *mvccpb.KeyValue) (u Update, ok bool) {
	id, err := datastore.ParseKey(string(kv.Key))
	if s.cfg.ignored(id) {
		return Update{}, false
	}
	var v any
	if err == nil {
		v, err = s.cfg.Decoder(id, kv.Value, kv.ModRevision)
	}
	if err != nil {
		s.log.Warn().Str("key", string(kv.Key)).Int64("revision", kv.ModRevision).Err(err).
			Msg("ignoring bad value in datastore (treated as absent)")
		v = nil
	}
	return Update{ID: id, Value: v, Revision: kv.ModRevision}, true
}

// prefixRange is the [start, end) key range of a prefix ("" means every key).
func prefixRange(prefix string) (start, end string) {
	if prefix == "" {
		return "\x00", "\x00"
	}
	return prefix, clientv3.GetPrefixRangeEnd(prefix)
}

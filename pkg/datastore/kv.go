package datastore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KV is one key with its value and revisions.
type KV struct {
	Key            string
	Value          []byte
	ModRevision    int64
	CreateRevision int64
}

// pageSize is the number of keys fetched per paginated list request.
const pageSize = 500

// GetKV reads one key. A missing key returns a NotFound error.
func (c *Client) GetKV(ctx context.Context, key string) (*KV, error) {
	resp, err := c.etcd.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, newErr(NotFound, key)
	}
	kv := resp.Kvs[0]
	return &KV{Key: key, Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}, nil
}

// BatchGet is one read of GetBatch: the key, or with Prefix every key under it.
type BatchGet struct {
	Key    string
	Prefix bool
}

// GetBatch reads keys and prefixes in one request, a read-only transaction: every result is of
// one revision. Each result lists the keys found, in key order (none for a missing key). It does
// not page, so it is for small prefixes (the IP pools, one host's affinities).
func (c *Client) GetBatch(ctx context.Context, gets ...BatchGet) ([][]KV, error) {
	ops := make([]clientv3.Op, len(gets))
	for i, g := range gets {
		var opts []clientv3.OpOption
		if g.Prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		ops[i] = clientv3.OpGet(g.Key, opts...)
	}
	resp, err := c.etcd.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("reading %v: %w", gets, err)
	}
	out := make([][]KV, len(gets))
	for i, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().GetKvs() {
			out[i] = append(out[i], KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision})
		}
	}
	return out, nil
}

// GetKVs reads several keys in one request (GetBatch); a missing key is nil in the result.
func (c *Client) GetKVs(ctx context.Context, keys ...string) ([]*KV, error) {
	gets := make([]BatchGet, len(keys))
	for i, k := range keys {
		gets[i] = BatchGet{Key: k}
	}
	res, err := c.GetBatch(ctx, gets...)
	if err != nil {
		return nil, err
	}
	out := make([]*KV, len(keys))
	for i, kvs := range res {
		if len(kvs) > 0 {
			out[i] = &kvs[0]
		}
	}
	return out, nil
}

// ListKV lists every key under prefix, page by page, all pages pinned to one revision (the
// revision of the first page when rev is 0). It returns the keys and that revision.
func (c *Client) ListKV(ctx context.Context, prefix string, rev int64) ([]KV, int64, error) {
	var out []KV
	end := clientv3.GetPrefixRangeEnd(prefix)
	key := prefix
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.etcd.Get(ctx, key, opts...)
		if err != nil {
			return nil, 0, fmt.Errorf("listing %s: %w", prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			out = append(out, KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// CreateKV writes key only if it does not exist, and returns the new mod revision.
func (c *Client) CreateKV(ctx context.Context, key string, value []byte, opts ...clientv3.OpOption) (int64, error) {
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), opts...)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, newErr(AlreadyExists, key)
	}
	return resp.Header.Revision, nil
}

// UpdateKV writes key only if its mod revision is still modRevision, and returns the new revision.
func (c *Client) UpdateKV(ctx context.Context, key string, value []byte, modRevision int64, opts ...clientv3.OpOption) (int64, error) {
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpPut(key, string(value), opts...)).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("updating %s: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, casFailure(resp, key)
	}
	return resp.Header.Revision, nil
}

// DeleteKV deletes key only if its mod revision is still modRevision.
func (c *Client) DeleteKV(ctx context.Context, key string, modRevision int64) error {
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	if !resp.Succeeded {
		return casFailure(resp, key)
	}
	return nil
}

// casFailure tells a missing key (NotFound) from a changed one (Conflict).
func casFailure(resp *clientv3.TxnResponse, key string) error {
	if len(resp.Responses) > 0 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && r.Count == 0 {
			return newErr(NotFound, key)
		}
	}
	return newErr(Conflict, key)
}

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

// GetKVs reads several keys in one request (a read-only transaction: one revision for all); a
// missing key is nil in the result.
func (c *Client) GetKVs(ctx context.Context, keys ...string) ([]*KV, error) {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k)
	}
	resp, err := c.etcd.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("reading %v: %w", keys, err)
	}
	out := make([]*KV, len(keys))
	for i, r := range resp.Responses {
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			kv := rr.Kvs[0]
			out[i] = &KV{Key: keys[i], Value: kv.Value, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}
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

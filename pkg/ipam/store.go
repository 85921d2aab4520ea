package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// errConflict is a failed compare-and-swap: somebody else wrote one of the keys first.
var errConflict = errors.New("compare-and-swap conflict")

// write is one conditional write of a transaction: value nil deletes the key; rev is the mod
// revision the key must still have (0: the key must not exist).
type write struct {
	key   string
	value []byte
	rev   int64
}

// commit applies writes atomically, each guarded by its revision, and returns the revision the
// written keys now have. A failed guard is errConflict.
func (c *Client) commit(ctx context.Context, ws ...write) (int64, error) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, w := range ws {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(w.key), "=", w.rev))
		if w.value == nil {
			ops = append(ops, clientv3.OpDelete(w.key))
		} else {
			ops = append(ops, clientv3.OpPut(w.key, string(w.value)))
		}
	}
	resp, err := c.ds.Etcd().Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd transaction on %s: %w", ws[0].key, err)
	}
	if !resp.Succeeded {
		return 0, errConflict
	}
	return resp.Header.Revision, nil
}

// blockWrite is the transaction step that stores b (or deletes it when del is set).
func blockWrite(b *block, del bool) (write, error) {
	w := write{key: datastore.BlockKey(b.cidr.String()), rev: b.rev}
	if del {
		return w, nil
	}
	v, err := json.Marshal(b.b)
	if err != nil {
		return w, fmt.Errorf("encoding block %s: %w", b.cidr, err)
	}
	w.value = v
	return w, nil
}

// getBlock reads one block; a missing block is datastore NotFound.
func (c *Client) getBlock(ctx context.Context, cidr netip.Prefix) (*block, error) {
	kv, err := c.ds.GetKV(ctx, datastore.BlockKey(cidr.String()))
	if err != nil {
		return nil, err
	}
	return decodeBlock(cidr, kv)
}

// errCorruptBlock marks a stored block that cannot be used.
var errCorruptBlock = errors.New("corrupt block")

func decodeBlock(cidr netip.Prefix, kv *datastore.KV) (*block, error) {
	var b api.AllocationBlock
	if err := json.Unmarshal(kv.Value, &b); err != nil {
		return nil, fmt.Errorf("decoding block %s: %w: %w", kv.Key, errCorruptBlock, err)
	}
	if err := validBlock(cidr, &b); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorruptBlock, err)
	}
	return &block{cidr: cidr, b: &b, rev: kv.ModRevision}, nil
}

// listBlocks reads every block of a family (4 or 6). Undecodable blocks come back empty and
// unaffine, so that nothing allocates from them or tries to create them again.
func (c *Client) listBlocks(ctx context.Context, fam int) ([]*block, error) {
	prefix := datastore.BlockPrefix + familyName(fam) + "/block/"
	kvs, _, err := c.ds.ListKV(ctx, prefix, 0)
	if err != nil {
		return nil, fmt.Errorf("listing IPv%d blocks: %w", fam, err)
	}
	out := make([]*block, 0, len(kvs))
	for i := range kvs {
		s, ok := datastore.ParseBlockKey(kvs[i].Key)
		if !ok {
			continue
		}
		cidr, err := netip.ParsePrefix(s)
		if err != nil {
			c.log.Warn().Str("key", kvs[i].Key).Msg("skipping block with an invalid CIDR")
			continue
		}
		b, err := decodeBlock(cidr, &kvs[i])
		if err != nil {
			// Keep it as a full, unaffine block: never allocated from, never claimed over.
			c.log.Warn().Err(err).Str("key", kvs[i].Key).Msg("ignoring undecodable block")
			b = &block{cidr: cidr, b: &api.AllocationBlock{}, rev: kvs[i].ModRevision}
		}
		out = append(out, b)
	}
	return out, nil
}

// affinity is a host's claim on a block, with its mod revision (0 = not stored).
type affinity struct {
	host  string
	cidr  netip.Prefix
	state string
	rev   int64
}

func (a *affinity) key() string { return datastore.AffinityKey(a.host, a.cidr.String()) }

func (a *affinity) write(state string) write {
	v, _ := json.Marshal(api.BlockAffinity{State: state})
	return write{key: a.key(), value: v, rev: a.rev}
}

// getAffinity reads a host's affinity to a block; a missing one has rev 0 and no state.
func (c *Client) getAffinity(ctx context.Context, host string, cidr netip.Prefix) (*affinity, error) {
	a := &affinity{host: host, cidr: cidr}
	kv, err := c.ds.GetKV(ctx, a.key())
	if datastore.IsNotFound(err) {
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	var v api.BlockAffinity
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return nil, fmt.Errorf("decoding affinity %s: %w", kv.Key, err)
	}
	a.state, a.rev = v.State, kv.ModRevision
	return a, nil
}

// listAffinities reads the affinities of one host (or of every host when host is "") for a
// family (0 = both).
func (c *Client) listAffinities(ctx context.Context, host string, fam int) ([]*affinity, error) {
	prefix := affinityPrefix(host)
	kvs, _, err := c.ds.ListKV(ctx, prefix, 0)
	if err != nil {
		return nil, fmt.Errorf("listing affinities under %s: %w", prefix, err)
	}
	return c.affinitiesOf(kvs, host, fam), nil
}

// affinityPrefix is the prefix of one host's affinities (of every host's when host is "").
func affinityPrefix(host string) string {
	if host == "" {
		return datastore.HostPrefix
	}
	return datastore.HostPrefix + host + "/"
}

// affinitiesOf decodes the affinities of one host (every host: "") and family (0 = both) among
// kvs; undecodable ones are logged and skipped.
func (c *Client) affinitiesOf(kvs []datastore.KV, host string, fam int) []*affinity {
	var out []*affinity
	for _, kv := range kvs {
		h, s, ok := datastore.ParseAffinityKey(kv.Key)
		if !ok || (host != "" && h != host) {
			continue
		}
		cidr, err := netip.ParsePrefix(s)
		if err != nil || (fam != 0 && familyOf(cidr.Addr()) != fam) {
			continue
		}
		var v api.BlockAffinity
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			c.log.Warn().Err(err).Str("key", kv.Key).Msg("skipping undecodable affinity")
			continue
		}
		out = append(out, &affinity{host: h, cidr: cidr, state: v.State, rev: kv.ModRevision})
	}
	return out
}

// handle is an IPAM handle with its mod revision (0 = not stored).
type handle struct {
	id  string
	h   api.IPAMHandle
	rev int64
}

// getHandle reads a handle; a missing one comes back empty with rev 0.
func (c *Client) getHandle(ctx context.Context, id string) (*handle, error) {
	kv, err := c.ds.GetKV(ctx, datastore.HandleKey(id))
	if datastore.IsNotFound(err) {
		return decodeHandle(id, nil)
	}
	if err != nil {
		return nil, err
	}
	return decodeHandle(id, kv)
}

// decodeHandle is the stored handle id (kv nil: absent, empty with rev 0).
func decodeHandle(id string, kv *datastore.KV) (*handle, error) {
	h := &handle{id: id, h: api.IPAMHandle{Block: map[string]int{}}}
	if kv == nil {
		return h, nil
	}
	if err := json.Unmarshal(kv.Value, &h.h); err != nil {
		return nil, fmt.Errorf("decoding handle %s: %w", kv.Key, err)
	}
	if h.h.Block == nil {
		h.h.Block = map[string]int{}
	}
	h.rev = kv.ModRevision
	return h, nil
}

// adjust changes the handle's count for a block by delta, dropping entries that reach zero.
func (h *handle) adjust(cidr string, delta int) {
	n := h.h.Block[cidr] + delta
	if n <= 0 {
		delete(h.h.Block, cidr)
		return
	}
	h.h.Block[cidr] = n
}

// write is the transaction step that stores the handle, or deletes it once it holds nothing.
func (h *handle) write() write {
	w := write{key: datastore.HandleKey(h.id), rev: h.rev}
	if len(h.h.Block) > 0 {
		w.value, _ = json.Marshal(h.h)
	}
	return w
}

// handleRef is the handle a call records its addresses in, carried from one of its transactions
// to the next so that only the first reads it; after a failed transaction the next reads it again.
type handleRef struct {
	id string
	h  *handle // as stored after the call's last transaction; nil: unknown
}

// newHandleRef is the reference to handle id (nil when id is "": no handle).
func newHandleRef(id string) *handleRef {
	if id == "" {
		return nil
	}
	return &handleRef{id: id}
}

// load returns the handle as stored, reading it unless the last transaction wrote it.
func (r *handleRef) load(ctx context.Context, c *Client) (*handle, error) {
	if r.h != nil {
		return r.h, nil
	}
	h, err := c.getHandle(ctx, r.id)
	if err != nil {
		return nil, err
	}
	r.h = h
	return h, nil
}

// committed records the outcome of a transaction that wrote the loaded handle: on success the
// handle is stored at rev (or deleted, once empty); on failure it must be read again.
func (r *handleRef) committed(rev int64, err error) {
	switch {
	case r == nil:
	case err != nil:
		r.h = nil
	case len(r.h.h.Block) == 0:
		r.h.rev = 0
	default:
		r.h.rev = rev
	}
}

// exists reports whether the handle is stored or will be stored by write().
func (h *handle) stored() bool { return h.rev != 0 }

func familyName(fam int) string {
	if fam == 6 {
		return "ipv6"
	}
	return "ipv4"
}

func familyOf(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return 4
	}
	return 6
}

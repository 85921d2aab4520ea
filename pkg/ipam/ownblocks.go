package ipam

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// The common assignment (a container's addresses, each family's from the host's first block,
// which has room) reads the blocks of every family in one request and writes them with the handle
// in one compare-and-swap transaction, instead of a read and a write per family. Anything else (no
// affine block, not enough room in it, a block gone or changed meanwhile) goes the general way,
// autoAssign, from the start: the in-memory changes are dropped and nothing was written.

// ownBlockTake is one family's share: the host's first block of the family and what it needs.
type ownBlockTake struct {
	fam  int
	num  int
	cidr netip.Prefix
	b    *block
	ords []int
}

// assignFromOwnBlocks tries the common assignment; ok is false when it does not apply (or lost a
// race), with nothing written.
func (c *Client) assignFromOwnBlocks(ctx context.Context, a AutoAssignArgs, view *hostView, use string) (v4, v6 []netip.Prefix, ok bool, err error) {
	takes := ownBlockTakes(a, view, use)
	if takes == nil {
		return nil, nil, false, nil
	}
	if ok, err := c.readOwnBlocks(ctx, takes); !ok || err != nil {
		return nil, nil, false, err
	}
	ws := make([]write, 0, len(takes)+1)
	for _, t := range takes {
		if affinityHost(t.b.b) != a.Hostname {
			return nil, nil, false, nil
		}
		if t.ords = assignN(t.b.b, t.num, a.HandleID, a.Attrs); len(t.ords) < t.num {
			return nil, nil, false, nil
		}
		w, err := blockWrite(t.b, false)
		if err != nil {
			return nil, nil, false, err
		}
		ws = append(ws, w)
	}
	if ok, err := c.commitOwnBlocks(ctx, takes, ws, view.held); !ok || err != nil {
		return nil, nil, false, err
	}
	out := map[int][]netip.Prefix{}
	for _, t := range takes {
		for _, o := range t.ords {
			out[t.fam] = append(out[t.fam], netip.PrefixFrom(ordinalAddr(t.cidr, o), t.cidr.Bits()))
		}
	}
	return out[4], out[6], true, nil
}

// ownBlockTakes picks each requested family's first confirmed affine block in the pools that
// serve it (nil when a family has none: the general way claims or borrows).
func ownBlockTakes(a AutoAssignArgs, view *hostView, use string) []*ownBlockTake {
	var takes []*ownBlockTake
	for _, f := range []struct {
		fam, num int
		pools    []string
	}{{4, a.Num4, a.IPv4Pools}, {6, a.Num6, a.IPv6Pools}} {
		if f.num == 0 {
			continue
		}
		pools, err := selectPools(view, f.fam, f.pools, a.Hostname, use)
		if err != nil {
			return nil
		}
		i := slices.IndexFunc(view.affs, func(af *affinity) bool {
			return familyOf(af.cidr.Addr()) == f.fam && af.state == api.AffinityConfirmed && poolOf(pools, af.cidr.Addr()) != nil
		})
		if i < 0 {
			return nil
		}
		takes = append(takes, &ownBlockTake{fam: f.fam, num: f.num, cidr: view.affs[i].cidr})
	}
	return takes
}

// readOwnBlocks reads the takes' blocks in one request; ok is false when one is missing or
// cannot be decoded.
func (c *Client) readOwnBlocks(ctx context.Context, takes []*ownBlockTake) (bool, error) {
	gets := make([]datastore.BatchGet, len(takes))
	for i, t := range takes {
		gets[i] = datastore.BatchGet{Key: datastore.BlockKey(t.cidr.String())}
	}
	res, err := c.ds.GetBatch(ctx, gets...)
	if err != nil {
		return false, err
	}
	for i, t := range takes {
		kv := first(res[i])
		if kv == nil {
			return false, nil
		}
		if t.b, err = decodeBlock(t.cidr, kv); err != nil {
			return false, nil
		}
	}
	return true, nil
}

// commitOwnBlocks writes the blocks and the handle's new counts in one compare-and-swap
// transaction; ok is false after a conflict.
func (c *Client) commitOwnBlocks(ctx context.Context, takes []*ownBlockTake, ws []write, held *handleRef) (bool, error) {
	if held != nil {
		h, err := held.load(ctx, c)
		if err != nil {
			return false, err
		}
		for _, t := range takes {
			h.adjust(t.cidr.String(), len(t.ords))
		}
		ws = append(ws, h.write())
	}
	rev, err := c.commit(ctx, ws...)
	held.committed(rev, err)
	if errors.Is(err, errConflict) {
		return false, nil
	}
	return err == nil, err
}

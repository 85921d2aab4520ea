package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// cleanupTimeout bounds the release that undoes a failed assignment.
const cleanupTimeout = 30 * time.Second

// ReleaseByHandle releases every address of a handle and deletes the handle. A handle that does
// not exist is not an error.
func (c *Client) ReleaseByHandle(ctx context.Context, handleID string) error {
	return c.ReleaseByHandles(ctx, handleID)
}

// ReleaseByHandles is ReleaseByHandle of several handles, read in one request. Each handle's
// blocks are read in one more and written with the handle's deletion in one compare-and-swap
// transaction; after a conflict (or with a block that cannot be read) the handle is released one
// block at a time.
func (c *Client) ReleaseByHandles(ctx context.Context, handleIDs ...string) error {
	keys := make([]string, len(handleIDs))
	for i, id := range handleIDs {
		keys[i] = datastore.HandleKey(id)
	}
	kvs, err := c.ds.GetKVs(ctx, keys...)
	if err != nil {
		return fmt.Errorf("releasing handles %v: %w", handleIDs, err)
	}
	var errs []error
	for i, id := range handleIDs {
		h, err := decodeHandle(id, kvs[i])
		if err == nil && h.stored() {
			err = c.releaseHandle(ctx, &handleRef{id: id, h: h})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("releasing handle %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// releaseHandle releases a stored handle: all its blocks in one transaction, else block by block.
func (c *Client) releaseHandle(ctx context.Context, held *handleRef) error {
	if done, err := c.releaseInOneCommit(ctx, held); done || err != nil {
		return err
	}
	h, err := held.load(ctx, c)
	if err != nil || !h.stored() {
		return err
	}
	for _, s := range sortedKeys(h.h.Block) {
		cidr, err := netip.ParsePrefix(s)
		if err != nil {
			c.log.Warn().Str("handle", held.id).Str("block", s).Msg("handle names an invalid block CIDR")
		}
		if err := c.releaseHandleInBlock(ctx, held, s, cidr); err != nil {
			return fmt.Errorf("in block %s: %w", s, err)
		}
	}
	return nil
}

// releaseInOneCommit reads the handle's blocks in one request and frees its addresses in all of
// them and deletes the handle in one compare-and-swap transaction; done is false (nothing written,
// the handle to be read again) after a conflict, or when a block name or value cannot be used.
func (c *Client) releaseInOneCommit(ctx context.Context, held *handleRef) (done bool, err error) {
	names := sortedKeys(held.h.h.Block)
	gets := make([]datastore.BatchGet, len(names))
	cidrs := make([]netip.Prefix, len(names))
	for i, s := range names {
		if cidrs[i], err = netip.ParsePrefix(s); err != nil {
			return false, nil
		}
		gets[i] = datastore.BatchGet{Key: datastore.BlockKey(s)}
	}
	res, err := c.ds.GetBatch(ctx, gets...)
	if err != nil {
		return false, err
	}
	var ws []write
	for i, cidr := range cidrs {
		kv := first(res[i])
		if kv == nil {
			continue // the block is gone: nothing to free in it
		}
		b, err := decodeBlock(cidr, kv)
		if err != nil {
			return false, nil
		}
		if len(release(b.b, ordinalsOfHandle(b.b, held.id))) > 0 {
			w, err := blockWrite(b, false)
			if err != nil {
				return false, err
			}
			ws = append(ws, w)
		}
	}
	clear(held.h.h.Block)
	rev, err := c.commit(ctx, append([]write{held.h.write()}, ws...)...)
	held.committed(rev, err)
	if errors.Is(err, errConflict) {
		return false, nil
	}
	return err == nil, err
}

// releaseHandleInBlock frees the handle's addresses in one block and drops the block from the
// handle (deleting the handle once empty) in one transaction.
func (c *Client) releaseHandleInBlock(ctx context.Context, held *handleRef, key string, cidr netip.Prefix) error {
	return c.retry(ctx, "releasing "+held.id, func() error {
		h, err := held.load(ctx, c)
		if err != nil || !h.stored() {
			return err
		}
		var ws []write
		if cidr.IsValid() {
			if ws, err = c.freeHandleInBlock(ctx, cidr, held.id); err != nil {
				return err
			}
		}
		delete(h.h.Block, key)
		rev, err := c.commit(ctx, append([]write{h.write()}, ws...)...)
		held.committed(rev, err)
		return err
	})
}

// freeHandleInBlock is the write that frees a handle's addresses in a block (none when the block
// is gone or holds none of them).
func (c *Client) freeHandleInBlock(ctx context.Context, cidr netip.Prefix, handleID string) ([]write, error) {
	b, err := c.getBlock(ctx, cidr)
	if datastore.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if freed := release(b.b, ordinalsOfHandle(b.b, handleID)); len(freed) == 0 {
		return nil, nil
	}
	bw, err := blockWrite(b, false)
	if err != nil {
		return nil, err
	}
	return []write{bw}, nil
}

// ReleaseIPs releases the given addresses and returns those that were not allocated. The handles
// holding them are decremented in the same transaction as their block.
func (c *Client) ReleaseIPs(ctx context.Context, ips ...netip.Addr) ([]netip.Addr, error) {
	byBlock, unallocated, err := c.groupByBlock(ctx, ips)
	if err != nil {
		return nil, err
	}
	for cidr, addrs := range byBlock {
		notHeld, err := c.releaseInBlock(ctx, cidr, addrs)
		if err != nil {
			return nil, fmt.Errorf("releasing addresses in block %s: %w", cidr, err)
		}
		unallocated = append(unallocated, notHeld...)
	}
	return unallocated, nil
}

// groupByBlock finds the block of each address: from its pool's block size, or, for addresses
// outside every pool, from the stored blocks. Addresses in no block are returned separately.
func (c *Client) groupByBlock(ctx context.Context, ips []netip.Addr) (map[netip.Prefix][]netip.Addr, []netip.Addr, error) {
	pools, err := c.enabledPools(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	byBlock := map[netip.Prefix][]netip.Addr{}
	var none []netip.Addr
	listed := map[int][]*block{}
	for _, ip := range ips {
		ip = ip.Unmap()
		if p := poolOf(pools, ip); p != nil {
			byBlock[p.blockFor(ip)] = append(byBlock[p.blockFor(ip)], ip)
			continue
		}
		fam := familyOf(ip)
		if _, ok := listed[fam]; !ok {
			if listed[fam], err = c.listBlocks(ctx, fam); err != nil {
				return nil, nil, err
			}
		}
		if b := blockContaining(listed[fam], ip); b != nil {
			byBlock[b.cidr] = append(byBlock[b.cidr], ip)
		} else {
			none = append(none, ip)
		}
	}
	return byBlock, none, nil
}

func blockContaining(blocks []*block, ip netip.Addr) *block {
	for _, b := range blocks {
		if b.cidr.Contains(ip) {
			return b
		}
	}
	return nil
}

// releaseInBlock frees addresses of one block and decrements their handles, atomically.
func (c *Client) releaseInBlock(ctx context.Context, cidr netip.Prefix, addrs []netip.Addr) ([]netip.Addr, error) {
	var notHeld []netip.Addr
	err := c.retry(ctx, "releasing in "+cidr.String(), func() error {
		notHeld = nil
		b, err := c.getBlock(ctx, cidr)
		if datastore.IsNotFound(err) {
			notHeld = addrs
			return nil
		}
		if err != nil {
			return err
		}
		var ords []int
		for _, a := range addrs {
			o, _ := addrOrdinal(cidr, a)
			if b.b.Allocations[o] == nil {
				notHeld = append(notHeld, a)
				continue
			}
			ords = append(ords, o)
		}
		if len(ords) == 0 {
			return nil
		}
		counts := release(b.b, ords)
		bw, err := blockWrite(b, false)
		if err != nil {
			return err
		}
		ws := []write{bw}
		for id, n := range counts {
			if id == "" {
				continue
			}
			h, err := c.getHandle(ctx, id)
			if err != nil {
				return err
			}
			if h.stored() {
				h.adjust(cidr.String(), -n)
				ws = append(ws, h.write())
			}
		}
		_, err = c.commit(ctx, ws...)
		return err
	})
	return notHeld, err
}

// ReleaseHostAffinities gives up the host's claim on all its blocks: empty blocks are deleted,
// blocks still in use lose their affinity (or, with mustBeEmpty, are kept as they are).
func (c *Client) ReleaseHostAffinities(ctx context.Context, host string, mustBeEmpty bool) error {
	_, err := c.releaseHostAffinities(ctx, host, mustBeEmpty)
	return err
}

// releaseHostAffinities is ReleaseHostAffinities returning what became of each block.
func (c *Client) releaseHostAffinities(ctx context.Context, host string, mustBeEmpty bool) (map[netip.Prefix]affinityOutcome, error) {
	affs, err := c.listAffinities(ctx, host, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[netip.Prefix]affinityOutcome, len(affs))
	for _, af := range affs {
		o, err := c.releaseAffinity(ctx, af, mustBeEmpty)
		if err != nil {
			return out, fmt.Errorf("releasing affinity of %s for %s: %w", host, af.cidr, err)
		}
		out[af.cidr] = o
	}
	return out, nil
}

// affinityOutcome is what releasing one affinity did to its block.
type affinityOutcome int

const (
	affinityGone   affinityOutcome = iota // only the affinity was removed (no block of this host)
	blockDeleted                          // the host's empty block was deleted with it
	blockUnaffined                        // the host's block is in use: kept without affinity
	blockKept                             // mustBeEmpty and the block is in use: nothing changed
)

// releaseAffinity marks the affinity pendingDeletion, then deletes or unaffines the block and
// deletes the affinity in one transaction. A block that cannot be decoded is left alone (only
// the affinity goes).
func (c *Client) releaseAffinity(ctx context.Context, af *affinity, mustBeEmpty bool) (affinityOutcome, error) {
	var outcome affinityOutcome
	err := c.retry(ctx, "releasing affinity", func() error {
		outcome = affinityGone
		cur, err := c.getAffinity(ctx, af.host, af.cidr)
		if err != nil || cur.rev == 0 {
			return err
		}
		b, err := c.getBlock(ctx, af.cidr)
		if errors.Is(err, errCorruptBlock) {
			c.log.Warn().Err(err).Str("block", af.cidr.String()).Msg("releasing the affinity of an undecodable block; the block is left as it is")
			b, err = nil, nil
		}
		if err != nil && !datastore.IsNotFound(err) {
			return err
		}
		ours := b != nil && affinityHost(b.b) == af.host
		if ours && mustBeEmpty && !isEmpty(b.b) {
			outcome = blockKept
			if cur.state == api.AffinityPendingDeletion { // our own earlier attempt: undo it
				_, err = c.commit(ctx, cur.write(api.AffinityConfirmed))
			}
			return err
		}
		if cur.state != api.AffinityPendingDeletion {
			if cur.rev, err = c.commit(ctx, cur.write(api.AffinityPendingDeletion)); err != nil {
				return err
			}
		}
		ws := []write{{key: cur.key(), rev: cur.rev}}
		if ours {
			bw, o, err := dropAffinity(b)
			if err != nil {
				return err
			}
			ws, outcome = append(ws, bw), o
		}
		_, err = c.commit(ctx, ws...)
		return err
	})
	return outcome, err
}

// dropAffinity is the write that removes a block's affinity: an empty block is deleted, a block
// in use is kept without affinity.
func dropAffinity(b *block) (write, affinityOutcome, error) {
	empty := isEmpty(b.b)
	b.b.Affinity, b.b.AffinityClaimTime = nil, ""
	bw, err := blockWrite(b, empty)
	if empty {
		return bw, blockDeleted, err
	}
	return bw, blockUnaffined, err
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

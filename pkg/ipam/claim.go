package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// errClaimConflict: the block exists and belongs to another host.
var errClaimConflict = errors.New("block is claimed by another host")

// errNoFreeBlock: every block of the pools exists and none of them is ours with free space.
var errNoFreeBlock = errors.New("no unclaimed block left in the pools")

// claim makes host the owner of block cidr in Project Calico's order: write the affinity as
// pending, create the block with the host's affinity (compare-and-swap), confirm the affinity.
// When the block already exists with our affinity it is adopted. It returns errConflict when a
// concurrent writer got in first (the caller retries) and errClaimConflict when the block is
// someone else's.
func (c *Client) claim(ctx context.Context, host string, cidr netip.Prefix) (*block, error) {
	aff, err := c.getAffinity(ctx, host, cidr)
	if err != nil {
		return nil, err
	}
	if aff.state != api.AffinityConfirmed && aff.state != api.AffinityPending {
		rev, err := c.commit(ctx, aff.write(api.AffinityPending))
		if err != nil {
			return nil, err
		}
		aff.state, aff.rev = api.AffinityPending, rev
	}
	b, err := c.getBlock(ctx, cidr)
	switch {
	case datastore.IsNotFound(err):
		b = &block{cidr: cidr, b: newBlock(cidr, host, c.now())}
	case err != nil:
		return nil, err
	case affinityHost(b.b) != host:
		if aff.state == api.AffinityPending {
			if _, err := c.commit(ctx, write{key: aff.key(), rev: aff.rev}); err != nil && !errors.Is(err, errConflict) {
				return nil, fmt.Errorf("withdrawing pending affinity for %s: %w", cidr, err)
			}
		}
		return nil, fmt.Errorf("block %s: %w", cidr, errClaimConflict)
	}
	if b.rev != 0 && aff.state == api.AffinityConfirmed {
		return b, nil
	}
	ws := []write{aff.write(api.AffinityConfirmed)}
	if b.rev == 0 {
		bw, err := blockWrite(b, false)
		if err != nil {
			return nil, err
		}
		ws = append(ws, bw)
	}
	rev, err := c.commit(ctx, ws...)
	if err != nil {
		return nil, err
	}
	if b.rev == 0 {
		b.rev = rev
		c.log.Info().Str("host", host).Str("block", cidr.String()).Msg("claimed IPAM block")
	}
	return b, nil
}

// claimNew finds a block the host can use (a block that does not exist yet, or one of its own
// with free space that a concurrent request just claimed) and claims it.
func (c *Client) claimNew(ctx context.Context, host string, pools []*pool, fam int) (*block, bool, error) {
	var out *block
	var created bool
	err := c.retry(ctx, "claiming a block", func() error {
		cidr, exists, err := c.findUsableBlock(ctx, host, pools, fam)
		if err != nil {
			return err
		}
		b, err := c.claim(ctx, host, cidr)
		if errors.Is(err, errClaimConflict) {
			return errConflict // taken under our feet: look again
		}
		out, created = b, !exists
		return err
	})
	return out, created, err
}

// findUsableBlock walks each pool's blocks from the host's pseudo-random start and returns the
// first block that does not exist yet, or an existing block of this host with free space.
func (c *Client) findUsableBlock(ctx context.Context, host string, pools []*pool, fam int) (netip.Prefix, bool, error) {
	blocks, err := c.listBlocks(ctx, fam)
	if err != nil {
		return netip.Prefix{}, false, err
	}
	existing := make(map[netip.Prefix]*block, len(blocks))
	for _, b := range blocks {
		existing[b.cidr] = b
	}
	for _, p := range pools {
		var inPool []*block
		for _, b := range blocks {
			if p.cidr.Overlaps(b.cidr) {
				inPool = append(inPool, b)
			}
		}
		w := newBlockWalk(p, host)
		for step := 0; step <= len(inPool); step++ {
			cidr, ok := w.Next()
			if !ok {
				break
			}
			b, found := existing[cidr]
			if found && affinityHost(b.b) == host && freeCount(b.b) > 0 {
				return cidr, true, nil
			}
			if !found && !overlapsAny(cidr, inPool) {
				return cidr, false, nil
			}
		}
	}
	return netip.Prefix{}, false, errNoFreeBlock
}

// overlapsAny reports whether cidr overlaps one of the blocks (blocks of another size, left over
// from an older block size of the pool).
func overlapsAny(cidr netip.Prefix, blocks []*block) bool {
	for _, b := range blocks {
		if b.cidr.Overlaps(cidr) {
			return true
		}
	}
	return false
}
